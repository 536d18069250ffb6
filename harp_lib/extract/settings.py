"""What extraction runs with: backend specs per stage and domain (:func:`resolve_backend`,
:func:`extract_settings`) and the per-process model cache (:func:`model_for`).

Shared by the extraction pipeline and the quality checks (``sample_der``), so neither imports
the other's internals.

>>> resolve_backend({"audio_emb": {"song": "audio_stats"}}, "audio_emb", "song", {})
'audio_stats'
"""
from __future__ import annotations

import json
from typing import Any

from harp_lib.config import Config, create_backend, get_backend
from harp_lib.extract.diarization import speaker_bounds

__all__ = ["resolve_backend", "extract_settings", "model_for", "backend_model_id", "with_speaker_counts",
           "sound_events_labelers", "with_sound_events", "with_overlap"]

_MODELS: dict[tuple, Any] = {}


def resolve_backend(backends: dict, stage: str, domain: str, options: dict):
    """The backend spec for ``stage`` in ``domain``: a name, a ``{"name", **options}`` dict,
    a list (labelers) or None.  Per-domain dicts are resolved; options come from
    ``extract.options.<name>``."""
    spec = backends.get(stage)
    if isinstance(spec, dict) and "name" not in spec:
        spec = spec.get(domain)
    if spec is None:
        return None
    if isinstance(spec, list):
        return [resolve_backend({stage: s}, stage, domain, options) for s in spec]
    name = spec["name"] if isinstance(spec, dict) else spec
    opts = dict(options.get(name) or {})
    if isinstance(spec, dict):
        opts.update({k: v for k, v in spec.items() if k != "name"})
    return {"name": name, **opts} if opts else name


def model_for(stage: str, spec):
    """Backends are built once per process and reused across recordings."""
    key = (stage, json.dumps(spec, sort_keys=True))
    if key not in _MODELS:
        _MODELS[key] = create_backend(stage, spec)
    return _MODELS[key]


def backend_model_id(stage: str, spec):
    """The ``model_id`` a backend spec runs with, without building it (None: no backend).  A class
    whose weights depend on its options (``whisper_ct2``'s ``model``) says so in ``describe_model``.

    >>> backend_model_id("asr", {"name": "pocketsphinx", "maxhmmpf": 2000})
    'pocketsphinx-5.1.1 en-us (cmusphinx-en-us-ptm + en-us.lm.bin)'
    """
    if spec is None:
        return None
    name = spec["name"] if isinstance(spec, dict) else spec
    cls = get_backend(stage, name)
    describe = getattr(cls, "describe_model", None)
    if describe is not None:
        return describe(**{k: v for k, v in spec.items() if k != "name"} if isinstance(spec, dict) else {})
    return getattr(cls, "model_id", name)


def extract_settings(cfg: Config, domain: str) -> dict:
    """Every backend spec and option extraction of ``domain`` runs with."""
    ex = cfg.extract
    backends, options = ex.backends, ex.options
    seg_stage = ex.segmenter[domain]
    return {
        "domain": domain,
        "sr": int(ex.sample_rate),
        "max_seg_sec": ex.max_seg_sec[domain],
        "min_turn_sec": float(ex.min_turn_sec),
        "fill_gaps_sec": float(ex.fill_gaps_sec[domain]),
        "segmenter": seg_stage,
        "vad": resolve_backend(backends, "vad", domain, options),
        "segment": resolve_backend(backends, seg_stage, domain, options),
        "asr": resolve_backend(backends, "asr", domain, options),
        "text_emb": resolve_backend(backends, "text_emb", domain, options),
        "audio_emb": resolve_backend(backends, "audio_emb", domain, options),
        "domain_emb": resolve_backend(backends, "domain_emb", domain, options),
        # second speakers where two talk (extract/overlap.py); None: off
        "overlap": resolve_backend(backends, "overlap", domain, options),
        "labelers": (resolve_backend({"labeler": (backends.get("labelers") or {}).get(domain) or []},
                                     "labeler", domain, options) or []) + sound_events_labelers(cfg),
        "options": options,
        # long files are streamed from disk (harp_lib/extract/streaming.py, params scale:)
        "stream_above_sec": cfg.scale.stream_above_sec,
        "stream_chunk_sec": float(cfg.scale.stream_chunk_sec),
    }


