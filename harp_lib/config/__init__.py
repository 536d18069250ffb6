"""``params.yaml`` -> typed configuration, the seven named setups, and the backend registry.

``params.yaml`` holds every knob.  Its ``profile`` key picks an overlay from ``profiles``
(``mini`` default, ``ci``, ``paper``) which is deep-merged over the base sections, so
``dvc exp run -S profile=paper`` switches everything at once.

>>> SETUPS["A5"].tools
('time', 'keyword', 'label', 'text_emb', 'audio_emb', 'domain_emb')
>>> SETUPS["A4"].strip_domain, SETUPS["A4"].attach_audio
(True, True)
"""
from __future__ import annotations

import copy
from collections.abc import Mapping as _AbcMapping
import difflib
import importlib
import inspect
import os
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import (Any, Callable, Iterator, Mapping, Optional, Sequence, Union, get_args, get_origin,
                    get_type_hints)

__all__ = ["Setup", "SETUPS", "SETUP_ORDER", "TOOLS", "Config", "ConfigError", "Params", "load_config",
           "validate_params", "parse_override", "positive_int", "schema_markdown", "schema_keys", "deep_merge", "register", "backend_modules",
           "get_backend", "create_backend", "check_backend_options", "list_backends", "BackendError",
           "BackendOptionError", "repo_root"]

#: Tools a plan set may call, in the order the planner prompt lists them.
TOOLS: tuple[str, ...] = ("time", "keyword", "label", "text_emb", "audio_emb", "domain_emb")


@dataclass(frozen=True)
class Setup:
    """A named retrieval x evidence configuration (one row of Table II).

    Derived fields replace the reference code's practice of inferring behaviour from file
    names: ``tools`` (what the planner may call), ``attach_audio`` (set clips are sent),
    ``strip_domain`` (text and labels hidden from the answerer), ``oracle`` (plan from ground
    truth) and ``skip_faithful`` (rationale = factual only, as the paper does for audio-only).
    """
    name: str
    retrieval: str      # keyword | vector | hybrid | oracle
    evidence: str       # metadata | audio | multimodal
    slug: str           # the reference code's name for it

    @property
    def tools(self) -> tuple[str, ...]:
        return {
            "keyword": ("time", "keyword", "label"),
            "vector": ("text_emb", "audio_emb", "domain_emb"),
            "hybrid": TOOLS,
            "oracle": ("time",),
        }[self.retrieval]

    @property
    def oracle(self) -> bool:
        return self.retrieval == "oracle"

    @property
    def attach_audio(self) -> bool:
        return self.evidence in ("audio", "multimodal")

    @property
    def show_metadata(self) -> bool:
        return self.evidence in ("metadata", "multimodal")

    @property
    def strip_domain(self) -> bool:
        return self.evidence == "audio"

    @property
    def skip_faithful(self) -> bool:
        return self.evidence == "audio"

    @property
    def answer_row(self) -> str:
        return self.name

    @property
    def rationale_row(self) -> str:
        return "R" + self.name[1:]

    def describe(self) -> str:
        return f"{self.name}: {self.retrieval} retrieval + {self.evidence} evidence"


SETUPS: dict[str, Setup] = {
    "A1": Setup("A1", "keyword", "metadata", "text"),
    "A2": Setup("A2", "vector", "metadata", "embed"),
    "A3": Setup("A3", "hybrid", "metadata", "hybrid"),
    "A4": Setup("A4", "hybrid", "audio", "hybrid_audio"),
    "A5": Setup("A5", "hybrid", "multimodal", "hybrid_all"),
    "A6": Setup("A6", "oracle", "audio", "oracle_audio"),
    "A7": Setup("A7", "oracle", "multimodal", "oracle_all"),
}
SETUP_ORDER: tuple[str, ...] = tuple(SETUPS)


def get_setup(name: str) -> Setup:
    """Look a setup up by row name (``A5``), rationale row (``R5``) or slug (``hybrid_all``)."""
    key = name.strip()
    if key.upper() in SETUPS:
        return SETUPS[key.upper()]
    if key.upper().startswith("R") and "A" + key[1:] in SETUPS:
        return SETUPS["A" + key[1:]]
    for s in SETUPS.values():
        if s.slug == key:
            return s
    raise UnknownSetupError(f"unknown setup {name!r}; choose one of {', '.join(SETUPS)} "
                            f"({', '.join(s.slug for s in SETUPS.values())})")


