"""Question kinds about what is said and heard in a user's own speech recording, written the way
people ask (issue 40):

* ``speaker_said`` -- "What does the second speaker say about lemons?": the first mention by that
  speaker, with its time and the words of the turn;
* ``say_count`` -- "How many times does someone say hello?": occurrences in the transcript;
* ``last_said`` -- "What is the last thing said?" (or the first): the words and who said them.

All of them read what extraction found (:class:`~harp_lib.tasks.recording.Facts`): the words ASR
placed in time (``custom["words"]`` of each segment), each given to the diarizer turn it falls in,
and the segment labels.  They never answer from a guess: no words or no such speaker is
``cannot answer this`` with the reason.

>>> from harp_lib.tasks.recording import understand
>>> understand("How many times does someone say hello?", "emotion").keywords
('hello',)
"""
from __future__ import annotations

import re
from typing import NamedTuple, Optional, Sequence

from ..agent.intent import Intent, time_mentions
from ..timespan import format_time
from .recording import SPEECH, Facts, QuestionKind, Reply, _keywords, _speaker_ref, speakers_in_order
from .registry import register

__all__ = ["Word", "words_of"]

class Word(NamedTuple):
    """One recognised word: lower-case token, ``[start, end)`` s, the speaker of the diarizer turn
    it falls in (else its segment's), and its segment."""
    tok: str
    start: float
    end: float
    speaker: Optional[str]
    seg: object


def _norm(w: str) -> str:
    return re.sub(r"[^a-z0-9']", "", w.lower()).strip("'")


def words_of(facts: Facts) -> list[Word]:
    """Every recognised word in time order (a segment without word times gives its text's words at
    its start)."""
    turns = sorted(facts.turns, key=lambda t: t.start)
    out = []
    for s in sorted(facts.segments, key=lambda s: s.start):
        ws = (s.custom or {}).get("words") or [(w, s.start, s.start) for w in (s.text or "").split()]
        for w, a, b in ((str(x[0]), float(x[1]), float(x[2])) for x in ws):
            mid = (a + b) / 2
            t = next((t for t in turns if t.start <= mid <= t.end and t.speaker), None)
            tok = _norm(w)
            if tok:
                out.append(Word(tok, a, b, t.speaker if t else s.speaker, s))
    return out


def _same(tok: str, w: str) -> bool:
    """``tok`` is the word ``w``, its plural or possessive ("hello", "hellos", "chicago's")."""
    return tok == w or tok in (w + "s", w + "es", w + "'s")


def _phrase_hits(words: Sequence[Word], phrase: Sequence[str]) -> list[int]:
    """Indices in ``words`` where ``phrase`` starts (consecutive tokens)."""
    n = len(phrase)
    return [i for i in range(len(words) - n + 1) if all(_same(words[i + j].tok, phrase[j]) for j in range(n))]


def _turn_at(facts: Facts, t: float):
    return next((x for x in facts.turns if x.start <= t <= x.end), None)


def _said(facts: Facts, w: Word) -> tuple[object, str]:
    """The turn (else segment) holding word ``w`` and its words."""
    turn = _turn_at(facts, (w.start + w.end) / 2)
    if turn is not None and (turn.text or "").strip():
        return turn, turn.text
    return w.seg, w.seg.text


def _speaker(n: Optional[int], facts: Facts) -> tuple[Optional[str], Optional[str]]:
    """(the diarized label of speaker ``n`` in order of first appearance, None) or (None, why not)."""
    order = speakers_in_order(facts.turns)
    if n is None or n == 0 or n < -1 or n > len(order):
        return None, f"diarization found {len(order)} speaker(s); there is no speaker {n}"
    return (order[-1] if n == -1 else order[n - 1]), None


# ----------------------------------------------------------------------------- words
@register
class SpeakerSaid(QuestionKind):
    name, order, domains = "speaker_said", 29, SPEECH
    example = "What does the second speaker say about lemons?"

    def parse(self, text, low):
        spk = _speaker_ref(low)
        if spk is None or time_mentions(text) or not re.search(
                r"\b(say|says|said|mention|mentions|mentioned|talk(?:s|ed)? about|discuss\w*|bring|brings)\b", low):
            return None
        words = _keywords(text)
        if words and re.search(r"\b(what|when|where|does|did|do)\b", low):
            return Intent(self.name, speakers=(spk,), keywords=words, reason=f"asks what speaker {spk} says about "
                                                                             f"{' '.join(words)}")
        return None

    def reply(self, it, facts):
        n, kw = it.speaker, list(it.keywords)
        plan = (f"full recording · keyword tool: {' '.join(kw)} in speaker {n}'s words (diarization + ASR)",)
        spk, why_not = _speaker(n, facts)
        if why_not:
            return self.cannot(why_not, plan)
        ws = words_of(facts)
        hits = [ws[i] for w in kw for i in _phrase_hits(ws, [w])]
        mine = sorted((h for h in hits if h.speaker == spk), key=lambda h: h.start)
        if not mine:
            others = sorted(hits, key=lambda h: h.start)
            why = f"No word of {spk} (speaker {n} in order of appearance) is {' / '.join(kw)} (offline ASR can miss words)"
            if others:
                why += f"; {others[0].speaker} says it at {format_time(others[0].start)} ({others[0].start:.1f} s)"
            return Reply(plan, tuple(_said(facts, h)[0] for h in others[:1]), "not found", why + ".", None)
        h = mine[0]
        row, said = _said(facts, h)
        more = len({round(x.start, 1) for x in mine}) - 1
        why = (f"{spk} (speaker {n} in order of appearance) says \"{said}\" in {format_time(row.start)}–"
               f"{format_time(row.end)}; the word is at {format_time(h.start)} ({h.start:.1f} s)"
               + (f"; {spk} says it {more} more time(s)" if more else "") + ".")
        return Reply(plan, (row,), f"{format_time(h.start)} ({h.start:.1f} s): \"{said}\"", why, round(h.start, 2))


