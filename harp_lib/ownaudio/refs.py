"""Reference clips (``harp ask --ref ROLE=CLIP``): checked and staged into a user collection.

A reference clip is a short example of a sound an answer compares with; :func:`_stage_ref`
checks it (length on the file's header first, then finite, non-silent samples) and copies it
once, as 16 kHz mono, into ``<collection>/<domain>/refs/<sha>.wav``
(:mod:`harp_lib.ownaudio.collection`; the conversion is :mod:`harp_lib.ownaudio.ingest`'s).
"""
from __future__ import annotations

import os
from pathlib import Path

from harp_lib.core import audio
from harp_lib.core.hashing import file_sha256
from harp_lib.core.schema import REFERENCE_ROLES
from harp_lib.ownaudio.collection import UserCollection, UserDataError
from harp_lib.ownaudio.ingest import SR, _convert, _why

#: Reference clips (``--ref ROLE=CLIP``) are short examples of a sound: at most this long (checked on
#: the file's header, before anything is read or copied) ...
MAX_REF_SEC = 60.0
#: ... and at least this long (seconds).
MIN_REF_SEC = 0.3


def _check_ref_samples(role: str, src: str, p: Path, dur: float) -> None:
    """A reference clip must hold a comparable sound: at least :data:`MIN_REF_SEC`, finite samples
    (:func:`harp_lib.core.audio.load` refuses NaN / inf), not digital silence."""
    if dur < MIN_REF_SEC:
        raise UserDataError(f"--ref {role}={src}: the clip is {dur:.2f} s long; reference clips need at least "
                            f"{MIN_REF_SEC} s of sound to compare with")
    try:
        wave = audio.load(p, sr=SR)
    except audio.AudioError as e:
        raise UserDataError(f"--ref {role}={src}: {_why(e, p)}") from None
    if not len(wave) or float(abs(wave).max()) == 0.0:
        raise UserDataError(f"--ref {role}={src}: the clip is silent (all samples 0): nothing to compare with")


def _stage_ref(col: UserCollection, domain: str, role: str, src: str) -> tuple[str, str]:
    """Copy a reference clip into ``<domain>/refs/<sha>.wav`` (16 kHz mono); returns (rel path, sha)."""
    p = Path(os.path.expanduser(src)).resolve()
    if role not in REFERENCE_ROLES:
        raise UserDataError(f"--ref {role}={src}: unknown role {role!r} (roles: {', '.join(REFERENCE_ROLES)})")
    if not p.is_file():
        raise UserDataError(f"--ref {role}={src}: no such audio file")
    try:
        dur = audio.probe(p).duration
    except audio.AudioError as e:
        raise UserDataError(f"--ref {role}={src}: not a readable audio file ({_why(e, p)})") from None
    if dur > MAX_REF_SEC:                  # checked on the header: nothing is read or copied first
        raise UserDataError(f"--ref {role}={src}: the clip is {dur:.1f} s long; reference clips are at most "
                            f"{MAX_REF_SEC:.0f} s (cut out the part you mean, e.g. ffmpeg -ss START -t 10 -i CLIP "
                            f"clip.wav)")
    _check_ref_samples(role, src, p, dur)
    sha = file_sha256(p)
    dst = col.bench_dir(domain) / "refs" / f"{sha[:20]}.wav"
    if not dst.exists():
        _convert(p, dst)
    return f"refs/{dst.name}", sha