# ---------------------------------------------------------------------------------------
# params.yaml
# ---------------------------------------------------------------------------------------
def repo_root() -> Path:
    """The folder holding params.yaml: $HARP_ROOT, else the nearest parent of the cwd."""
    env = os.environ.get("HARP_ROOT")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for p in (here, *here.parents):
        if (p / "params.yaml").exists():
            return p
    return Path(__file__).resolve().parents[2]


def deep_merge(base: Mapping, over: Mapping) -> dict:
    """Recursively merge ``over`` into a copy of ``base`` (lists and scalars replace).

    >>> deep_merge({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}})
    {'a': {'b': 1, 'c': 3}}
    """
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


class ConfigError(ValueError):
    """params.yaml (or a notebook parameter / CLI override) has a missing, unknown or bad value.

    The message names the dotted key, the bad value and what is allowed.
    """


class UnknownSetupError(ConfigError, KeyError):
    """A setup name that is none of A1..A7 (or R1..R7 / the reference slugs)."""

    def __str__(self) -> str:            # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


# ---------------------------------------------------------------------------------------
# The typed schema: one frozen dataclass per params.yaml section.  Fields carry no defaults:
# every value comes from params.yaml.  ``rule(...)`` states the allowed range / choices.
# ---------------------------------------------------------------------------------------
def rule(*, ge: Optional[float] = None, gt: Optional[float] = None, le: Optional[float] = None,
         choices: Optional[tuple] = None, each: Optional[tuple] = None, keys_of: Optional[str] = None,
         doc: str = "") -> Any:
    """Field metadata: ``ge``/``gt``/``le`` bounds, ``choices`` (value), ``each`` (list items),
    ``keys_of`` (a dict keyed by every entry of that top-level list, e.g. ``domains``)."""
    return field(metadata={"ge": ge, "gt": gt, "le": le, "choices": choices, "each": each,
                           "keys_of": keys_of, "doc": doc})


class Section(_AbcMapping):
    """Base of the section dataclasses: attribute access, and read-only mapping access
    (``sec["key"]``, ``dict(sec)``) for code that still treats a section as a dict."""

    def __getitem__(self, key: str) -> Any:
        if key in self.__dataclass_fields__:  # type: ignore[attr-defined]
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.__dataclass_fields__)  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self.__dataclass_fields__)  # type: ignore[attr-defined]


DOMAINS: tuple[str, ...] = ("emotion", "clinical", "song")
Num = Union[int, float]


@dataclass(frozen=True, eq=False)
class PathsParams(Section):
    data: str
    benchmark: str
    extract: str
    index: str
    predictions: str
    judgements: str
    scores: str
    raw: str
    results: str


@dataclass(frozen=True, eq=False)
class BenchmarkEmotionParams(Section):
    trend_min_delta: float = rule(ge=0)
    flat_max_delta: float = rule(ge=0)
    comparison_min_spread: float = rule(ge=0)
    locate_max_side_sec: float = rule(ge=0)
    event_max_gap_sec: float = rule(ge=0)
    cluster_min_events: int = rule(ge=1)
    cluster_max_span_sec: float = rule(gt=0)
    cluster_max_gap_sec: float = rule(ge=0)
    cluster_pad_sec: float = rule(ge=0)
    sentences_per_half: int = rule(ge=1)
    flat_every: int = rule(ge=1)


@dataclass(frozen=True, eq=False)
class BenchmarkParams(Section):
    source: str = rule(choices=("synth", "corpora"))
    profile: str = rule(choices=("ci", "mini", "full"))
    seed: int = rule(ge=0)
    crossfade_sec: float = rule(ge=0)
    snippet_sec: float = rule(gt=0)
    tie_delta: float = rule(ge=0)
    cache_dir: str = rule()
    time_round_sec: float = rule(gt=0)
    noise_floor_db: float = rule(le=0)
    emotion: BenchmarkEmotionParams = rule()
    sizes: dict[str, dict[str, Any]] = rule()   # generator sizes per benchmark profile (synth/core.py)


BackendName = Optional[str]


