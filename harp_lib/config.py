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
import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

__all__ = ["Setup", "SETUPS", "SETUP_ORDER", "TOOLS", "Config", "load_config", "deep_merge",
           "register", "get_backend", "create_backend", "list_backends", "BackendError",
           "repo_root"]

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
    raise KeyError(f"unknown setup {name!r}; choose one of {', '.join(SETUPS)} "
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
    return Path(__file__).resolve().parents[1]


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
    """params.yaml is missing a key or has a bad value."""


@dataclass(frozen=True)
class Config:
    """The resolved configuration (base sections with the profile overlay applied).

    Access sections as attributes (``cfg.agent["top_k"]``) or dotted paths
    (``cfg.get("agent.top_k")``).
    """
    profile: str
    data: dict
    root: Path = field(default_factory=repo_root)

    def get(self, dotted: str, default: Any = ...) -> Any:
        cur: Any = self.data
        for part in dotted.split("."):
            if isinstance(cur, Mapping) and part in cur:
                cur = cur[part]
            elif default is not ...:
                return default
            else:
                raise ConfigError(f"params.yaml (profile {self.profile!r}) has no key {dotted!r}")
        return cur

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("profile", "data", "root"):
            raise AttributeError(name)
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(f"params.yaml has no section {name!r}") from None

    def path(self, dotted: str) -> Path:
        """A path setting resolved against the repository root."""
        p = Path(self.get(dotted))
        return p if p.is_absolute() else self.root / p

    def with_overrides(self, overrides: Mapping) -> "Config":
        return Config(self.profile, deep_merge(self.data, overrides), self.root)


def load_config(path: Optional[os.PathLike | str] = None, profile: Optional[str] = None,
                overrides: Optional[Mapping] = None) -> Config:
    """Read params.yaml, apply the profile overlay and any overrides.

    ``profile`` defaults to the file's ``profile`` key, then ``$HARP_PROFILE``.
    """
    import yaml
    p = Path(path) if path else repo_root() / "params.yaml"
    if not p.exists():
        raise ConfigError(f"{p}: no params.yaml found (run from the repository root or set HARP_ROOT)")
    with open(p, encoding="utf-8") as fh:
        raw = yaml.safe_load(fh) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level")
    prof = profile or os.environ.get("HARP_PROFILE") or raw.get("profile", "mini")
    profiles = raw.pop("profiles", {}) or {}
    raw.pop("profile", None)
    if prof not in profiles:
        raise ConfigError(f"{p}: unknown profile {prof!r}; defined: {', '.join(profiles) or 'none'}")
    data = deep_merge(raw, profiles[prof] or {})
    if overrides:
        data = deep_merge(data, overrides)
    return Config(prof, data, p.parent.resolve())


# ---------------------------------------------------------------------------------------
# Backend registry: (stage, name) -> class, imported lazily
# ---------------------------------------------------------------------------------------
class BackendError(RuntimeError):
    """A backend is unknown, or cannot run here (missing extra, weights or token)."""


_REGISTRY: dict[tuple[str, str], Callable] = {}
#: Modules that register backends when imported.  Imported on first lookup only, so that
#: ``import harp_lib`` never pulls in torch.
BACKEND_MODULES: list[str] = [
    "harp_lib.extract.backends",
    "harp_lib.agent.backends",
    "harp_lib.evaluate.backends",
]
_loaded = False


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


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in BACKEND_MODULES:
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
        raise BackendError(f"unknown {stage} backend {name!r}; available: "
                           f"{', '.join(known) or 'none'}") from None


def create_backend(stage: str, spec: Any, **kwargs):
    """Instantiate a backend from a name or ``{"name": ..., **options}`` (from params.yaml)."""
    if isinstance(spec, Mapping):
        spec = dict(spec)
        name = spec.pop("name")
        kwargs = {**spec, **kwargs}
    else:
        name = spec
    return get_backend(stage, name)(**kwargs)


def list_backends(stage: Optional[str] = None) -> list[tuple[str, str]]:
    _load_all()
    return sorted(k for k in _REGISTRY if stage is None or k[0] == stage)
