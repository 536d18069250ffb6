"""JSONL files of records (:mod:`harp_lib.core.schema`): strict reading, atomic and appending
writes, and the repair and ownership checks of resumable runs.

Reading is strict: an unknown or missing field raises :class:`~harp_lib.core.record.SchemaError`
naming the file, the line and the field, so a typo in a manifest never turns into a silently empty
column.  Writing is atomic (:func:`write_jsonl`) or one fsynced line at a time (:func:`append_jsonl`);
a torn last line left by a killed run is cut off (:func:`repair_jsonl_tail`), and a file is written
into only when a harp stage wrote it (:func:`check_own_jsonl`).
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import stat
from pathlib import Path
from typing import Iterable, Iterator

from harp_lib.core.record import Record, SchemaError, T, _encode

__all__ = [
    "read_jsonl", "iter_jsonl", "write_jsonl", "append_jsonl", "repair_jsonl_tail", "drop_jsonl_rows",
    "check_run_fields", "check_own_jsonl", "reset_jsonl",
]


def _open_text(path: Path, mode: str, gz: bool | None = None):
    if (str(path).endswith(".gz") if gz is None else gz):
        return io.TextIOWrapper(gzip.open(path, mode.replace("t", "") + "b"), encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def iter_jsonl(path: str | os.PathLike, cls: type[T]) -> Iterator[T]:
    """Yield records of type ``cls`` from a JSONL file (``.gz`` allowed), lazily.

    Blank lines are skipped.  Any problem raises :class:`SchemaError` with file and line,
    including a repeated id (``cls.unique_field``: recording ``id``, ``query_id``, segment ``id``).
    """
    path = Path(path)
    key = getattr(cls, "unique_field", None)
    seen: dict[str, int] = {}
    if not path.exists():
        raise SchemaError(f"no such file (expected a JSONL file of {cls.__name__} records)", path=path)
    if path.is_dir():
        raise SchemaError(f"is a directory (expected a JSONL file of {cls.__name__} records)", path=path)
    opener = (lambda: gzip.open(path, "rb")) if str(path).endswith(".gz") else (lambda: open(path, "rb"))
    try:
        with opener() as fh:
            for lineno, raw in enumerate(fh, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise SchemaError(f"not UTF-8 text ({e.reason} at byte {e.start} of the line); "
                                      f"re-save the file as UTF-8", path=path, line=lineno) from None
                if lineno == 1:
                    line = line.removeprefix("\ufeff")          # a UTF-8 byte-order mark
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as e:
                    raise SchemaError(f"not valid JSON ({e.msg} at column {e.colno})",
                                      path=path, line=lineno) from None
                except (ValueError, RecursionError) as e:     # 5000-digit numbers, 10^5 nested lists
                    raise SchemaError(f"not valid JSON ({type(e).__name__}: {str(e)[:120]})",
                                      path=path, line=lineno) from None
                try:
                    rec = cls.from_dict(data)
                except SchemaError as e:
                    raise e.at(path, lineno) from None
                except (TypeError, ValueError, OverflowError, RecursionError) as e:
                    raise SchemaError(f"invalid {cls.__name__} ({type(e).__name__}: {str(e)[:120]})",
                                      path=path, line=lineno) from None
                if key:
                    v = getattr(rec, key)
                    if v in seen:
                        raise SchemaError(f"duplicate {key} {v!r} (first on line {seen[v]}); ids must be "
                                          f"unique within a manifest", path=path, line=lineno, field=key)
                    seen[v] = lineno
                yield rec
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise SchemaError(f"cannot read ({type(e).__name__}: {e})", path=path) from None


def read_jsonl(path: str | os.PathLike, cls: type[T]) -> list[T]:
    """Read every record of type ``cls`` from a JSONL file.

    >>> import tempfile, os
    >>> from harp_lib.core.schema import Segment
    >>> p = os.path.join(tempfile.mkdtemp(), "s.jsonl")
    >>> write_jsonl(p, [Segment("a", "r", 0, 1)])
    >>> [s.id for s in read_jsonl(p, Segment)]
    ['a']
    """
    return list(iter_jsonl(path, cls))


def _dumps(rec) -> str:
    data = rec.to_dict() if isinstance(rec, Record) else _encode(rec)
    return json.dumps(data, ensure_ascii=False, sort_keys=False, allow_nan=False)


def write_jsonl(path: str | os.PathLike, records: Iterable) -> None:
    """Write records atomically (:func:`harp_lib.core.atomic.atomic_write`), so a crash never leaves
    half a file."""
    from harp_lib.core.atomic import atomic_write  # light `import harp_lib`: core.atomic loads numpy

    def writer(tmp: Path):
        with _open_text(tmp, "wt", gz=str(path).endswith(".gz")) as fh:
            for rec in records:
                fh.write(_dumps(rec) + "\n")
    atomic_write(path, writer)


def append_jsonl(path: str | os.PathLike, records: Iterable) -> None:
    """Append records, one flushed and fsynced line each (for resumable runs).

    A torn last line left by a crash is repaired (dropped) before appending; a storage fault
    (full disk, size limit, ...) cuts the line it tore and raises
    :class:`harp_lib.core.atomic.StorageError`.
    """
    from harp_lib.core.atomic import IO_ERRNOS, storage_error  # light `import harp_lib`: core.atomic loads numpy
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_jsonl_tail(path)
        with open(path, "a", encoding="utf-8") as fh:
            for rec in records:
                fh.write(_dumps(rec) + "\n")
                fh.flush()
            os.fsync(fh.fileno())
    except OSError as e:
        if e.errno in IO_ERRNOS:
            try:
                repair_jsonl_tail(path)
            except OSError:
                pass
            raise storage_error(e, path) from e
        raise


def repair_jsonl_tail(path: str | os.PathLike) -> int:
    """Cut a torn last line (no trailing newline: a write killed midway) off an append-only
    JSONL file; returns the number of bytes dropped (0 when the file is whole or missing).

    Resuming readers call this before :func:`read_jsonl`, so a run killed while writing
    re-does that one record instead of failing on half a line.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.jsonl")
    >>> _ = open(p, "w").write('{"a": 1}\\n{"a": ')
    >>> repair_jsonl_tail(p), open(p).read()
    (6, '{"a": 1}\\n')
    """
    path = Path(path)
    if not path.exists() or not path.stat().st_size:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        size = fh.seek(0, os.SEEK_END)
        # scan back in blocks for the last newline (files can be large)
        pos, keep = size, 0
        while pos > 0:
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            i = fh.read(step).rfind(b"\n")
            if i >= 0:
                keep = pos + i + 1
                break
        fh.truncate(keep)
        return size - keep


def drop_jsonl_rows(path: str | os.PathLike, drop) -> tuple[list[dict], list[dict]]:
    """Remove the rows of a JSONL file for which ``drop(row)`` is true; returns ``(kept, dropped)``
    (rows as dicts).  Resuming runs use it to retry the rows that failed for a passing reason.

    Lines that are not JSON objects are kept as they are (not in ``kept``), for
    :func:`read_jsonl` to report with their line number; the file is rewritten atomically and
    only when something was dropped.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.jsonl")
    >>> _ = open(p, "w").write('{"a": 1}\\n{"a": 2}\\nnot json\\n')
    >>> drop_jsonl_rows(p, lambda r: r["a"] == 2), open(p).read()
    (([{'a': 1}], [{'a': 2}]), '{"a": 1}\\nnot json\\n')
    """
    path = Path(path)
    kept: list[dict] = []
    dropped: list[dict] = []
    lines: list[bytes] = []
    if not path.exists():
        return kept, dropped
    with open(path, "rb") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if isinstance(row, dict) and drop(row):
                dropped.append(row)
                continue
            lines.append(line)
            if isinstance(row, dict):
                kept.append(row)
    if dropped:
        from harp_lib.core.atomic import write_bytes  # light `import harp_lib`: core.atomic loads numpy
        write_bytes(path, b"".join(lines))
    return kept, dropped


def check_own_jsonl(path: str | os.PathLike, cls: type[T], **want) -> Path:
    """Refuse to write into ``path`` unless it is missing or a regular file of ``cls`` records
    (a torn last line allowed: a killed run), i.e. a file a harp stage wrote.  Guards
    ``--out`` / ``--no-resume`` against device files, symlinks, folders and other people's files.
    ``want`` (e.g. ``setup="A5", domain="clinical"``): every row must have these field values too
    (:func:`check_run_fields`), so another run's file is neither replaced nor extended.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.jsonl")
    >>> from harp_lib.core.schema import Segment
    >>> _ = open(p, "w").write("name: value\\n")
    >>> check_own_jsonl(p, Segment)
    Traceback (most recent call last):
    ...
    harp_lib.core.record.SchemaError: ...: line 1: not a Segment record (not valid JSON), so not a file written by harp; refusing to write into it (give a new file name)
    """
    path = Path(path)
    if not os.path.lexists(path):
        return path
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = ("symbolic link" if stat.S_ISLNK(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode)
                else "device or special file")
        raise SchemaError(f"is a {kind}, not a {cls.__name__} file written by harp; refusing to write "
                          f"into it (give a new file name)", path=path)
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    tail = lines[-1]                                   # after the last newline: empty, or a torn record
    first = dataclasses.fields(cls)[0].name
    if tail.strip() and not tail.startswith(f'{{"{first}": '.encode()):
        raise SchemaError(f"line {len(lines)}: not the start of a {cls.__name__} record, so not a file "
                          f"written by harp; refusing to write into it (give a new file name)", path=path)
    for i, line in enumerate(lines[:-1], 1):
        if not line.strip():
            continue
        try:
            cls.from_dict(json.loads(line))
        except (ValueError, TypeError, RecursionError) as e:
            why = "not valid JSON" if isinstance(e, json.JSONDecodeError) or not isinstance(e, SchemaError) \
                else str(e)
            raise SchemaError(f"line {i}: not a {cls.__name__} record ({why}), so not a file written by "
                              f"harp; refusing to write into it (give a new file name)", path=path) from None
    if want:                                           # and of this run (setup, domain), not another's
        check_run_fields(_complete_rows(path, cls), path, **want)
    return path


def check_run_fields(records: Iterable, path: str | os.PathLike, what: str = "file", **want) -> list:
    """``records`` (a list), after checking that each one's fields equal ``want`` (e.g.
    ``setup="A5", domain="clinical"``): a prediction file carries its setup and domain in every
    row, so a file written for another run (``harp infer --out`` onto another setup's file) is
    refused by every reader and writer instead of being read or extended as this run's.

    >>> from harp_lib.core.schema import Evidence, Plan, Prediction
    >>> p = Prediction("q1", "A3", "clinical", "r", "emotion_global", Plan(), Evidence(), "x")
    >>> check_run_fields([p], "A5.jsonl", setup="A5", domain="clinical")
    Traceback (most recent call last):
    ...
    harp_lib.core.record.SchemaError: A5.jsonl: line 1: field 'setup': a row of setup 'A3', expected 'A5': this file holds another run's rows (an --out of another setup or domain?); use the file of that run or a new file name
    """
    out = list(records)
    for i, r in enumerate(out, 1):
        for k, v in want.items():
            got = getattr(r, k)
            if got != v:
                raise SchemaError(f"a row of {k} {got!r}, expected {v!r}: this {what} holds another run's rows "
                                  f"(an --out of another setup or domain?); use the file of that run or a new "
                                  f"file name", path=path, line=i, field=k)
    return out


def _complete_rows(path: Path, cls: type[T]) -> list:
    """The complete (newline-terminated) records of a file :func:`check_own_jsonl` accepted."""
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")[:-1]
    return [cls.from_dict(json.loads(ln)) for ln in lines if ln.strip()]


def reset_jsonl(path: str | os.PathLike, cls: type[T]) -> None:
    """Start ``path`` over (``--no-resume``): after :func:`check_own_jsonl`, replace it
    atomically with an empty file -- never an unlink of a path harp did not write."""
    from harp_lib.core.atomic import write_bytes  # light `import harp_lib`: core.atomic loads numpy
    path = check_own_jsonl(path, cls)
    if path.exists():
        write_bytes(path, b"")