@dataclass(frozen=True, eq=False)
class ExtractBackendsParams(Section):
    """One backend name, or a per-domain mapping of names (``null``: none for that domain)."""
    vad: Union[str, dict[str, str]]
    diarization: Union[str, dict[str, str]]
    song_boundaries: Union[str, dict[str, str]]
    asr: Union[str, None, dict[str, Optional[str]]]           # null: no transcript
    text_emb: Union[str, None, dict[str, Optional[str]]]      # null: no text space
    audio_emb: Union[str, None, dict[str, Optional[str]]]
    domain_emb: Union[str, None, dict[str, Optional[str]]]
    labelers: Union[list[str], dict[str, Optional[list[str]]]]
    overlap: Union[str, None, dict[str, Optional[str]]]     # null: one speaker at a time (extract/overlap.py)


@dataclass(frozen=True, eq=False)
class ExtractMetricsParams(Section):
    frame_sec: float = rule(gt=0)
    der_collar: float = rule(ge=0)
    der_skip_overlap: bool = rule()
    boundary_tol_sec: float = rule(ge=0)


@dataclass(frozen=True, eq=False)
class ExtractSoundEventsParams(Section):
    """The optional YAMNet label source of every domain (harp_lib/extract/sound_events.py)."""
    backend: str = rule(choices=("none", "yamnet"))
    labels: dict[str, list[str]] = rule()
    threshold: float = rule(gt=0, le=1)
    merge_gap_sec: float = rule(ge=0)


@dataclass(frozen=True, eq=False)
class ExtractParams(Section):
    sample_rate: int = rule(gt=0)
    max_seg_sec: dict[str, float] = rule(keys_of="domains")
    min_turn_sec: float = rule(ge=0)
    min_song_sec: float = rule(ge=0)
    fill_gaps_sec: dict[str, float] = rule(keys_of="domains")
    workers: int = rule(ge=1)
    segmenter: dict[str, str] = rule(keys_of="domains", each=("diarization", "song_boundaries"))
    backends: ExtractBackendsParams = rule()
    # constructor options per backend name; checked against the backend's signature when it is
    # built (a misspelled option is an error naming the option and the backend)
    options: dict[str, dict[str, Any]] = rule()
    metrics: ExtractMetricsParams = rule()
    sound_events: ExtractSoundEventsParams = rule()


@dataclass(frozen=True, eq=False)
class AgentParams(Section):
    planner: str = rule(choices=("rule", "llm"))
    answerer: str = rule(choices=("rule", "llm"))
    top_k: int = rule(ge=1)
    vector_hits: int = rule(ge=1)
    keyword_hits: int = rule(ge=1)
    point_window_sec: float = rule(ge=0)
    max_clip_sec: float = rule(gt=0)
    clip_sample_rate: int = rule(gt=0)
    attach_references_in_metadata_setups: bool = rule()
    max_sets: int = rule(ge=1)
    oracle_top_k: Optional[int] = rule(ge=1)
    empty_plan_fallback: str = rule()
    plan_max_tokens: int = rule(ge=1)
    answer_max_tokens: int = rule(ge=1)
    trend_threshold: float = rule(ge=0)
    locate_min_share: float = rule(ge=0, le=1)
    hear_with_labelers: bool = rule()
    reference_baseline_segments: int = rule(ge=1)
    workers: int = rule(ge=1)
    hearing_cache: Optional[str] = rule()


@dataclass(frozen=True, eq=False)
class LLMParams(Section):
    backend: str = rule()                # a registered ``llm`` backend (checked when built)
    base_url: str = rule()
    model: str = rule()
    temperature: float = rule(ge=0)
    max_tokens: int = rule(ge=1)
    timeout_sec: float = rule(gt=0)
    max_retries: int = rule(ge=0)
    max_concurrency: int = rule(ge=1)
    backoff_sec: float = rule(ge=0)
    schema_mode: str = rule(choices=("both", "response_format", "guided_json"))
    cache_dir: str = rule()
    api_key_env: str = rule()


@dataclass(frozen=True, eq=False)
class LLMOfflineParams(Section):
    """The offline LLM agent (``llm`` backend ``local``, :mod:`harp_lib.llm.local`)."""
    backend: str = rule()
    model: str = rule(choices=("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"))
    threads: int = rule(ge=1)
    slots: int = rule(ge=1)
    n_ctx: int = rule(ge=256)
    max_tokens: int = rule(ge=1)
    temperature: float = rule(ge=0)
    seed: int = rule(ge=0)
    weights_dir: str = rule()
    cache_dir: str = rule()


