"""Every error class of harp_lib derives from HarpError, and its ``fault`` flag decides the
``harp`` exit code (issue 39: one base instead of the CLI's list of module names)."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import harp_lib
from harp_lib.app.cli import is_fault, user_error_types
from harp_lib.core.errors import HarpError

#: Exceptions that never leave harp_lib: control flow inside one module, caught where raised.
INTERNAL = {"harp_lib.agent.answerer.NoAnswer"}


def harp_exceptions() -> dict[str, type]:
    out = {}
    for info in pkgutil.walk_packages(harp_lib.__path__, "harp_lib."):
        if info.name.endswith("__main__"):
            continue
        mod = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(mod, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__.startswith("harp_lib"):
                out[f"{mod.__name__}.{obj.__name__}"] = obj
    return out


def test_every_error_class_is_a_harp_error():
    found = harp_exceptions()
    assert len({id(c) for c in found.values()}) >= 20, sorted(found)
    assert sorted(k for k, c in found.items() if not issubclass(c, HarpError)
                  and f"{c.__module__}.{c.__name__}" not in INTERNAL
                  and not any(f"{m.__module__}.{m.__name__}" in INTERNAL for m in c.__mro__)) == []


def test_the_builtin_bases_are_kept():
    from harp_lib.core.record import SchemaError
    from harp_lib.evaluate.store import UnknownQueryError
    from harp_lib.corpora.datasets.common import SourceError
    assert issubclass(SchemaError, ValueError) and issubclass(UnknownQueryError, KeyError)
    assert issubclass(SourceError, FileNotFoundError)


def test_fault_decides_the_exit_code():
    from harp_lib.config import ConfigError
    from harp_lib.core.atomic import StorageError
    from harp_lib.core.locks import LockBusy
    from harp_lib.llm import LLMError
    from harp_lib.retrieval.index_errors import CorruptIndexInput, IndexError_
    faults = {c.__name__: is_fault(c("x")) for c in (StorageError, LLMError, CorruptIndexInput, IndexError_,
                                                     ConfigError, LockBusy)}
    assert faults == {"StorageError": True, "LLMError": True, "CorruptIndexInput": True, "IndexError_": False,
                      "ConfigError": False, "LockBusy": False}
    assert is_fault(PermissionError(13, "denied")) and not is_fault(FileNotFoundError(2, "no"))
    assert not is_fault(RuntimeError("a bug"))


def test_a_new_error_class_is_a_user_error_without_touching_the_cli():
    class NewStageError(HarpError, ValueError):
        pass
    assert isinstance(NewStageError("x"), user_error_types()) and not is_fault(NewStageError("x"))
    assert not isinstance(RuntimeError("a bug"), user_error_types())
