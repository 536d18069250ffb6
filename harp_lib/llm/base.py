"""The client interface: :class:`LLMError`, the :class:`LLMClient` base class with its shared
on-disk reply cache, and :func:`make_client`, which builds the backend ``llm:`` names through the
registry (the backends: :mod:`harp_lib.llm.openai_compat`, :mod:`harp_lib.llm.transformers_client`,
:mod:`harp_lib.llm.local`)."""
from __future__ import annotations

import inspect
import json
import logging
from dataclasses import fields
from pathlib import Path
from typing import Mapping, Optional, Sequence

from harp_lib.config import LLMParams, create_backend, get_backend
from harp_lib.core.atomic import write_text
from harp_lib.llm.messages import LLMResponse, Part
from harp_lib.core.errors import HarpError

__all__ = ["LLMError", "LLMClient", "make_client"]

log = logging.getLogger("harp_lib.llm")     # the package's logger, as before the split: the same log lines


class LLMError(HarpError, RuntimeError):
    """The model could not be reached or returned something unusable (message says which)."""
    fault = True                                   # the server's or the model's (``harp`` exit 1)



class LLMClient:
    """Base class: ``complete(parts, json_schema=None, max_tokens=None) -> LLMResponse``."""
    backend = "base"
    model_id = ""
    supports_audio = False

    def complete(self, parts: Sequence[Part], *, json_schema: Optional[dict] = None,
                 max_tokens: Optional[int] = None) -> LLMResponse:  # pragma: no cover - interface
        raise NotImplementedError

    # shared on-disk cache -------------------------------------------------------------
    def _cache_path(self, key: str) -> Optional[Path]:
        d = getattr(self, "cache_dir", None)
        return Path(d) / key[:2] / f"{key}.json" if d else None

    def _cache_get(self, key: str) -> Optional[dict]:
        p = self._cache_path(key)
        if p is not None and p.exists():
            try:
                hit = json.loads(p.read_text(encoding="utf-8"))
                if isinstance(hit, dict) and isinstance(hit.get("text"), str):
                    return hit
                log.warning("ignoring LLM cache entry without a text reply %s", p)
            except (OSError, json.JSONDecodeError):
                log.warning("ignoring unreadable LLM cache entry %s", p)
        return None

    def _cache_put(self, key: str, value: dict) -> None:
        p = self._cache_path(key)
        if p is None:
            return
        write_text(p, json.dumps(value, ensure_ascii=False))

    def forget(self, response: "LLMResponse") -> bool:
        """Drop ``response`` from the reply cache (a refusal or prose where an answer was due:
        the caller decides, the client cannot know the answer space).  Only an entry still
        holding this reply's text goes (a newer reply under the same key stays); True if one went."""
        p = self._cache_path(response.cache_key) if response.cache_key else None
        hit = self._cache_get(response.cache_key) if p is not None else None
        if hit is None or hit.get("text") != response.text:    # gone, or a newer reply: keep it
            return False
        try:
            p.unlink()
        except FileNotFoundError:
            return False
        log.info("dropped the cached LLM reply %s (not an answer)", p)
        return True


def make_client(cfg_llm: Mapping, *, root: Optional[Path] = None) -> LLMClient:
    """Instantiate the ``llm`` backend named by ``cfg_llm["backend"]`` through the registry.

    ``cache_dir`` (relative paths resolve against ``root``) is passed through.  Keys of the
    shared ``llm:`` section that this backend has no use for (``base_url`` for a local model)
    are left out; any other key it does not take is an error naming it.
    """

    opts = dict(cfg_llm)
    name = opts.pop("backend")
    shared = {f.name for f in fields(LLMParams)}   # e.g. max_concurrency is read by harp_lib.extract.scale
    takes = set(inspect.signature(get_backend("llm", name)).parameters)
    opts = {k: v for k, v in opts.items() if k in takes or k not in shared}
    cd = opts.get("cache_dir")
    if cd and root is not None and not Path(cd).is_absolute():
        opts["cache_dir"] = str(Path(root) / cd)
    return create_backend("llm", name, **opts)