@dataclass(frozen=True, eq=False)
class LLMRowsParams(Section):
    """Table II rows of the offline LLM agent on a fixed stratified subset (:mod:`harp_lib.stages.llm_rows`)."""
    per_type: int = rule(ge=1)
    judge_per_type: int = rule(ge=1)           # the judge agreement table's subset (harp_lib.stages.second_judge)
    setups: list[str] = rule(each=tuple(SETUPS))
    model: Optional[str] = rule()
    max_sets: Optional[int] = rule(ge=1)       # agent.max_sets for these rows only (null: agent.max_sets)
    workers: int = rule(ge=1)
    predictions: str = rule()
    judgements: str = rule()
    scores: str = rule()


@dataclass(frozen=True, eq=False)
class HumanParams(Section):
    answers_dir: str
    pages_dir: str
    audio_sr: int = rule(gt=0)
    max_per_type: int = rule(ge=1)


@dataclass(frozen=True, eq=False)
class EvaluateParams(Section):
    judges: list[str] = rule()
    table_judge: str = rule()
    locate_tolerance_sec: float = rule(ge=0)
    citation_rounding_sec: float = rule(ge=0)
    # judge name -> keys of ``llm:`` overriding it (checked against LLMParams' fields)
    llm_judges: dict[str, dict[str, Any]] = rule()
    llm_cache_dir: str = rule()
    human: HumanParams = rule()


@dataclass(frozen=True, eq=False)
class ScaleParams(Section):
    engine: str = rule(choices=("local", "dask"))
    workers: int = rule(ge=1)
    scheduler: Optional[str] = rule()
    stream_above_sec: Optional[float] = rule(ge=0)   # 0: stream every recording; null: never
    stream_chunk_sec: float = rule(gt=0)
    llm_concurrency: int = rule(ge=1)


@dataclass(frozen=True, eq=False)
class BenchParams(Section):
    scratch: str = rule()
    goals: dict[str, float] = rule()
    long_hours: float = rule(gt=0)
    long_silence_sec: float = rule(ge=0)
    retrieval_sizes: list[int] = rule(ge=1)
    retrieval_queries: int = rule(ge=1)
    retrieval_seg_per_rec: int = rule(ge=1)
    retrieval_topics: int = rule(ge=1)
    retrieval_spread: float = rule(ge=0)
    scale_recordings: int = rule(ge=1)
    scale_workers: list[int] = rule(ge=1)
    profile_top: int = rule(ge=1)
    whisper_model: str = rule()
    whisper_segments: int = rule(ge=1)
    whisper_batch: int = rule(ge=1)


@dataclass(frozen=True, eq=False)
class Params(Section):
    """The whole of params.yaml after the profile overlay (``profile``/``profiles`` removed)."""
    seed: int = rule(ge=0)
    paths: PathsParams = rule()
    domains: list[str] = rule(each=DOMAINS)
    setups: list[str] = rule(each=tuple(SETUPS))
    benchmark: BenchmarkParams = rule()
    extract: ExtractParams = rule()
    agent: AgentParams = rule()
    llm: LLMParams = rule()
    llm_offline: LLMOfflineParams = rule()
    llm_rows: LLMRowsParams = rule()
    evaluate: EvaluateParams = rule()
    scale: ScaleParams = rule()
    bench: BenchParams = rule()
    # paper corpus construction (paper profile only; each domain is checked by
    # harp_lib.corpora.datasets.common.params_from against the corpus builder's own dataclass)
    datasets: Optional[dict[str, dict[str, Any]]] = rule(keys_of="")


#: sections that may be absent from a profile (None then)
_OPTIONAL_KEYS = {"datasets"}


