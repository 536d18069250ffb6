"""Listening to audio with the offline extraction backends: reference clips and evidence clips.

The rule planner needs to know what a reference clip *sounds like* (the emotion of the ``E``
clip for locate queries), the LLM planner gets the same as "clip info" text (HARP_REFERENCE
§3.9), and the rule answerer in audio-only setups (A4, A6, ``strip_domain``) may only use what
it can hear, so it labels the attached clip audio instead of reading the hidden metadata.
All of it goes through the ``labeler`` / ``asr`` backends of the registry (the ones named in
params.yaml ``extract.backends``) and is cached per process, keyed by file and window, and on
disk under ``agent.hearing_cache`` (content-addressed: the audio file's sha256, the window, the
backends' names, options and model ids and a digest of ``harp_lib/extract``'s source), so a
sweep or a resumed run that hears the same clip again makes no backend call (docs/agent.md).

>>> merge_labels([{"primary": "Happy", "arousal": None}, {"primary": None, "arousal": 0.7}])
{'primary': 'Happy', 'arousal': 0.7}
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from harp_lib.core import atomic, audio
from harp_lib.config import BackendError, create_backend, repo_root
from harp_lib.core.hashing import file_sha256
from harp_lib.core.timespan import Span

__all__ = ["Hearing", "merge_labels", "reference_label", "clip_info"]

log = logging.getLogger(__name__)
_CACHE: dict[tuple, Any] = {}
_SHA: dict[tuple, str] = {}
_SOURCE: list[str] = []


def _file_sha(path: Path) -> str:
    """sha256 of a file's bytes, memoised per process by (path, size, mtime)."""
    st = Path(path).stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _SHA:
        _SHA[key] = file_sha256(path)
    return _SHA[key]


def _extract_source_digest() -> str:
    """Digest of every ``harp_lib/extract/*.py``: a change to any backend's code is a cache miss."""
    if not _SOURCE:
        h = hashlib.sha256()
        for f in sorted((Path(__file__).resolve().parents[1] / "extract").glob("*.py")):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        _SOURCE.append(h.hexdigest())
    return _SOURCE[0]


def _to_json(v: Any) -> Any:
    """A JSON tree that :func:`_from_json` turns back into ``v`` exactly (tuples, numpy values kept).

    >>> v = {"primary": "Sad", "scores": {"Sad": np.float32(0.5)}, "spans": (1, [2.5, None])}
    >>> _from_json(json.loads(json.dumps(_to_json(v)))) == v
    True
    """
    if v is None or isinstance(v, (bool, str, int, float)) and not isinstance(v, np.generic):
        return v
    if isinstance(v, np.generic):
        return {"__np__": v.dtype.str, "v": v.item()}
    if isinstance(v, np.ndarray):
        return {"__nd__": v.dtype.str, "shape": list(v.shape), "v": v.ravel().tolist()}
    if isinstance(v, tuple):
        return {"__tuple__": [_to_json(x) for x in v]}
    if isinstance(v, list):
        return [_to_json(x) for x in v]
    if isinstance(v, Mapping):
        return {"__dict__": [[_to_json(k), _to_json(x)] for k, x in v.items()]}
    raise TypeError(f"hearing cache cannot store {type(v).__name__}")


