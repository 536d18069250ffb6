"""Query types: one :class:`~harp_lib.tasks.base.Task` per type, and the registry.

Everything that depends on the query type -- the rule reading of its questions, typed ground truth
and judge info, domain, Table II column, decision parser, rule answer, rule verdict, oracle windows,
human-study input, question templates -- is a method or attribute of that type's task class, and
every stage looks it up::

    from harp_lib import tasks
    tasks.get(query.query_type).verdict(query, decision, tol=3.0)
    [t.column for t in tasks.all_tasks()]          # Table II order
    tasks.read_question(query.text, query.domain, tuple(query.references)).task   # from the text only

Adding a query type is one new class (anywhere) decorated with :func:`register`; see
docs/architecture.md "Adding a query type".

>>> names()[:3], len(names())
(('state', 'change', 'comparison'), 10)
"""
from __future__ import annotations

from harp_lib.tasks.base import Task, TypedRecord  # noqa: F401
from harp_lib.tasks.registry import (UnknownTaskError, all_tasks, for_domain, get, names, question_kinds,  # noqa: F401
                                     read_question, readers, register, unregister)
from harp_lib.tasks import emotion, clinical, song  # noqa: F401,E402  (the ten built-in types register on import)
from harp_lib.tasks import recording, song_kinds, speech_kinds  # noqa: F401,E402  (the question kinds about a user's recording)

__all__ = ["Task", "TypedRecord", "UnknownTaskError", "register", "unregister", "get", "names",
           "all_tasks", "question_kinds", "for_domain", "readers", "read_question"]