def _suggest(key: str, known, prefix: str = "") -> str:
    close = difflib.get_close_matches(key, [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {prefix}{close[0]}?)" if close else ""


def _tname(tp: Any) -> str:
    if isinstance(tp, type) and is_dataclass(tp):
        return "a section"
    if isinstance(tp, type):
        return {"str": "a string", "int": "an integer", "float": "a number", "bool": "true/false",
                "NoneType": "null"}.get(tp.__name__, tp.__name__)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union:
        return " or ".join(_tname(a) for a in args)
    if origin in (list, tuple):
        return f"a list of {_plural(args[0]) if args else 'values'}"
    if origin is dict:
        return f"a mapping to {_plural(args[1]) if args else 'values'}"
    return "any value" if tp is Any else str(tp)


def _plural(tp: Any) -> str:
    t = _tname(tp)
    for one, many in (("a string", "strings"), ("an integer", "integers"), ("a number", "numbers"),
                      ("a mapping", "mappings"), ("a list", "lists"), ("any value", "values"), ("null", "nulls")):
        t = t.replace(one, many)
    return t


def _range_text(meta: Mapping) -> str:
    parts = []
    if meta.get("ge") is not None:
        parts.append(f">= {meta['ge']:g}")
    if meta.get("gt") is not None:
        parts.append(f"> {meta['gt']:g}")
    if meta.get("le") is not None:
        parts.append(f"<= {meta['le']:g}")
    return " and ".join(parts)


def _check_value(value: Any, tp: Any, key: str, errors: list[str]) -> Any:
    """Check ``value`` against the annotation ``tp``; nested dataclasses are built."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return value
    if isinstance(tp, type) and is_dataclass(tp):
        if not isinstance(value, Mapping):
            errors.append(f"{key} = {value!r} is not a section; expected a mapping of "
                          f"{', '.join(f.name for f in fields(tp))}")
            return None
        return _build(tp, value, key, errors)
    if origin is Union:
        if value is None and type(None) in args:
            return None
        for a in args:
            if a is type(None):
                continue
            trial: list[str] = []
            out = _check_value(value, a, key, trial)
            if not trial:
                return out
        errors.append(f"{key} = {value!r} has the wrong type; expected {_tname(tp)}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            errors.append(f"{key} = {value!r} has the wrong type; expected {_tname(tp)}")
            return value
        for i, v in enumerate(value):
            _check_value(v, args[0] if args else Any, f"{key}[{i}]", errors)
        return value
    if origin is dict:
        if not isinstance(value, Mapping):
            errors.append(f"{key} = {value!r} has the wrong type; expected {_tname(tp)}")
            return value
        for k, v in value.items():
            _check_value(v, args[1] if args else Any, f"{key}.{k}", errors)
        return value
    checks = {bool: lambda v: isinstance(v, bool),
              int: lambda v: isinstance(v, int) and not isinstance(v, bool),
              float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              str: lambda v: isinstance(v, str), dict: lambda v: isinstance(v, Mapping)}
    ok = checks[tp](value) if tp in checks else isinstance(value, tp)
    if not ok:
        errors.append(f"{key} = {value!r} has the wrong type; expected {_tname(tp)}")
    return value   # values are kept as written (an int stays an int): outputs must not change


def _check_rule(value: Any, meta: Mapping, key: str, errors: list[str]) -> None:
    vals = value if isinstance(value, list) else [value]
    for v in vals:
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if ((meta.get("ge") is not None and v < meta["ge"]) or (meta.get("gt") is not None and v <= meta["gt"])
                or (meta.get("le") is not None and v > meta["le"])):
            errors.append(f"{key} = {value!r} is out of range; allowed: {_range_text(meta)}")
            return
    if meta.get("choices") and value not in meta["choices"]:
        errors.append(f"{key} = {value!r} is not allowed; choose one of {', '.join(map(str, meta['choices']))}")
    each = meta.get("each")
    if each:
        items = value.values() if isinstance(value, Mapping) else (value or [])
        bad = [v for v in items if v not in each]
        if bad:
            errors.append(f"{key} = {value!r}: {bad[0]!r} is not allowed; choose from {', '.join(map(str, each))}")


def _build(cls, data: Mapping, prefix: str, errors: list[str]):
    hints = get_type_hints(cls)
    known = [f.name for f in fields(cls)]
    for k in data:
        if k not in known:
            errors.append(f"unknown key {prefix + '.' if prefix else ''}{k}"
                          f"{_suggest(str(k), known, prefix + '.' if prefix else '')}; "
                          f"{'section ' + prefix if prefix else 'params.yaml'} has: {', '.join(known)}")
    kwargs = {}
    for f in fields(cls):
        key = f"{prefix}.{f.name}" if prefix else f.name
        if f.name not in data:
            if not prefix and f.name in _OPTIONAL_KEYS:
                kwargs[f.name] = None
                continue
            errors.append(f"missing key {key} ({_tname(hints[f.name])}); add it to params.yaml")
            kwargs[f.name] = None
            continue
        n = len(errors)
        kwargs[f.name] = _check_value(data[f.name], hints[f.name], key, errors)
        if len(errors) == n and f.metadata:
            _check_rule(data[f.name], f.metadata, key, errors)
    return cls(**kwargs)


def _cross_checks(p: Params, errors: list[str]) -> None:
    """Rules between keys: per-domain mappings cover every domain, judges exist."""
    for f in fields(ExtractParams):
        if f.metadata.get("keys_of") == "domains":
            have = getattr(p.extract, f.name) or {}
            for d in p.domains:
                if d not in have:
                    errors.append(f"extract.{f.name} has no entry for domain {d!r} (listed in domains); "
                                  f"add `{d}: ...` to it")
    judges = set(p.evaluate.llm_judges or {}) | {"rule"}
    for j in p.evaluate.judges or []:
        if j not in judges:
            errors.append(f"evaluate.judges lists {j!r}{_suggest(j, judges)}; allowed: rule or a name "
                          f"under evaluate.llm_judges ({', '.join(sorted(judges - {'rule'}))})")
    if p.evaluate.table_judge not in (p.evaluate.judges or []):
        errors.append(f"evaluate.table_judge = {p.evaluate.table_judge!r} is not in evaluate.judges "
                      f"({', '.join(p.evaluate.judges or [])})")
    llm_keys = [f.name for f in fields(LLMParams)]
    for j, spec in (p.evaluate.llm_judges or {}).items():
        for k in spec or {}:
            if k not in llm_keys:
                errors.append(f"unknown key evaluate.llm_judges.{j}.{k}{_suggest(k, llm_keys, f'evaluate.llm_judges.{j}.')}; "
                              f"a judge overrides keys of llm: {', '.join(llm_keys)}")


def validate_params(data: Mapping, where: str = "params.yaml") -> Params:
    """Check a merged params mapping against the schema; one :class:`ConfigError` lists every problem.

    >>> validate_params({"seed": -1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    harp_lib.config.ConfigError: params.yaml: seed = -1 is out of range; allowed: >= 0; missing key paths ...
    """
    errors: list[str] = []
    p = _build(Params, data, "", errors)
    if not errors:
        _cross_checks(p, errors)
    if errors:
        raise ConfigError(f"{where}: " + "; ".join(errors))
    return p


def schema_keys(cls=Params, prefix: str = "") -> dict[str, Any]:
    """Every dotted key of the schema with its type annotation (docs and notebook checks)."""
    out: dict[str, Any] = {}
    hints = get_type_hints(cls)
    for f in fields(cls):
        key = f"{prefix}{f.name}"
        tp = hints[f.name]
        if isinstance(tp, type) and is_dataclass(tp):
            out.update(schema_keys(tp, key + "."))
        else:
            out[key] = tp
    return out


def _field_rules(cls=Params, prefix: str = "") -> dict[str, Mapping]:
    out: dict[str, Mapping] = {}
    hints = get_type_hints(cls)
    for f in fields(cls):
        tp = hints[f.name]
        if isinstance(tp, type) and is_dataclass(tp):
            out.update(_field_rules(tp, f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = f.metadata
    return out


def schema_markdown() -> str:
    """The params.yaml keys as a Markdown table (key, type, allowed values); docs/params.md holds it.

    >>> print(schema_markdown().splitlines()[2])
    | `seed` | an integer | >= 0 |
    """
    notes = {"evaluate.judges": "each `rule` or a name under `evaluate.llm_judges`",
             "evaluate.table_judge": "one of `evaluate.judges`",
             "evaluate.llm_judges": "each judge's keys are keys of `llm:`",
             "extract.options": "each backend's constructor options (a misspelled one is an error when it is built)",
             "llm.backend": "a registered `llm` backend (openai, transformers, gguf, ...)",
             "datasets": "paper profile only; each domain checked by `harp prepare`"}
    rows = ["| key | type | allowed |", "|---|---|---|"]
    rules = _field_rules()
    for key, tp in schema_keys().items():
        meta = rules.get(key) or {}
        allowed = [x for x in (_range_text(meta),) if x]
        if meta.get("choices"):
            allowed.append("one of " + ", ".join(map(str, meta["choices"])))
        if meta.get("each"):
            allowed.append("each one of " + ", ".join(map(str, meta["each"])))
        if meta.get("keys_of") == "domains":
            allowed.append("an entry for every domain in `domains`")
        if key.startswith("extract.backends."):
            allowed.append("registered backend names, per domain or for all")
        if key in notes:
            allowed.append(notes[key])
        rows.append(f"| `{key}` | {_tname(tp)} | {'; '.join(allowed) or 'any'} |")
    return "\n".join(rows)


@dataclass(frozen=True)
class Config:
    """The resolved configuration (base sections with the profile overlay applied), validated.

    Sections are typed attributes (``cfg.agent.top_k``, ``cfg.extract.metrics.der_collar``);
    ``cfg.get("agent.top_k")`` reads a dotted key as written in params.yaml (an unknown key
    is a :class:`ConfigError`; there are no defaults in code).
    """
    profile: str
    data: dict
    root: Path = field(default_factory=repo_root)
    params: Optional[Params] = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.params is None:
            object.__setattr__(self, "params", validate_params(self.data, f"params.yaml (profile {self.profile!r})"))

    def get(self, dotted: str) -> Any:
        cur: Any = self.data
        for part in dotted.split("."):
            if isinstance(cur, Mapping) and part in cur:
                cur = cur[part]
            else:
                raise ConfigError(f"params.yaml (profile {self.profile!r}) has no key {dotted!r}")
        return cur

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("profile", "data", "root", "params"):
            raise AttributeError(name)
        params = self.__dict__.get("params")
        if params is not None and name in Params.__dataclass_fields__:
            return getattr(params, name)
        raise AttributeError(f"params.yaml has no section {name!r}{_suggest(name, Params.__dataclass_fields__)}")

    def path(self, dotted: str) -> Path:
        """A path setting resolved against the repository root."""
        p = Path(self.get(dotted))
        return p if p.is_absolute() else self.root / p

    def with_overrides(self, overrides: Mapping) -> "Config":
        return Config(self.profile, deep_merge(self.data, overrides), self.root)


def parse_override(text: str) -> dict:
    """``-S agent.top_k=1`` -> ``{"agent": {"top_k": 1}}`` (the value is read as YAML).

    >>> parse_override("agent.top_k=1")
    {'agent': {'top_k': 1}}
    """
    import yaml
    if "=" not in text:
        raise ConfigError(f"override {text!r} is not KEY=VALUE (e.g. -S agent.top_k=1)")
    key, val = text.split("=", 1)
    try:
        out: Any = yaml.safe_load(val) if val.strip() else ""
    except yaml.YAMLError as e:
        why = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ConfigError(f"override {text!r}: the value is not valid YAML ({why}); quote it if it is text, "
                          f"e.g. -S {key.strip()}='...'") from None
    for part in reversed(key.strip().split(".")):
        out = {part: out}
    return out


def positive_int(text: str) -> int:
    """argparse ``type=`` for counts (``--limit``, ``--workers``): an integer >= 1.

    >>> positive_int("3")
    3
    """
    import argparse
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is out of range; allowed: an integer >= 1")
    return v


def load_config(path: Optional[os.PathLike | str] = None, profile: Optional[str] = None,
                overrides: Optional[Mapping | Sequence[str]] = None) -> Config:
    """Read params.yaml, apply the profile overlay and any overrides, and validate the result.

    ``profile`` defaults to ``$HARP_PROFILE``, then the file's ``profile`` key.  ``overrides``
    is a nested mapping or a list of ``KEY=VALUE`` strings (``-S``).  Every profile of the file
    is validated, so a typo in the paper overlay is caught while running mini.
    """
    import yaml
    p = Path(path) if path else repo_root() / "params.yaml"
    if not p.exists():
        raise ConfigError(f"{p}: no params.yaml found (run from the repository root or set HARP_ROOT)")
    with open(p, encoding="utf-8") as fh:
        try:
            raw = yaml.safe_load(fh) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"{p}: not valid YAML ({e}); fix the file") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level")
    profiles = raw.pop("profiles", {}) or {}
    default_prof = raw.pop("profile", "mini")
    prof = profile or os.environ.get("HARP_PROFILE") or default_prof
    if prof not in profiles:
        raise ConfigError(f"{p}: unknown profile {prof!r}{_suggest(str(prof), profiles)}; "
                          f"defined: {', '.join(profiles) or 'none'}")
    for name, over in profiles.items():
        if name != prof:
            validate_params(deep_merge(raw, over or {}), f"{p} (profile {name!r})")
    data = deep_merge(raw, profiles[prof] or {})
    if overrides:
        if not isinstance(overrides, Mapping):
            merged: dict = {}
            for o in overrides:
                merged = deep_merge(merged, parse_override(o))
            overrides = merged
        data = deep_merge(data, overrides)
    return Config(prof, data, p.parent.resolve(), validate_params(data, f"{p} (profile {prof!r})"))


# ---------------------------------------------------------------------------------------
# Backend registry: (stage, name) -> class.  The modules that define backends fill it with
# @register; the package root (harp_lib/__init__.py) lists those modules in BACKEND_MODULES,
# and they are imported on the first lookup only (``import harp_lib`` never pulls in torch).
# This module imports nothing from harp_lib: it is the lowest layer.
# ---------------------------------------------------------------------------------------
class BackendError(RuntimeError):
    """A backend is unknown, or cannot run here (missing extra, weights or token)."""


class BackendOptionError(ConfigError, BackendError):
    """A backend was given an option its constructor does not take (a params.yaml typo)."""


_REGISTRY: dict[tuple[str, str], Callable] = {}
#: Modules that register backends when imported, appended to by the package that owns them.
BACKEND_MODULES: list[str] = []
_loaded: set[str] = set()


def register(stage: str, name: str):
    """Class decorator: make ``cls`` the backend ``name`` of ``stage``.

    >>> @register("demo", "echo")
    ... class Echo:
    ...     pass
    >>> get_backend("demo", "echo") is Echo
    True
    """
    def deco(cls):
        _REGISTRY[(stage, name)] = cls
        return cls
    return deco


def backend_modules(*modules: str) -> None:
    """Declare modules whose import registers backends (imported lazily, on first lookup)."""
    for m in modules:
        if m not in BACKEND_MODULES:
            BACKEND_MODULES.append(m)


def _load_all() -> None:
    for mod in list(BACKEND_MODULES):
        if mod in _loaded:
            continue
        _loaded.add(mod)
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name and (e.name == mod or mod.startswith(e.name + ".")):
                continue  # that part of the package is not built (yet)
            raise


def get_backend(stage: str, name: str):
    """The class registered as ``name`` for ``stage``; a clear error when unknown."""
    if (stage, name) not in _REGISTRY:
        _load_all()
    try:
        return _REGISTRY[(stage, name)]
    except KeyError:
        known = sorted(n for s, n in _REGISTRY if s == stage)
        raise BackendError(f"unknown {stage} backend {name!r}{_suggest(str(name), known)}; available: "
                           f"{', '.join(known) or 'none'}") from None


def check_backend_options(stage: str, name: str, cls, options: Mapping) -> None:
    """Raise :class:`BackendOptionError` when ``options`` holds a key ``cls`` does not accept."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return
    ps = sig.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps):
        return
    accepted = [p.name for p in ps if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                 inspect.Parameter.KEYWORD_ONLY)]
    for k in options:
        if k not in accepted:
            raise BackendOptionError(
                f"{stage} backend {name!r} has no option {k!r}{_suggest(str(k), accepted)}; its options: "
                f"{', '.join(accepted) or 'none'} (fix params.yaml extract.options.{name} or the backend spec)")


def create_backend(stage: str, spec: Any, **kwargs):
    """Instantiate a backend from a name or ``{"name": ..., **options}`` (from params.yaml).

    An option the backend does not take is a :class:`BackendOptionError` naming it.
    """
    if isinstance(spec, Mapping):
        spec = dict(spec)
        name = spec.pop("name")
        kwargs = {**spec, **kwargs}
    else:
        name = spec
    cls = get_backend(stage, name)
    check_backend_options(stage, name, cls, kwargs)
    return cls(**kwargs)


def list_backends(stage: Optional[str] = None) -> list[tuple[str, str]]:
    _load_all()
    return sorted(k for k in _REGISTRY if stage is None or k[0] == stage)
