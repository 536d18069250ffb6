"""One atomic writer for every data output, and I/O faults told apart from bad content.

:func:`atomic_write` writes to a temporary file ``<name>.<pid>-<random>.part`` in the target's own
folder (:func:`part_path`: unique to each writer, so two processes or threads writing one path never
rename each other's half-written file away), checks the result (``check``: size, array shape),
fsyncs it, then renames it over the target, so a reader only ever sees the old file or one
complete new one.  On any failure its own ``.part`` file is removed and the target is left as it
was.

A failing disk, a full disk, a file-size limit or a read-only / forbidden folder is not a fault
of the recording or query being processed: :func:`atomic_write` raises :class:`StorageError`
for those (``errno`` in :data:`IO_ERRNOS`, or a short write that came without an errno, as
numpy's ``N requested and M written`` on a full disk: ENOSPC when the disk has under 1 MiB free,
else EIO), and the stages stop the run with one message instead
of quarantining or recording an error per item.

>>> import tempfile, os, numpy as np
>>> d = tempfile.mkdtemp()
>>> write_json(os.path.join(d, "a.json"), {"b": 1})
>>> open(os.path.join(d, "a.json")).read()
'{"b": 1}'
>>> write_npy(os.path.join(d, "v.npy"), np.ones((2, 3)))
>>> np.load(os.path.join(d, "v.npy")).shape, sorted(os.listdir(d))
((2, 3), ['a.json', 'v.npy'])
"""
from __future__ import annotations

import errno
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from harp_lib.core.errors import HarpError

__all__ = ["IO_ERRNOS", "StorageError", "is_io_error", "storage_error", "atomic_write", "write_bytes",
           "write_text", "write_json", "write_npy", "part_path", "PART_RE", "drop_stale_parts"]

#: errnos meaning "the storage failed", not "this input is bad".
IO_ERRNOS = frozenset(e for e in (errno.ENOSPC, errno.EFBIG, errno.EACCES, errno.EROFS, errno.EIO,
                                  errno.EPERM, getattr(errno, "EDQUOT", None)) if e is not None)

_ADVICE = {
    errno.ENOSPC: "the disk is full: free space",
    errno.EFBIG: "a file-size limit was hit (ulimit -f / quota): raise it",
    errno.EACCES: "permission denied: fix the folder's permissions",
    errno.EPERM: "operation not permitted: fix the folder's permissions",
    errno.EROFS: "the file system is read-only: point params.yaml paths: at a writable folder",
    errno.EIO: "the disk reported an I/O error: check the storage",
}


class StorageError(HarpError, RuntimeError):
    """Writing or reading a data file failed because of the storage (full disk, size limit,
    permissions, read-only file system): the run stops, earlier outputs are kept."""
    fault = True                                   # the machine's, not the user's (``harp`` exit 1)

    def __init__(self, message: str, errno_: Optional[int] = None):
        super().__init__(message)
        self.errno = errno_


def is_io_error(exc: BaseException) -> bool:
    """True for a storage fault (:class:`StorageError`, or ``OSError`` with an errno of
    :data:`IO_ERRNOS`), whatever the item being processed."""
    if isinstance(exc, StorageError):
        return True
    return isinstance(exc, OSError) and exc.errno in IO_ERRNOS


def storage_error(exc: OSError, path=None) -> StorageError:
    """A :class:`StorageError` with one message naming the file, the fault and what to do."""
    if isinstance(exc, StorageError):
        return exc
    name = errno.errorcode.get(exc.errno, str(exc.errno))
    where = path or exc.filename or "a data file"
    advice = _ADVICE.get(exc.errno, "check the storage")
    return StorageError(f"cannot write {where}: {exc.strerror or exc} ({name}); {advice}, then re-run "
                        f"(outputs written before this one are kept)", exc.errno)


def part_path(path: os.PathLike | str) -> Path:
    """A fresh temporary name for one write of ``path``: same folder (so the final rename is atomic),
    ``<name>.<pid>-<8 hex>.part``, never the same for two writers or two calls.

    >>> a, b = part_path("/d/x.json"), part_path("/d/x.json")
    >>> a != b and a.parent == b.parent and a.name.startswith("x.json.") and a.suffix == ".part"
    True
    """
    p = Path(path)
    return p.with_name(f"{p.name}.{os.getpid()}-{secrets.token_hex(4)}.part")


#: what :func:`part_path` names look like (for tools that clean up after a killed writer)
PART_RE = r"\.(?P<pid>[0-9]+)-[0-9a-f]{8}\.part"