def sound_events_labelers(cfg: Config) -> list:
    """The sound-event labeler spec ``extract.sound_events`` adds to every domain's labelers
    (``[]`` when its backend is ``none``, the default: the stage-2 key and outputs stay as they were).

    >>> from harp_lib.config import load_config
    >>> sound_events_labelers(load_config(profile="mini"))
    []
    >>> with_sound_events(load_config(profile="mini")).get("extract.sound_events.backend")
    'yamnet'
    """
    se = cfg.extract.sound_events
    if se is None or se.backend == "none":
        return []
    return [{"name": se.backend, "labels": {str(k): list(v) for k, v in se.labels.items()},
             "threshold": se.threshold, "merge_gap_sec": se.merge_gap_sec}]


def with_sound_events(cfg: Config, backend: str = "yamnet") -> Config:
    """``cfg`` with sound events on (``harp ingest --sound-events``): stage 2 labels every
    segment with YAMNet's events (harp_lib/extract/sound_events.py); the labeler and its options
    are part of the stage-2 key, so turning it on re-labels without re-running stage 1."""
    return cfg.with_overrides({"extract": {"sound_events": {"backend": backend}}})


def with_overlap(cfg: Config, backend: str | None) -> Config:
    """``cfg`` with stage 1's overlap detector set to ``backend`` (``harp ingest --overlap``; a
    registered ``overlap`` backend such as ``seg30``, or None: off) for every domain.  The detector
    is part of the stage-1 key, so switching it re-extracts.

    >>> from harp_lib.config import load_config
    >>> with_overlap(load_config(profile="mini"), "seg30").get("extract.backends.overlap")
    'seg30'
    """
    return cfg.with_overrides({"extract": {"backends": {"overlap": backend}}})


def with_speaker_counts(cfg: Config, domain: str, num_speakers=None, min_speakers=None, max_speakers=None) -> Config:
    """``cfg`` with ``domain``'s diarizer told how many speakers to find (``harp ingest
    --num-speakers / --min-speakers / --max-speakers``): its ``extract.options`` gain
    ``num_speakers`` and ``min_speakers`` (None: not given) and, when given, ``max_speakers`` (else
    the diarizer's own search range stays).  The options are part of the stage-1 cache key, so
    another count re-extracts.  Nothing given: ``cfg`` itself.  A count that is not a positive
    integer, a minimum above the maximum, or counts for a pipeline without speakers (songs) are a
    ``ValueError`` (:func:`harp_lib.extract.diarization.speaker_bounds`).

    >>> from harp_lib.config import load_config
    >>> c = with_speaker_counts(load_config(profile="mini"), "emotion", num_speakers=2)
    >>> c.get("extract.options.spectral.num_speakers"), c.get("extract.options.spectral.max_speakers")
    (2, 8)
    """
    given = {"num_speakers": num_speakers, "min_speakers": min_speakers, "max_speakers": max_speakers}
    if all(v is None for v in given.values()):
        return cfg
    speaker_bounds(**given)
    seg = cfg.extract.segmenter[domain]
    if seg != "diarization":
        raise ValueError(f"speaker counts apply to speech and clinical recordings; the {domain} pipeline "
                         f"segments by {seg}, not by speaker")
    spec = resolve_backend(cfg.extract.backends, "diarization", domain, {})
    name = spec["name"] if isinstance(spec, dict) else spec
    opts = {k: v for k, v in given.items() if v is not None or k != "max_speakers"}
    return cfg.with_overrides({"extract": {"options": {name: opts}}})
