"""One lock per data folder and stage, and worker processes that die with their parent.

:func:`stage_lock` takes an exclusive ``flock`` on ``<parent>/.locks/<folder>.<stage>.lock``
(:meth:`harp_lib.core.paths.DataPaths.lock`, beside the folder so DVC-tracked outputs never hold
it) for as long as a stage writes into the folder.  A second ``harp extract`` / ``index`` /
``infer`` / ``judge`` on the same folder prints who holds it (pid and command) and waits, or,
with ``wait=False``, raises :class:`LockBusy` naming the holder.  The kernel releases the lock
when its holder exits, however it exits, so a killed run never leaves a stale lock; a run that
ends clears the holder line (the folder's bytes do not depend on which process ran).

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp()) / "clinical"
>>> with stage_lock(d, "extract") as lp:
...     lp.name, lp.parent.name, lp.read_text().startswith("pid ")
('clinical.extract.lock', '.locks', True)
>>> lp.read_text()          # released: the holder line is gone, so the file is the same for every run
''
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

from harp_lib.core.paths import DataPaths
from harp_lib.core.errors import HarpError

__all__ = ["LockBusy", "stage_lock", "lock_holder", "die_with_parent"]


class LockBusy(HarpError, RuntimeError):
    """Another run holds the lock of a data folder and stage."""


def lock_holder(lock_path: os.PathLike | str) -> str:
    """What the holder wrote into the lock file: ``pid <n>: <command>`` (or ``unknown``)."""
    try:
        return Path(lock_path).read_text(encoding="utf-8").strip() or "unknown"
    except OSError:
        return "unknown"


@contextlib.contextmanager
def stage_lock(folder: os.PathLike | str, stage: str, *, wait: bool = True,
               timeout: Optional[float] = None, poll: float = 0.2,
               lock_path: Optional[os.PathLike | str] = None) -> Iterator[Path]:
    """Hold the lock of ``folder`` for ``stage`` inside the ``with`` block (yields its path).

    ``lock_path`` replaces the default lock file (a file the user named as output is locked by
    a dot-file beside it, not by one in a folder above it).

    Busy: with ``wait`` print one line naming the holder to stderr and wait (up to ``timeout``
    seconds, then :class:`LockBusy`); without, raise :class:`LockBusy` at once.
    """
    lp = Path(lock_path) if lock_path is not None else DataPaths.lock(folder, stage)
    lp.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lp, os.O_RDWR | os.O_CREAT, 0o644)
    held = False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(lp)
            msg = (f"{folder} is in use by another harp {stage} ({holder}; lock {lp})")
            if not wait:
                raise LockBusy(f"{msg}: wait for it to finish or stop it, then re-run") from None
            print(f"harp {stage}: {msg}; waiting for it to finish", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if timeout is not None and time.monotonic() - t0 > timeout:
                        raise LockBusy(f"{msg}: still held after {timeout:.0f} s") from None
                    time.sleep(poll)
        held = True
        _write_holder(fd)
        yield lp
    finally:
        if held:                         # a finished run leaves an empty file: no stale holder, and
            os.ftruncate(fd, 0)          # the folder's bytes do not depend on which process ran
        os.close(fd)                     # closing the descriptor releases the flock


def _write_holder(fd: int) -> None:
    """Write ``pid <n>: <command>`` into the held lock file, best effort: the flock is the lock,
    the line only names the holder to a waiting run.  On a full disk the line is left out (a
    waiting run says ``unknown``) and the stage goes on to fail on its own output, whose error
    names the output path, not the lock file's."""
    os.ftruncate(fd, 0)
    try:
        os.pwrite(fd, f"pid {os.getpid()}: {' '.join(sys.argv) or sys.executable}\n".encode(), 0)
    except OSError:
        os.ftruncate(fd, 0)


# ------------------------------------------------------------------------- workers
_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Make this (worker) process die when its parent dies, even by SIGKILL.

    Linux: ``prctl(PR_SET_PDEATHSIG)``; elsewhere, and as a second guard, a daemon thread that
    exits the process when the parent pid changes (the worker was re-parented).  Use it as (or
    in) a process pool's ``initializer``.
    """
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:           # the parent died before prctl took effect
        os._exit(1)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)
    threading.Thread(target=watch, name="harp-parent-watchdog", daemon=True).start()


def pool_worker_init() -> None:
    """``initializer`` of the pipeline's process pools: the worker dies with its parent
    (:func:`die_with_parent`) and runs one torch thread (the workers are the parallelism: two
    workers with two intra-op threads each oversubscribe a 2-core machine)."""
    die_with_parent()
    import torch  # heavy: torch (~1.2 s)
    torch.set_num_threads(1)
