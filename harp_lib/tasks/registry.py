"""The task registry: ``register(cls)``, ``get(name)``, the benchmark query types in Table II order
(:func:`all_tasks`), the question kinds about a user's recording (:func:`question_kinds`) and the
rule reading of a question by the registered types (:func:`read_question`).

Kept apart from the concrete tasks so that they can register themselves on import without a
cycle (``tasks/__init__`` imports this module first, then the built-in task modules).
"""
from __future__ import annotations


from typing import Optional, Sequence

from harp_lib.core.schema import register_query_type, unregister_query_type
from harp_lib.core.errors import HarpError
from harp_lib.understand.intent import UNSUPPORTED, Intent
from harp_lib.understand.reading import Reading

__all__ = ["register", "unregister", "get", "names", "all_tasks", "question_kinds", "for_domain", "UnknownTaskError",
           "in_answer_space", "readers", "read_question"]

_TASKS: dict = {}


class UnknownTaskError(HarpError, KeyError):
    """A query type no task class is registered for."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown query type"


def register(cls):
    """Register a :class:`~harp_lib.tasks.base.Task` subclass (usable as a class decorator).

    Registering also adds the type to the query vocabulary of :mod:`harp_lib.core.schema`, so a
    ``Query`` of the new type validates.  A name can be registered once (``unregister`` first).
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls.__name__}: a task class needs a non-empty `name`")
    if name in _TASKS and type(_TASKS[name]) is not cls:
        raise ValueError(f"query type {name!r} is already registered by {type(_TASKS[name]).__name__}; "
                         f"call tasks.unregister({name!r}) first")
    bench = getattr(cls, "benchmark", True)
    for attr in ("domain", "column") if bench else ("domain",):
        if not getattr(cls, attr, None):
            raise ValueError(f"{cls.__name__} ({name}): set the class attribute `{attr}`")
    if bench:                      # a question kind about a user's recording is no benchmark query type
        register_query_type(name, cls.domain)
    _TASKS[name] = cls()
    return cls


def unregister(name: str) -> None:
    """Remove a registered type (tests registering toy types clean up with this)."""
    t = _TASKS.pop(name, None)
    if t is None or t.benchmark:
        unregister_query_type(name)


def get(name: str):
    """The task object of query type ``name``.

    >>> get("state").column, get("locate_hard").domain
    ('State', 'emotion')
    """
    try:
        return _TASKS[name]
    except KeyError:
        raise UnknownTaskError(f"unknown query type {name!r}: registered types are {names()} "
                               f"(add one with harp_lib.tasks.register)") from None


def all_tasks() -> list:
    """Every registered benchmark task, in Table II column order (``order``, then registration order)."""
    return sorted((t for t in _TASKS.values() if t.benchmark), key=lambda t: t.order)


def question_kinds() -> list:
    """The question kinds about a user's own recording (``benchmark = False``:
    :mod:`harp_lib.tasks.recording`), in the order :func:`~harp_lib.tasks.recording.understand`
    tries them (``order``)."""
    return sorted((t for t in _TASKS.values() if not t.benchmark), key=lambda t: t.order)


def names() -> tuple[str, ...]:
    """The registered query types in Table II order."""
    return tuple(t.name for t in all_tasks())


def for_domain(domain: str) -> list:
    """The tasks of one domain, in Table II order."""
    return [t for t in all_tasks() if t.domain == domain]


def in_answer_space(name: str, answer: str) -> bool:
    """Whether ``answer`` says something in the vocabulary of query type ``name`` (the task's
    own ``parse_decision``: a yes / no, an emotion, a choice, a direction, a time ...).  A
    refusal or prose says nothing: it is no answer (issue #28, class 8).

    >>> in_answer_space("state", "Happy"), in_answer_space("state", "I am sorry, I cannot help with that.")
    (True, False)
    """
    said = get(name).parse_decision(str(answer or ""))
    if isinstance(said, tuple):
        return any(v not in (None, [], ()) for v in said)
    return said not in (None, [], (), "")


def readers(domain: Optional[str] = None) -> list:
    """The benchmark tasks that read a question on a ``domain`` recording, in the order
    :func:`read_question` asks them: by ``read_order`` (then Table II order) within the domain; every
    domain in turn, in Table II order, when none is given.

    >>> [t.name for t in readers("song")], [t.name for t in readers()][:5]
    (['position', 'time', 'audio'], ['locate', 'locate_hard', 'comparison', 'change', 'state'])
    """
    tasks = all_tasks()
    domains = [domain] if domain else list(dict.fromkeys(t.domain for t in tasks))
    return [t for d in domains for t in sorted((t for t in tasks if t.domain == d), key=lambda t: t.read_order)]


def read_question(text: str, domain: Optional[str] = None, roles: Sequence[str] = ()) -> Intent:
    """The rule reading of a question (text, the recording's domain, the query's reference roles):
    the registered tasks of the domain (:func:`readers`) are asked in turn (``Task.read``), the
    first Intent wins; none: ``unsupported``, with the reason.  Never reads ``query_type``.

    >>> read_question("Between 1:30 and 3:00, who sounded sadder, speaker A or speaker B?", "emotion", ("A", "B")).task
    'comparison'
    >>> read_question("Can you actually hear the patient coughing?", "clinical").task
    'exhibited'
    >>> read_question("Was the consultation free of any audible coughing?", "clinical").absence
    True
    >>> read_question("Which song do you like less, the 2nd or the 5th?", "song").task
    'position'
    >>> read_question("Song A: [clip]. Song B: [clip]. Which one is worse?", "song", ("A", "B")).polarity
    -1
    >>> read_question("What is the capital of France?", "emotion").task
    'unsupported'
    """
    r = Reading(text, domain, roles)
    for task in readers(domain):
        found = task.read(r)
        if found is not None:
            return found
    return Intent(UNSUPPORTED, 1, r.dim, r.times,
                  f"no supported {domain or ''} question type fits: the rule agent answers which emotion / how a "
                  "dimension changed / which of two speakers / when an emotion occurred (emotion), whether "
                  "respiratory symptoms were reported or heard (clinical), and which of two songs is better (song)")