@register
class SayCount(QuestionKind):
    name, order, domains = "say_count", 48, SPEECH
    example = "How many times does someone say hello?"

    def parse(self, text, low):
        if re.search(r"\bhow (?:many times|often)\b", low) and re.search(
                r"\b(say|says|said|mention|mentions|mentioned|word|spoken|used)\b", low):
            words = _keywords(text)
            if words:
                spk = _speaker_ref(low)
                return Intent(self.name, keywords=words, speakers=() if spk is None else (spk,),
                              reason=f"asks how often {' '.join(words)} is said")
        return None

    def reply(self, it, facts):
        phrase = [w.lower() for w in it.keywords]
        ws = words_of(facts)
        plan = (f"full recording · keyword tool: every \"{' '.join(phrase)}\" in the transcript",)
        if not ws:
            return self.cannot("ASR recognised no words in this recording", plan)
        where = ""
        if it.speaker is not None:
            spk, why_not = _speaker(it.speaker, facts)
            if why_not:
                return self.cannot(why_not, plan)
            ws, where = [w for w in ws if w.speaker == spk], f" by {spk}"
        hits = [ws[i] for i in _phrase_hits(ws, phrase)]
        times = ", ".join(f"{format_time(h.start)} ({h.speaker})" for h in hits[:12])
        why = (f"\"{' '.join(phrase)}\" occurs {len(hits)} time(s) in the transcript{where} ({len(ws)} words)"
               + (f": {times}" if hits else "") + ". Offline ASR can miss or mishear a word.")
        rows = list({id(r): r for r in (_said(facts, h)[0] for h in hits)}.values())
        return Reply(plan, tuple(rows[:6]), str(len(hits)), why, len(hits))


@register
class LastSaid(QuestionKind):
    name, order, domains = "last_said", 55, SPEECH
    example = "What is the last thing said?"

    def parse(self, text, low):
        m = re.search(r"\bwhat(?:'s| is| was| are| were)?\s+the\s+(?:very\s+)?(last|final|first|opening|closing)\s+"
                      r"(?:thing|things|words?|sentence|line|remark)\b", low) or \
            re.search(r"\bwhat(?:'s| is| was)? (?:said|spoken|heard) (last|first)\b", low)
        if m and not time_mentions(text):
            first = m.group(1) in ("first", "opening")
            spk = _speaker_ref(low)
            return Intent(self.name, ordinals=(1 if first else -1,), speakers=() if spk is None else (spk,),
                          reason=f"asks for the {'first' if first else 'last'} thing said")
        return None

    def reply(self, it, facts):
        first = bool(it.ordinals) and it.ordinals[0] == 1
        pool = sorted((t for t in facts.turns if (t.text or "").strip()), key=lambda t: t.start) or \
            sorted((s for s in facts.segments if (s.text or "").strip()), key=lambda s: s.start)
        plan = ("full recording · diarization turns with their words (ASR), in time order",)
        if it.speaker is not None:
            spk, why_not = _speaker(it.speaker, facts)
            if why_not:
                return self.cannot(why_not, plan)
            pool = [t for t in pool if t.speaker == spk]
        if not pool:
            return self.cannot("ASR recognised no words in this recording", plan)
        s = pool[0] if first else pool[-1]
        why = (f"The {'first' if first else 'last'} turn with recognised words is {s.speaker}'s, "
               f"{format_time(s.start)}–{format_time(s.end)} ({s.start:.1f}-{s.end:.1f} s): \"{s.text}\".")
        return Reply(plan, (s,), f"\"{s.text}\" ({s.speaker}, {format_time(s.start)}–{format_time(s.end)})", why,
                     {"start": round(s.start, 2), "end": round(s.end, 2), "speaker": s.speaker, "text": s.text})
