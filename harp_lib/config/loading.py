"""Reading ``params.yaml``: the repository root, the profile overlay and ``-S`` overrides, and
the resolved, validated :class:`Config`; also the argparse count type of the CLI."""
from __future__ import annotations

import argparse
import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from harp_lib.config.errors import ConfigError, _suggest
from harp_lib.config.params import Params
from harp_lib.config.validate import validate_params


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
    import yaml  # light `import harp_lib`: yaml (~15 ms) only when params are read
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
    import yaml  # light `import harp_lib`: yaml (~15 ms) only when params are read
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
