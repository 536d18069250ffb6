"""``harp prepare``: build the paper's corpora into ``paths.benchmark`` (``data/benchmark``; the paper profile's DVC ``benchmark`` stage runs it).

    harp prepare --check                      # which raw files are present / missing
    harp prepare clinical --download          # fetch MedMosaic long_form/ (needs hub access)
    harp prepare song --detect-language       # Whisper language ID (needs openai-whisper + weights)
    harp prepare all                          # emotion, clinical and song, then manifest.json
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from harp_lib.config import ConfigError
from harp_lib.corpora.datasets.common import SourceError, params_from, write_manifest
from harp_lib.corpora.datasets.longemo import prepare_emotion
from harp_lib.corpora.datasets.longemo_params import EmotionParams
from harp_lib.corpora.datasets.longemo_source import LongEmoSource
from harp_lib.corpora.datasets.medmosaic import ClinicalParams, MedMosaicSource, download_medmosaic, prepare_clinical
from harp_lib.corpora.datasets.songeval import SongEvalSource, SongParams, detect_languages, prepare_song

DOMAINS = ("emotion", "clinical", "song")


def _params(domain: str, cfg):
    section = dict((cfg.datasets or {}).get(domain) or {})
    params = {"emotion": EmotionParams, "clinical": ClinicalParams}.get(domain, SongParams)
    return params_from(params, section)


def _src(domain, cfg, params, override: Optional[str]) -> Path:
    p = Path(override or params.src)
    return p if p.is_absolute() else cfg.root / p


def _check(domain, src, params) -> list[str]:
    source = {"emotion": LongEmoSource, "clinical": MedMosaicSource}.get(domain, SongEvalSource)
    return source(src, params).check()


def add_arguments(ap) -> None:
    """``harp prepare`` options (shared ones: :mod:`harp_lib.app.cli`; the profile defaults to paper)."""
    ap.add_argument("domain", nargs="?", default="all", choices=DOMAINS + ("all",))
    ap.add_argument("--src", default=None, help="raw corpus folder (overrides datasets.<domain>.src)")
    ap.add_argument("--out", default=None, help="output root (overrides paths.benchmark)")
    ap.add_argument("--check", action="store_true", help="only report missing raw files")
    ap.add_argument("--download", action="store_true", help="clinical: download MedMosaic first")
    ap.add_argument("--detect-language", action="store_true", help="song: run Whisper language ID first")
    ap.add_argument("--topic", default=None, help="emotion topic phrases: keywords (default) | qwen")


def run(cfg, args) -> int:
    if args.src and args.domain == "all":
        raise ConfigError("--src needs a single domain (e.g. harp prepare song --src DIR)")
    out_root = Path(args.out) if args.out else cfg.path("paths.benchmark")
    domains = DOMAINS if args.domain == "all" else (args.domain,)
    rc = 0
    for dom in domains:
        params = _params(dom, cfg)
        src = _src(dom, cfg, params, args.src)
        if args.check:
            problems = _check(dom, src, params)
            print(f"[{'OK' if not problems else 'MISSING':7}] {dom}: {src}")
            for m in problems:
                print(f"          - {m}")
            rc |= bool(problems)
            continue
        try:
            if dom == "clinical":
                if args.download:
                    download_medmosaic(src, params, progress=not args.quiet)
                counts = prepare_clinical(src, out_root / dom, params, progress=not args.quiet)
            elif dom == "song":
                if args.detect_language:
                    detect_languages(src, params)
                counts = prepare_song(src, out_root / dom, params, progress=not args.quiet)
            else:
                counts = prepare_emotion(src, out_root / dom, params, topic=args.topic, progress=not args.quiet)
        except SourceError as e:
            print(f"harp prepare {dom}: {e}", file=sys.stderr)
            rc = 1
            continue
        print(f"{dom}: {counts} -> {out_root / dom}")
    if not args.check and rc == 0 and out_root.exists():
        print(f"manifest: {write_manifest(out_root, cfg.profile, int(cfg.seed))}")
    return rc