def _from_json(v: Any) -> Any:
    if isinstance(v, list):
        return [_from_json(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "__np__" in v:
        return np.dtype(v["__np__"]).type(v["v"])
    if "__nd__" in v:
        return np.asarray(v["v"], dtype=np.dtype(v["__nd__"])).reshape(v["shape"])
    if "__tuple__" in v:
        return tuple(_from_json(x) for x in v["__tuple__"])
    return {_from_json(k): _from_json(x) for k, x in v["__dict__"]}


class DiskCache:
    """Results of the hearing backends under one folder, one JSON file per key digest.

    A key holds only content (file sha256s, windows, texts, backend identities), never a path or
    a time, so a DVC experiment's temporary copy of the data reuses what the workspace heard.
    Entries are plain JSON (never pickle: a cache folder is not trusted code); the stored
    ``repr`` of the key must match, and unreadable or foreign entries are misses.  Writes are
    atomic with a name unique to the writer.
    """

    def __init__(self, root: Path):
        self.root = Path(root)
        self.hits = self.misses = 0

    def _path(self, key: tuple) -> Path:
        d = hashlib.sha256(repr(key).encode()).hexdigest()
        return self.root / d[:2] / f"{d}.json"

    def get(self, key: tuple) -> tuple[bool, Any]:
        p = self._path(key)
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
            ok = isinstance(doc, dict) and doc.get("key") == repr(key)
            value = _from_json(doc["value"]) if ok else None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            ok = False
        if not ok:                  # unreadable, a digest collision or a foreign file: recompute
            self.misses += 1
            return False, None
        self.hits += 1
        return True, value

    def put(self, key: tuple, value: Any) -> None:
        p = self._path(key)
        try:
            text = json.dumps({"key": repr(key), "value": _to_json(value)}, sort_keys=True)
        except TypeError as e:      # a value JSON cannot hold: not cached, still answered
            log.warning("hearing cache: %s", e)
            return
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(p, text)
        except OSError as e:        # a read-only or full cache folder costs speed, never the answer
            log.warning("hearing cache %s not written (%s)", p, e)


def _disk_cache(cfg) -> Optional[DiskCache]:
    if cfg is None:
        return None
    sub = getattr(getattr(cfg, "agent", None), "hearing_cache", None)
    if not sub:
        return None
    root = Path(sub)
    return DiskCache(root if root.is_absolute() else repo_root() / root)


def merge_labels(dicts: Sequence[Mapping]) -> dict:
    """Left-to-right merge: a later labeler overwrites a key only with a non-None value."""
    out: dict = {}
    for d in dicts:
        for k, v in (d or {}).items():
            if v is not None or k not in out:
                out[k] = v
    return {k: v for k, v in out.items() if v is not None}


def _call_labeler(lab, wave: np.ndarray, sr: int, text: str = "") -> dict:
    for meth in ("label", "__call__"):
        f = getattr(lab, meth, None)
        if callable(f):
            try:
                return dict(f(wave, sr, text=text) or {})
            except TypeError:
                return dict(f(wave, sr) or {})
    f = getattr(lab, "label_batch", None)
    if callable(f):
        return dict((f([wave], sr) or [{}])[0] or {})
    raise BackendError(f"labeler {type(lab).__name__} has no label(wave, sr) method")


def _call_asr(asr, wave: np.ndarray, sr: int) -> str:
    for meth in ("transcribe", "__call__"):
        f = getattr(asr, meth, None)
        if callable(f):
            r = f(wave, sr)
            if isinstance(r, str):
                return r
            if isinstance(r, Mapping):
                return str(r.get("text", ""))
            if isinstance(r, (list, tuple)):
                return " ".join(str(getattr(w, "text", w.get("word", "") if isinstance(w, Mapping) else w))
                                for w in r)
            return str(getattr(r, "text", r))
    raise BackendError(f"asr {type(asr).__name__} has no transcribe(wave, sr) method")


class Hearing:
    """The offline labelers (and ASR) of one domain, applied to audio windows, cached.

    ``labelers`` / ``asr`` may be given directly (tests); otherwise they are built from
    ``cfg`` (``extract.backends.labelers.<domain>`` and ``extract.backends.asr``) on first use.
    ``available`` is False when no labeler can be built — callers then say so in the rationale.
    """

    def __init__(self, domain: str, cfg=None, *, labelers: Optional[list] = None, asr: Any = None,
                 sr: int = 16000):
        self.domain, self.cfg, self.sr = domain, cfg, sr
        self._labelers = labelers
        self._asr = asr
        self.problems: list[str] = []
        self.disk = _disk_cache(cfg) if labelers is None and asr is None else None
        self._specs: dict[str, str] = {}

    def _identity(self, which: str) -> tuple:
        """What decides a backend's output besides its input: names, options, model ids, code."""
        objs = self.labelers if which == "labelers" else [self.asr]
        return (which, self._specs.get(which, ""),
                tuple((type(o).__module__, type(o).__qualname__, str(getattr(o, "model_id", ""))) for o in objs),
                _extract_source_digest())

    def _cached(self, key: tuple, disk_key, compute):
        """In-process cache, then the disk cache (``disk_key()`` builds its content key), then ``compute()``."""
        if key in _CACHE:
            return _CACHE[key]
        if self.disk is not None:
            dk = disk_key()
            hit, value = self.disk.get(dk)
            if not hit:
                value = compute()
                self.disk.put(dk, value)
        else:
            value = compute()
        _CACHE[key] = value
        return value

    @property
    def labelers(self) -> list:
        if self._labelers is None:
            self._labelers = []
            names = []
            if self.cfg is not None:
                spec = self.cfg.extract.backends.labelers
                names = spec.get(self.domain, []) if isinstance(spec, Mapping) else list(spec)
            self._specs["labelers"] = repr([n if isinstance(n, str) else sorted(dict(n).items()) for n in names or []])
            for n in names or []:
                key = ("labeler", str(n))
                try:
                    if key not in _CACHE:
                        _CACHE[key] = create_backend("labeler", n)
                    self._labelers.append(_CACHE[key])
                except Exception as e:  # noqa: BLE001 - a missing optional backend is reported, not fatal
                    self.problems.append(f"labeler {n!r} unavailable ({e})")
        return self._labelers

    @property
    def asr(self):
        if self._asr is None and self.cfg is not None:
            n = self.cfg.extract.backends.asr
            self._specs["asr"] = repr(n if isinstance(n, str) or n is None else sorted(dict(n).items()))
            if n:
                key = ("asr", str(n))
                try:
                    if key not in _CACHE:
                        _CACHE[key] = create_backend("asr", n)
                    self._asr = _CACHE[key]
                except Exception as e:  # noqa: BLE001
                    self.problems.append(f"asr {n!r} unavailable ({e})")
                    self._asr = False
        return self._asr or None

    @property
    def available(self) -> bool:
        return bool(self.labelers)

    def _wave(self, path: Path, span: Optional[Span]) -> np.ndarray:
        if span is None:
            return audio.load(path, self.sr)
        return audio.read_window(path, span, self.sr)

    def label(self, path: Path, span: Optional[Span] = None, text: str = "") -> dict:
        """Merged labels of ``path`` (or one window of it); ``{}`` when no labeler is available."""
        if not self.labelers:
            return {}
        sp = span.to_tuple() if span else None
        key = ("label", self.domain, str(path), _mtime(path), sp, text,
               tuple(type(l).__name__ for l in self.labelers))

        def compute():
            w = self._wave(path, span)
            return merge_labels([_call_labeler(l, w, self.sr, text) for l in self.labelers]) if len(w) else {}
        return dict(self._cached(key, lambda: ("label", self.domain, _file_sha(path), sp, text, self.sr,
                                               self._identity("labelers")), compute))

    def label_spans(self, path: Path, spans: Sequence[Span], texts: Optional[Sequence[str]] = None,
                    groups: Optional[Sequence[Optional[str]]] = None) -> list[dict]:
        """Labels of several windows of one file, labelled *together*.

        Labelers with ``label_recording`` (e.g. the prosody labeler, which z-scores features
        within a recording) see all windows at once, so values are relative to each other —
        what a listener comparing the clips would hear.  Speakers are unknown (audio only);
        ``groups`` passes what *is* known about which windows belong together (e.g. the song
        clip of each evidence set) as the labeler's speaker/tag argument.
        """
        spans = list(spans)
        if not spans or not self.labelers:
            return [{} for _ in spans]
        texts = list(texts) if texts is not None else [""] * len(spans)
        groups = list(groups) if groups is not None else [None] * len(spans)
        sps = tuple(s.to_tuple() for s in spans)
        key = ("spans", self.domain, str(path), _mtime(path), sps, tuple(texts),
               tuple(groups), tuple(type(l).__name__ for l in self.labelers))

        def compute():
            waves = [self._wave(path, s) for s in spans]
            per: list[list[dict]] = []
            for lab in self.labelers:
                f = getattr(lab, "label_recording", None)
                if callable(f):
                    try:
                        per.append([dict(d or {}) for d in f(waves, self.sr, texts, groups)])
                        continue
                    except TypeError:
                        pass
                per.append([_call_labeler(lab, w, self.sr) if len(w) else {} for w in waves])
            return [merge_labels([p[i] for p in per]) for i in range(len(spans))]
        out = self._cached(key, lambda: ("spans", self.domain, _file_sha(path), sps, tuple(texts), tuple(groups),
                                         self.sr, self._identity("labelers")), compute)
        return [dict(d) for d in out]

    def label_against(self, clip: Path, baseline: Path, spans: Sequence[Span], *, clip_text: str = "",
                      texts: Optional[Sequence[str]] = None) -> dict:
        """Labels of a whole ``clip`` judged against windows of another file (a population baseline).

        Per-recording labelers (``label_recording``) normalise features within the batch, so a
        lone reference clip would only be compared with itself; pooling it with a few windows of
        the query's recording says how it sounds relative to ordinary speech there.
        """
        spans = list(spans)
        if not self.labelers:
            return {}
        if not spans or not all(callable(getattr(l, "label_recording", None)) for l in self.labelers):
            return self.label(clip, text=clip_text)
        texts = list(texts) if texts is not None else [""] * len(spans)
        sps = tuple(s.to_tuple() for s in spans)
        key = ("against", self.domain, str(clip), _mtime(clip), str(baseline), sps,
               clip_text, tuple(texts), tuple(type(l).__name__ for l in self.labelers))

        def compute():
            waves = [self._wave(clip, None)] + [self._wave(baseline, s) for s in spans]
            allt = [clip_text] + texts
            per = [lab.label_recording(waves, self.sr, allt, [None] * len(waves)) for lab in self.labelers]
            return merge_labels([p[0] for p in per])
        return dict(self._cached(key, lambda: ("against", self.domain, _file_sha(clip), _file_sha(baseline), sps,
                                               clip_text, tuple(texts), self.sr, self._identity("labelers")),
                                 compute))

    def transcribe(self, path: Path, span: Optional[Span] = None) -> str:
        """ASR text of ``path`` (or a window); "" when no ASR backend is available."""
        asr = self.asr
        if asr is None:
            return ""
        sp = span.to_tuple() if span else None
        key = ("asr", str(path), _mtime(path), sp, type(asr).__name__)

        def compute():
            w = self._wave(path, span)
            return _call_asr(asr, w, self.sr).strip() if len(w) > self.sr // 10 else ""
        return self._cached(key, lambda: ("asr", _file_sha(path), sp, self.sr, self._identity("asr")), compute)


def _mtime(p: Path) -> float:
    try:
        return Path(p).stat().st_mtime
    except OSError:
        return 0.0


def reference_label(ctx, role: str) -> Optional[str]:
    """The primary label the offline labeler hears in the query's ``role`` clip (or None)."""
    path = ctx.references.get(role)
    if path is None or ctx.hearing is None:
        return None
    try:
        text = ctx.hearing.transcribe(path) if ctx.domain == "emotion" else ""
        n = int(ctx.params.reference_baseline_segments or 0)
        segs = []
        if n > 0 and ctx.audio_path is not None and ctx.index is not None:
            try:
                allsegs = ctx.index.segments(ctx.recording.id)
            except Exception:  # noqa: BLE001
                allsegs = []
            if allsegs:
                step = max(1, len(allsegs) // n)
                segs = allsegs[::step][:n]
        if segs:
            lab = ctx.hearing.label_against(path, ctx.audio_path, [x.span for x in segs], clip_text=text,
                                            texts=[x.text for x in segs])
        else:
            lab = ctx.hearing.label(path, text=text)
    except Exception as e:  # noqa: BLE001 - unreadable clip: plan without the label
        log.warning("query %s: cannot label reference %s (%s)", ctx.query.query_id, path, e)
        return None
    prim = lab.get("primary")
    return prim if isinstance(prim, str) else None


def clip_info(ctx) -> str:
    """Text summary of the reference clips for the LLM planner prompt (§3.9), "" if nothing."""
    parts = []
    for role, path in ctx.references.items():
        if ctx.hearing is None:
            break
        bits = []
        if ctx.domain == "emotion" and role == "E":
            lab = ctx.hearing.label(path)
            if lab.get("primary"):
                sc = lab.get("scores") or {}
                top = ", ".join(f"{k}={float(v):.2f}" for k, v in sorted(sc.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
                bits.append(f"primary={lab['primary']}" + (f", scores={{{top}}}" if top else ""))
        if ctx.domain == "song":
            txt = ctx.hearing.transcribe(path)
            if txt:
                bits.append(f'lyrics="{txt}"')
        if bits:
            parts.append(f"[Snippet {role}] " + "; ".join(bits))
    return " | ".join(parts)
