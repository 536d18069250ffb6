"""Plan hit rate: the index a paraphrase is planned over (the benchmark's ground-truth segments
embedded offline, :func:`gt_index`, or the extracted index: :func:`_domain_index`) and whether a
plan searched where the answer is, with the row's tools (:func:`plan_hit`)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.config import create_backend
from harp_lib.core import audio
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Segment, resolve_under
from harp_lib.evaluate.hitrate import plan_windows
from harp_lib.retrieval.index import SegmentIndex

__all__ = ["gt_index", "plan_hit"]


def gt_index(cfg, bench_dir: Path, domain: str, recordings: dict):
    """The benchmark's ground-truth segments as an index, each space embedded by the backend
    ``extract.backends`` names for it (so the query side uses the same embedder)."""
    segs = [s for s in read_jsonl(bench_dir / "segments.jsonl", Segment)]
    backends = cfg.extract.backends
    vectors, spaces, embedders = {}, {}, {}
    for space, stage in (("text", "text_emb"), ("audio", "audio_emb"), ("domain", "domain_emb")):
        spec = backends.get(stage)
        name = spec.get(domain) if isinstance(spec, dict) else spec
        if not name:
            continue
        emb = create_backend(stage, name)
        if space == "text":
            inputs = [s.text or "" for s in segs]
        else:
            inputs = [audio.read_window(resolve_under(bench_dir, recordings[s.recording_id].audio_path), s.span, 16000)
                      for s in segs]
        vectors[space] = np.asarray(emb.embed(inputs), np.float32)
        spaces[space] = {"backend": name, "model": getattr(emb, "model_id", None)}
        embedders[space] = emb
    return SegmentIndex.from_segments(segs, vectors, spaces), embedders, segs


def plan_hit(row: dict, q, plan, gt_segments: Sequence, songs: dict, duration: Optional[float],
             point_window: float) -> Optional[bool]:
    """Did the plan search where the answer is, with the row's tools?  ``None`` for rows with no
    supported task (nothing to plan)."""
    if row.get("expect") == "unsupported":
        return None
    if any("fell back" in e for e in plan.errors):
        return False
    used = {t for ps in plan.sets for t in ps.tools_used()}
    if not set(row["tools"]) <= used:
        return False
    wins = [w for w in plan_windows(plan, duration=duration, songs=songs, point_window=point_window)]
    if row["task"] in ("time", "position"):
        a, b = (q.custom.get("song_a") or {}).get("index"), (q.custom.get("song_b") or {}).get("index")
        want = [songs.get(b), songs.get(a)] if row.get("swap") else [songs.get(a), songs.get(b)]
        got = wins[:2]
        return len(wins) == 2 and all(w is not None and g is not None and w.to_tuple() == g.to_tuple()
                                      for w, g in zip(got, want))
    ev = [s for s in gt_segments if s.id in set(q.gt_segment_ids)]
    return all(any(w is not None and w.overlaps(s.span) for w in wins) for s in ev)


def _domain_index(cfg, bench: Path, domain: str, index: str, recs: dict):
    """``(index, embedders, gt segments)`` of one domain: ground-truth segments embedded offline
    (``gt``) or the extracted index under ``paths.index`` (``extracted``)."""
    if index == "gt":
        return gt_index(cfg, bench, domain, recs)
    if index == "extracted":
        idx_dir = cfg.path("paths.index") / domain
        if not idx_dir.exists():
            raise FileNotFoundError(f"{idx_dir} is missing: run `harp extract --domain {domain}` and "
                                    f"`harp index --domain {domain}` first, or use --index gt")
        return SegmentIndex.load(idx_dir), {}, read_jsonl(bench / "segments.jsonl", Segment)
    raise ValueError(f"--index must be gt or extracted, got {index!r}")
