"""The typed Intent of a question -- the one record every question path reads -- and the task names.

What fills it from the question text is :func:`harp_lib.tasks.read_question` (the rule reading,
each task's ``read``); :mod:`harp_lib.agent.llm_intent` fills it with an LLM under a grammar.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harp_lib.core.schema import QUERY_TYPE_DOMAIN

__all__ = ["UNSUPPORTED", "TASKS", "Intent"]

UNSUPPORTED = "unsupported"
#: The ten task names, in the schema's order.
TASKS: tuple[str, ...] = tuple(QUERY_TYPE_DOMAIN)


@dataclass(frozen=True)
class Intent:
    """What a question asks, read from its text only -- the one typed intent of every question
    path (the ten benchmark tasks and the question kinds about a user's own recording,
    :mod:`harp_lib.tasks.recording`).

    ``task`` is a registered task name (or ``unsupported``); ``polarity`` +1 / -1 (the higher or
    the lower side); ``dimension`` valence / arousal / dominance; ``times`` the time phrases
    (normalised for :func:`harp_lib.core.timespan.localize`); ``ordinals`` the positions named (songs,
    1-based, -1 the last); ``speakers`` the speakers named by order of first appearance (1-based,
    -1 the last); ``keywords`` the words to find in the transcript; ``absence`` a yes/no question
    framed as absence ("was the visit free of coughing?"); ``reason`` why this task.
    """
    task: str
    polarity: int = 1
    dimension: Optional[str] = None
    times: tuple[str, ...] = ()
    reason: str = ""
    absence: bool = False
    ordinals: tuple[int, ...] = ()
    speakers: tuple[int, ...] = ()
    keywords: tuple[str, ...] = ()

    @property
    def supported(self) -> bool:
        return self.task != UNSUPPORTED

    @property
    def speaker(self) -> Optional[int]:
        """The first speaker named (None: none)."""
        return self.speakers[0] if self.speakers else None

    @property
    def time(self) -> Optional[str]:
        """The first time phrase (None: none)."""
        return self.times[0] if self.times else None