def atomic_write(path: os.PathLike | str, writer: Callable[[Path], Any], *,
                 check: Optional[Callable[[Path], None]] = None) -> None:
    """``writer(tmp)`` writes the new content to a temp file beside ``path``; then ``check(tmp)``
    (raise to refuse it), fsync and rename over ``path``.  The temp file never survives a
    failure; storage faults become :class:`StorageError`."""
    path = Path(path)
    tmp = part_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        drop_stale_parts(path)
        writer(tmp)
        if check is not None:
            check(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        _drop(tmp)
        if e.errno in IO_ERRNOS:
            raise storage_error(e, path) from e
        if e.errno is None:              # a short write without errno (numpy: "N requested and M written")
            raise storage_error(_short_write(e, path), path) from e
        raise
    except BaseException:
        _drop(tmp)
        raise


def drop_stale_parts(path: os.PathLike | str, *, locked: bool = False) -> list[Path]:
    """Remove the temporary files of ``path`` that a killed writer left behind: the old fixed name
    ``<name>.part`` and ``<name>.<pid>-<hex>.part`` whose process no longer runs on this machine.
    A live writer's file is never touched, unless ``locked``: the caller holds the lock of the
    folder, so no other writer can own one (a pid may be reused).  Returns what was removed.

    >>> import tempfile, os
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("a.json.part", "a.json.999999999-0123abcd.part", f"a.json.{os.getpid()}-0123abcd.part", "b.json.part"):
    ...     _ = (d / n).write_text("x")
    >>> [p.name for p in drop_stale_parts(d / "a.json")]
    ['a.json.999999999-0123abcd.part', 'a.json.part']
    >>> sorted(p.name for p in d.iterdir()) == [f"a.json.{os.getpid()}-0123abcd.part", "b.json.part"]
    True
    """
    path = Path(path)
    pat = re.compile(re.escape(path.name) + "(?:" + PART_RE + r"|\.part)")
    gone = []
    try:
        entries = [e.name for e in os.scandir(path.parent) if e.name.startswith(path.name)]
    except OSError:
        return gone
    for name in sorted(entries):
        m = pat.fullmatch(name)
        if m is None or (not locked and m.group("pid") is not None and _alive(int(m.group("pid")))):
            continue
        try:
            (path.parent / name).unlink()
            gone.append(path.parent / name)
        except OSError:
            pass
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):     # no such process (or not a valid pid at all)
        return False
    except PermissionError:                         # another user's live process
        return True
    return True


def _short_write(exc: OSError, path: Path) -> OSError:
    """An errno for a short write that came without one: ENOSPC when the file system of ``path``
    has (almost) no room left, else EIO."""
    try:
        st = os.statvfs(path.parent)
        full = st.f_bavail * st.f_frsize < (1 << 20)
    except OSError:
        full = False
    code = errno.ENOSPC if full else errno.EIO
    return OSError(code, f"{exc} (a short write: {os.strerror(code).lower()})", str(path))


def _drop(tmp: Path) -> None:
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass


def write_bytes(path: os.PathLike | str, data: bytes) -> None:
    """Write ``data`` atomically; the size on disk is checked."""
    def check(p: Path):
        if p.stat().st_size != len(data):
            raise StorageError(f"{path}: wrote {p.stat().st_size} of {len(data)} bytes")
    atomic_write(path, lambda p: p.write_bytes(data), check=check)


def write_text(path: os.PathLike | str, text: str) -> None:
    """Write UTF-8 ``text`` atomically."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path: os.PathLike | str, obj: Any, **dumps_kw) -> None:
    """``json.dumps(obj, **dumps_kw)`` written atomically (no trailing newline, as before)."""
    write_text(path, json.dumps(obj, **dumps_kw))


def write_npy(path: os.PathLike | str, arr: np.ndarray, dtype=np.float32) -> None:
    """Save a plain numeric array (``dtype``, no pickle) atomically; the file is read back
    (memory-mapped header) and its shape and dtype checked before it replaces ``path``."""
    a = np.asarray(arr, dtype=dtype) if dtype is not None else np.asarray(arr)   # memory order kept: same bytes as np.save

    def writer(p: Path):
        with open(p, "wb") as fh:
            np.save(fh, a, allow_pickle=False)

    def check(p: Path):
        try:
            back = np.load(p, mmap_mode="r", allow_pickle=False)
        except ValueError as e:
            raise StorageError(f"{path}: the written array is unreadable ({e})") from None
        if back.shape != a.shape or back.dtype != a.dtype:
            raise StorageError(f"{path}: wrote {back.shape} {back.dtype}, expected {a.shape} {a.dtype}")
        del back

    atomic_write(path, writer, check=check)
