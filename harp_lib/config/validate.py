"""Checking a merged params mapping against the schema (types, ranges, choices, rules between
keys) into a :class:`~harp_lib.config.params.Params`, and the schema as a Markdown table."""
from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any, Mapping, Union, get_args, get_origin, get_type_hints

from harp_lib.config.errors import ConfigError, _suggest
from harp_lib.core.typed import DecodeError, decode_into
from harp_lib.config.params import ExtractParams, LLMParams, Params

#: sections that may be absent from a profile (None then)
_OPTIONAL_KEYS = {"datasets"}


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
    """Check ``value`` against the annotation ``tp`` by the one typed decoder
    (:mod:`harp_lib.core.typed`, ``convert=False``: values are kept as written, an int stays an
    int, so outputs must not change); nested dataclasses are built.  Every problem is one message."""
    problems: list[DecodeError] = []
    out = decode_into(value, tp, key, problems, convert=False, build=_section)
    errors.extend(_problem_text(p) for p in problems)
    return out


def _section(cls: Any, data: Mapping, key: str, problems: list) -> Any:
    """A nested section: :func:`_build` (unknown and missing keys, rules), its messages as problems."""
    msgs: list[str] = []
    out = _build(cls, data, key, msgs)
    problems.extend(DecodeError(key, data, cls, "build", message=m) for m in msgs)
    return out


def _problem_text(p: DecodeError) -> str:
    if p.reason == "build":
        return p.message
    tp = p.expected
    if isinstance(tp, type) and is_dataclass(tp):
        return (f"{p.path} = {p.value!r} is not a section; expected a mapping of "
                f"{', '.join(f.name for f in fields(tp))}")
    return f"{p.path} = {p.value!r} has the wrong type; expected {_tname(tp)}"


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
