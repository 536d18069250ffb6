"""Question kinds about a user's own recording, in the same registry as the ten benchmark tasks.

Each kind is one :class:`QuestionKind` (a :class:`~harp_lib.tasks.base.Task` with
``benchmark = False``: no Table II column, no ground truth, no judge) holding, in one place,

* ``parse(text, low)`` -- the question's fields as an :class:`~harp_lib.understand.intent.Intent`
  (None: not this kind);
* ``reply(intent, facts)`` -- the evidence plan and the answer rule on what extraction found
  (:class:`Facts`: the segments, the diarizer's turns, the duration), as a :class:`Reply`.

:func:`understand` is the one classifier of ``harp ask`` and the explorer: the question kinds
first (in ``order``; only without reference clips), then the benchmark tasks
(:func:`harp_lib.tasks.read_question`).  A question neither reads is ``unsupported`` with a
reason; a kind whose data this recording lacks answers ``cannot answer this: <why>``.  The song
kinds live in :mod:`harp_lib.tasks.song_kinds`, the words / emotions / sounds kinds in
:mod:`harp_lib.tasks.speech_kinds`; a kind may leave a question to the benchmark tasks on some
domains (:meth:`QuestionKind.accepts`: coughs on a clinical recording).

>>> understand("Where does someone mention tomatoes?", "emotion").task, understand("Where does someone mention tomatoes?", "emotion").keywords
('when_said', ('tomatoes',))
>>> understand("What's being said around the 1:40 mark?", "emotion").times
('around 100 seconds',)
>>> understand("When does the last song start?", "song").ordinals
(-1,)
>>> understand("Which song is better, the 2nd or the 5th?", "song").task
'position'
"""
from __future__ import annotations

import re
from typing import ClassVar, Optional, Sequence

from harp_lib.understand.intent import Intent
from harp_lib.understand.time_words import normalize_numbers, time_mentions
from harp_lib.understand.typos import expand_slang
from harp_lib.core.schema import Segment
from harp_lib.core.timespan import LocalizeError, format_time, localize
from harp_lib.tasks.base import Task
from harp_lib.tasks.facts import Facts, Reply
from harp_lib.tasks.soundalike import heard_as
from harp_lib.tasks.registry import get, question_kinds, read_question, register
from harp_lib.tasks.words import _phrase_hits, words_of

__all__ = ["CANNOT", "Facts", "Reply", "QuestionKind", "understand", "answer_kind", "window", "speakers_in_order"]

#: The answer of a question whose kind is known but whose data this recording lacks.
CANNOT = "cannot answer this"
SPEECH = ("emotion", "clinical")
_WHO = r"(?:speaker|voice|person|talker|participant)"
_ORD_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
              "eighth": 8, "ninth": 9, "tenth": 10, "last": -1, "final": -1}
_ORD_RE = r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|final|\d+(?:st|nd|rd|th))"
_WHEN = r"\bwhen\b|\bwhere\b|\bat what (?:time|point)\b|\bwhat time\b|\bhow far in(?:to)?\b|\bfind\b"
_SAY = (r"\b(say|says|said|saying|mention|mentions|mentioned|talk(?:s|ed|ing)?|discuss\w*|bring|brings|brought|"
        r"word)\b")
_STOP = frozenset("the a an and or of to in on at for is was were be it this that with as by from about did does "
                  "do their they them he she his her its our your my when what which who how while than then "
                  "there here first time recording someone anyone somebody anybody say says said mention mentioned "
                  "spoken times come comes appear appears occur occurs used heard something anything nothing "
                  "everything stuff thing things words last".split())


def speakers_in_order(turns: Sequence[Segment]) -> list[str]:
    """Speaker labels in order of first appearance."""
    return list(dict.fromkeys(s.speaker for s in sorted(turns, key=lambda s: s.start) if s.speaker))


def _ordinal(word: str) -> int:
    return _ORD_WORDS.get(word) or int(re.match(r"\d+", word).group(0))


_NUM_NAMES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _speaker_ref(low: str) -> Optional[int]:
    """The speaker a question names: "the second speaker", "speaker 2", "speaker B", "the other one"."""
    m = re.search(rf"\b(?:the\s+)?{_ORD_RE}\s+(?:new\s+|other\s+)?{_WHO}\b", low)
    if m:
        return _ordinal(m.group(1))
    m = re.search(rf"\b{_WHO}\s+(?:number\s+|no\.?\s*|#)?(\d+|[a-h]|{'|'.join(_NUM_NAMES)})\b", low)
    if m:
        v = m.group(1)
        return int(v) if v.isdigit() else _NUM_NAMES.get(v) or ord(v) - ord("a") + 1
    if re.search(r"\b(other|second|another)\s+(one|voice|person)\b", low):
        return 2
    return None


def _keywords(text: str) -> tuple[str, ...]:
    """What to look for in the transcript: the quoted words, else the words after "mention" / "say"."""
    m = re.search(r"[\"“'‘]([^\"”'’]{2,})[\"”'’]", text)
    src = m.group(1) if m else None
    if src is None:
        m = re.search(r"\b(?:say|says|said|mention|mentions|mentioned|talk(?:s|ed)? about|discuss(?:es|ed)?|"
                      r"bring(?:s)? up|word)\s+(.+?)[?.!]*$", text, re.I)
        src = m.group(1) if m else ""
    if not src.strip(" ?.!"):          # "Where is (where's) Chicago mentioned?": the words before the verb
        m = re.search(r"(?:\b(?:is|are|was|were|does|do|did|gets?|got)|\b(?:when|where)['’]s)\s+(.+?)\s+"
                      r"(?:ever\s+|first\s+)?(?:mentioned|"
                      r"said|spoken|discussed|brought up|talked about|named)\b", text, re.I) or \
            re.search(r"\b(?:many times|often)\s+(?:the\s+word\s+)?(.+?)\s+(?:is|are|was|were|gets?|got)\s+(?:mentioned|"
                      r"said|spoken|used|heard)\b", text, re.I)   # "how many times hello is said"
        src = m.group(1) if m else ""
    return tuple(w for w in re.findall(r"[a-z']+", src.lower()) if w not in _STOP and len(w) > 2)


def _song_ordinals(low: str) -> tuple[int, ...]:
    """Songs named by position: "the 3rd song", "track 13", "the last one", "the opening / closing track"."""
    s = re.sub(r"\b(?:opening|very first)\s+(song|track|piece|tune)", r"first \1", normalize_numbers(low))
    s = re.sub(r"\b(?:closing|final)\s+(song|track|piece|tune)", r"last \1", s)
    found = [(m.start(), _ordinal(m.group(1))) for m in
             re.finditer(rf"\b{_ORD_RE}\s+(?:songs?|tracks?|pieces?|tunes?|ones?)\b", s)]
    found += [(m.start(), int(m.group(1))) for m in
              re.finditer(r"\b(?:song|track|piece|tune)\s+(?:no\.?\s*|number\s+|#)?(\d+)\b", s)]
    return tuple(n for _, n in sorted(found))


class QuestionKind(Task):
    """A question kind about a user's own recording (register the subclass with
    :func:`harp_lib.tasks.register`): its fields (:meth:`parse`) and answer rule (:meth:`reply`)."""
    benchmark: ClassVar[bool] = False
    domain: ClassVar[str] = "recording"
    #: the pipelines whose questions it reads (a song question on a speech recording is still
    #: parsed, and answered "cannot answer this")
    domains: ClassVar[tuple[str, ...]] = ("emotion", "clinical", "song")
    #: an example question (docs, the unsupported-question help)
    example: ClassVar[str] = ""

    def parse(self, text: str, low: str) -> Optional[Intent]:
        """The question's fields when it is this kind (``low``: lower-case, spaces collapsed)."""
        raise NotImplementedError

    def reply(self, it: Intent, facts: Facts) -> Reply:
        """The evidence plan and the answer on the extracted ``facts``."""
        raise NotImplementedError

    def needs(self, facts: Facts) -> Optional[str]:
        """Why this recording's extraction cannot answer the kind (None: it can)."""
        if facts.domain == "song" and "song" not in self.domains:
            return "the song pipeline finds songs, not speakers or words; ingest the file with --domain speech"
        if facts.domain != "song" and self.domains == ("song",):
            return (f"the {facts.domain} pipeline finds speakers and words, not songs; ingest the file with "
                    f"--domain song")
        if not facts.segments:
            return "extraction found no segments in this recording"
        return None

    def accepts(self, it: Intent, domain: Optional[str]) -> bool:
        """Whether :func:`understand` takes this kind's reading of a question on a ``domain`` recording
        (False: the question goes on to the benchmark tasks, e.g. coughs on a clinical one)."""
        return True

    def cannot(self, why: str, plan: Sequence[str] = ()) -> Reply:
        return Reply(tuple(plan), (), CANNOT, f"{CANNOT}: {why}.", None)


def understand(text: str, domain: Optional[str] = None, roles: Sequence[str] = ()) -> Intent:
    """The one classifier of a free-text question: a question kind about the recording (only
    without reference clips), else a benchmark task (:func:`~harp_lib.tasks.read_question`),
    else ``unsupported`` with the reason.  Chat spellings ("wat", "ppl") are read as the words
    (:func:`~harp_lib.understand.typos.expand_slang`)."""
    text = expand_slang(str(text))
    low = " ".join(text.lower().split())
    if not roles:
        for kind in question_kinds():
            it = kind.parse(text, low)
            if it is not None and kind.accepts(it, domain):
                return it
    return read_question(text, domain, tuple(roles))


def window(it: Intent, duration: float):
    """The time span of the question's first time phrase (a point widened by 0.5 s)."""
    return localize(it.time, duration, point_window=0.5)


# ----------------------------------------------------------------------------- speakers
@register
class SpeakerCount(QuestionKind):
    name, order, domains = "n_speakers", 10, SPEECH
    example = "How many speakers are there?"

    def parse(self, text, low):
        if re.search(rf"\b(?:how many|(?:the|what|which) number of)\s+(?:different\s+|distinct\s+)?(?:{_WHO}s|people|"
                     rf"voices|persons|participants|folks|individuals|humans|callers)\b", low):
            return Intent(self.name, reason="asks how many speakers")
        return None

    def reply(self, it, facts):
        order = speakers_in_order(facts.turns)
        dur = {k: round(sum(s.end - s.start for s in facts.turns if s.speaker == k), 1) for k in order}
        first = {k: next(s for s in facts.turns if s.speaker == k) for k in order}
        why = f"Diarization found {len(order)} speaker(s): " + "; ".join(
            f"{k} ({v} s of speech, first at {format_time(first[k].start)})" for k, v in dur.items()) + "."
        return Reply(("full recording · distinct speakers (diarization)",), tuple(first.values()), str(len(order)),
                     why, len(order))


@register
class SpeakingTime(QuestionKind):
    name, order, domains = "talk_time", 20, SPEECH
    example = "Which of the two speakers talks more?"

    def parse(self, text, low):
        if re.search(r"\bhow (?:long|much)\b.*\b(talk|speak|say)", low) or re.search(
                r"\b(?:talks?|speaks?|talking|speaking)\s+(?:the\s+)?(?:most|more|longest|longer)\b|\bspeaking time\b|"
                r"\bmost talkative\b|\bdominates? the (?:conversation|call)\b", low):
            spk = _speaker_ref(low)
            return Intent(self.name, speakers=() if spk is None else (spk,), reason="asks about speaking time")
        return None

    def reply(self, it, facts):
        order = speakers_in_order(facts.turns)
        dur = {k: round(sum(s.end - s.start for s in facts.turns if s.speaker == k), 1) for k in order}
        plan = ("full recording · speaking time per speaker (diarization)",)
        n = it.speaker
        if n is not None and (0 < n <= len(order) or n == -1):
            k = order[n - 1] if n > 0 else order[-1]
            return Reply(plan, tuple(s for s in facts.turns if s.speaker == k), f"{dur[k]} s",
                         f"{k} holds {dur[k]} s of turns out of {facts.duration:.1f} s.", dur[k])
        top = max(order, key=lambda k: dur[k])
        return Reply(plan, tuple(s for s in facts.turns if s.speaker == top)[:3], top,
                     "Speaking time: " + ", ".join(f"{k} {v} s" for k, v in dur.items()) + ".", dur)


#: who a question names by what they say or where they are from: "the lady from Texas", "the guy
#: who mentions the order", "whoever says hello" (the words: :func:`_speaker_words`)
_DESC = r"(?:lady|woman|man|guy|girl|boy|gentleman|gal|fellow|person|speaker|voice|one|caller|talker|participant)"
_BY = (r"(?:(?:who|that)(?:'s|\s+is|\s+was)?\s+)?(?:from|in|(?:who|that)\s+(?:says?|said|mentions?|mentioned|"
       r"talks?\s+about|talked\s+about|brings?\s+up|brought\s+up|lives?\s+in|comes?\s+from)|saying|mentioning|"
       r"talking\s+about)")
_TURN_VERB = (r"\b(speak\w*|spoke|talk\w*|says? anything|said anything|come in|comes in|chimes? in|pipes? up|joins?|"
              r"start\w*|begin\w*|stop\w*|finish\w*|done|quiet|turn|words?|line)\b")
_ENDS_WORDS = frozenset("first start starts started begin begins began stop stops stopped finish finishes finished speak "
                        "speaks spoke talk talks talking talked say says come comes chime chimes pipe pipes join joins end "
                        "ends last finally final get gets open opens done go goes ever".split())


def _speaker_words(low: str) -> tuple[tuple[str, ...], str]:
    """(the words that name a speaker by what they say, the question without them): "when does the
    lady from Texas first speak" -> (("texas",), "when does  first speak")."""
    m = re.search(rf"\b(?:the\s+)?{_DESC}\s+{_BY}\s+|\bwho(?:ever|soever)\s+(?:says?|said|mentions?|mentioned|"
                  rf"talks?\s+about|brings?\s+up)\s+", low)
    if not m:
        return (), low
    toks = re.findall(r"[a-z0-9']+|[^a-z0-9'\s]", low[m.end():])
    words = []
    for t in toks:
        if t in _ENDS_WORDS or not re.fullmatch(r"[a-z0-9']+", t):
            break
        words.append(t)
    rest = low[:m.start()] + " " + low[m.end():].split(" ".join(words), 1)[-1]
    return tuple(w for w in words if w not in _STOP and len(w) > 2), rest


def _speaker_saying(words: Sequence[str], facts: Facts) -> tuple[Optional[str], str]:
    """(the one diarized speaker whose recognised words hold the phrase ``words``, how it was found)
    or (None, why not: nobody says it, or more than one speaker does)."""
    ws = words_of(facts)
    hits = [ws[i] for i in _phrase_hits(ws, [w.lower() for w in words])]
    who = list(dict.fromkeys(h.speaker for h in hits if h.speaker))
    said = " ".join(words)
    if not who:
        return None, f"no recognised word is {said!r}, so no speaker can be named by it (offline ASR can miss words)"
    where = "; ".join(f"{k} at {format_time(next(h.start for h in hits if h.speaker == k))}" for k in who)
    if len(who) > 1:
        return None, f"more than one speaker says {said!r} ({where}), so it does not name one speaker"
    return who[0], f"{who[0]} is taken as the speaker named by {said!r}: the only one who says it ({where})"


@register
class SpeakerTurn(QuestionKind):
    """When speaker N first talks (``speaker_first``) -- or stops talking / takes their last turn
    (``speaker_last``): "When does the last speaker stop talking?", "speaker 2's last turn".  The
    words that name the speaker ("the last speaker") are taken out before "last / stop" is read."""
    name, order, domains = "speaker_first", 30, SPEECH
    example = "When does the second speaker first talk?"

    def parse(self, text, low):
        spk, words = _speaker_ref(low), ()
        if spk is None:                 # "the lady from Texas": the speaker who says "Texas"
            words, rest = _speaker_words(low)
            if not words or not re.search(_TURN_VERB, rest):
                return None
        else:
            rest = re.sub(rf"\b(?:the\s+)?{_ORD_RE}\s+(?:new\s+|other\s+)?{_WHO}\b|"
                          rf"\b{_WHO}\s+(?:number\s+|no\.?\s*|#)?(?:\d+|[a-h])\b", " ", low)
        if not re.search(r"\bwhen\b|\bat what (?:time|point)\b|\bwhat time\b|"
                         r"\b(?:first|last|final)\s+(?:turn|words?|line)\b", rest):
            return None
        last = bool(re.search(r"\b(last|final|stop|stops|stopped|finish\w*|end|ends|done|quiet)\b", rest)) and \
            not re.search(r"\b(first|start\w*|begin\w*)\b", rest)
        who = f"speaker {spk}" if spk is not None else f"the speaker who says {' '.join(words)!r}"
        return Intent("speaker_last" if last else self.name, speakers=() if spk is None else (spk,), keywords=words,
                      reason=f"asks when {who} {'stops talking (last turn)' if last else 'first talks'}")

    def reply(self, it, facts):
        order = speakers_in_order(facts.turns)
        names = ", ".join(f"{i}. {s}" for i, s in enumerate(order, 1))
        plan = ("full recording · diarization turns, speakers in order of first appearance",)
        n, said_by = it.speaker, ""
        if n is None and it.keywords:
            spk, said_by = _speaker_saying(it.keywords, facts)
            if spk is None:
                return self.cannot(said_by, plan + (f"keyword tool: who says {' '.join(it.keywords)!r}",))
            plan += (f"keyword tool: {spk} is the one speaker who says {' '.join(it.keywords)!r}",)
            names = f"{names}. {said_by}"
        elif n is None or n == 0 or n < -1 or n > len(order):
            return Reply(plan, tuple(facts.turns[:1]), f"only {len(order)} speaker(s) found",
                         f"Diarization found {len(order)} speaker(s) ({names}); there is no speaker {n}.", None)
        else:
            spk = order[-1] if n == -1 else order[n - 1]
        turns = sorted(facts.turns, key=lambda s: s.start)
        if n == -1 and it.task == "speaker_last":
            # "when does the last speaker stop": whoever speaks last (the example: the end of
            # the talk), not the last to join; the rationale names the other reading when they differ
            spk, joined = max(turns, key=lambda s: (s.end, s.start)).speaker, spk
            if spk != joined:
                names += (f". 'The last speaker' is read as whoever speaks last, {spk}; the last to join is "
                          f"{joined}")
        mine = [s for s in turns if s.speaker == spk]
        said = ', saying "{}"'
        if it.task == "speaker_first":
            s = mine[0]
            before = [x for x in turns if x.end <= s.start + 1e-6 and x is not s][-1:]
            why = (f"Speakers in order of first appearance: {names}. {spk} first talks at {format_time(s.start)} "
                   f"({s.start:.1f} s)" + (said.format(s.text) if s.text else "") + ".")
            return Reply(plan, tuple(before + [s]), f"{format_time(s.start)} ({s.start:.1f} s)", why, round(s.start, 2))
        s = mine[-1]
        after = [x for x in turns if x.start >= s.end - 1e-6 and x is not s][:1]
        why = (f"Speakers in order of first appearance: {names}. {spk}'s last turn is {format_time(s.start)}–"
               f"{format_time(s.end)}" + (said.format(s.text) if s.text else "") + f"; {spk} stops talking at "
               f"{format_time(s.end)} ({s.end:.1f} s)" + (f", and {after[0].speaker} talks after it" if after else
                                                           ", the last speech of the recording") + ".")
        return Reply(plan, tuple([s] + after), f"{format_time(s.end)} ({s.end:.1f} s)", why, round(s.end, 2))


@register
class SpeakerLast(SpeakerTurn):
    """When speaker N stops talking (the end of their last turn): parsed by :class:`SpeakerTurn`."""
    name, order = "speaker_last", 31
    example = "When does the last speaker stop talking?"

    def parse(self, text, low):
        return None


# ----------------------------------------------------------------------------- times and words
#: seconds: a time this close to a turn (segment) is read as that turn; farther from every one,
#: nobody speaks there (a silence is said, never filled with the nearest turn)
SNAP_SEC = 1.5


def _gap(s, a: float, b: float) -> float:
    return max(0.0, s.start - b, a - s.end)


def _at_time(it: Intent, pool: Sequence[Segment], duration: float, what: str):
    """(hits, where, plan, silence) of the segments / turns at the question's time (a point: the one
    covering it, else the nearest within :data:`SNAP_SEC`; a range: every one overlapping it, else
    the nearest within that); no hits: ``silence`` says nobody speaks there and what is nearest."""
    w = window(it, duration)
    end = min(w.end, duration)
    if end - w.start <= 1.5:
        a = b = (w.start + end) / 2
        where = f"at {format_time(a)}"
    else:
        a, b = w.start, end
        where = f"{format_time(a)}–{format_time(end)}"
    near = min(pool, key=lambda s: (_gap(s, a, b), abs(s.start - a)))
    hit = [s for s in pool if _gap(s, a, b) == 0.0] or ([near] if _gap(near, a, b) <= SNAP_SEC else [])
    silence = (f"No {what[:-1] if what.endswith('s') else what} lies {where}: the nearest is {near.speaker}'s "
               f"{format_time(near.start)}–{format_time(near.end)}, {_gap(near, a, b):.1f} s away (more than "
               f"{SNAP_SEC:.1f} s: silence, or speech the VAD did not keep).")
    return hit[:1] if a == b else hit, where, (f"{it.time} ({where}) · time tool: the {what} {where}",), silence


@register
class SpeakerAt(QuestionKind):
    name, order, domains = "speaker_at", 40, SPEECH
    example = "Who is speaking at 1:30?"

    def parse(self, text, low):
        times = time_mentions(text)
        if times and re.search(r"\bwho\b|\bwhich\s+(?:one|speaker|person|voice|of (?:them|the (?:two|speakers)))\b",
                               low) and re.search(r"\b(speak(?:s|ing)?|spoke|talk(?:s|ing|ed)?|say|said|says|saying|on the line|hear|heard)\b",
                               low):
            return Intent(self.name, times=(times[0],), reason="asks who speaks at a time")
        return None

    def reply(self, it, facts):
        try:
            hit, where, plan, silence = _at_time(it, facts.turns, facts.duration, "diarization turns")
        except LocalizeError as e:
            return self.cannot(f"the time {it.time!r} could not be read ({e})")
        if not hit:
            return Reply(plan, (), f"nobody speaks {where}", silence, None)
        order = speakers_in_order(facts.turns)
        spk = list(dict.fromkeys(s.speaker for s in hit if s.speaker))
        rank = ", ".join(f"{k} = speaker {order.index(k) + 1}" for k in spk if k in order)
        turns = ", ".join(f"{format_time(s.start)}–{format_time(s.end)} {s.speaker}" for s in hit)
        return Reply(plan, tuple(hit), " and ".join(spk) or "unknown speaker",
                     f"Diarization turn(s) {turns} cover {where} (in order of appearance: {rank}).",
                     spk[0] if len(spk) == 1 else spk)


@register
class WhenSaid(QuestionKind):
    name, order, domains = "when_said", 50, SPEECH
    example = "When does someone mention tomatoes?"

    def parse(self, text, low):
        if re.search(_WHEN, low) and re.search(_SAY, low) and not _speaker_words(low)[0]:
            words = _keywords(text)     # (a speaker named by other words: no kind reads both, so none)
            if words:
                return Intent(self.name, keywords=words, reason="asks when words are said")
        return None

    def reply(self, it, facts):
        words = [w.lower() for w in it.keywords]
        plan = (f"full recording · keyword tool: {', '.join(words)} in the transcript",)

        def stem_hit(tok: str) -> bool:
            return any(tok.startswith(w[:max(4, len(w) - 2)]) for w in words)
        hits = [(sum(1 for w in words if any(t.startswith(w[:max(4, len(w) - 2)])
                                             for t in re.findall(r"[a-z0-9']+", (s.text or "").lower()))), s)
                for s in sorted(facts.segments, key=lambda s: s.start)]
        hits = [(n, s) for n, s in hits if n]
        if not hits:                                # "E .R .D. or" for "order", said as such
            return heard_as(plan, words, facts)
        best = max(n for n, _ in hits)
        found = [s for n, s in hits if n == best]
        s = found[0]
        t = next((float(w[1]) for w in (s.custom or {}).get("words", []) if stem_hit(str(w[0]).lower())), s.start)
        return Reply(plan, tuple(found[:3]), f"{format_time(t)} ({t:.1f} s)",
                     f'{s.speaker} says "{s.text}" in {format_time(s.start)}–{format_time(s.end)}'
                     + (f"; also in {len(found) - 1} other turn(s)" if len(found) > 1 else "") + ".", round(t, 2))


@register
class SaidAt(QuestionKind):
    name, order, domains = "said_at", 60, SPEECH
    example = "What is said around 2 minutes?"

    def parse(self, text, low):
        times = time_mentions(text)
        if (times and re.search(r"\bwhat(?:'s|\s+is|\s+was|\s+are|\s+were)?\b", low) and re.search(_SAY, low)
                and not re.search(r"\bnot what\b", low)):       # "not what was said, but what you hear"
            return Intent(self.name, times=(times[0],), reason="asks what is said at a time")
        return None

    def reply(self, it, facts):
        try:
            hit, where, plan, silence = _at_time(it, sorted(facts.segments, key=lambda s: s.start), facts.duration,
                                                 "segments")
        except LocalizeError as e:
            return self.cannot(f"the time {it.time!r} could not be read ({e})")
        if not hit:
            return Reply(plan, (), f"nothing is said {where}", silence, None)
        text = " ".join(s.text for s in hit if s.text)
        return Reply(plan, tuple(hit), text or "(no words recognised)",
                     "Transcript (offline ASR) of " + ", ".join(
                         f"{s.speaker}'s turn {format_time(s.start)}–{format_time(s.end)}" for s in hit) + ".", text)


def answer_kind(it: Intent, facts: Facts) -> Reply:
    """The reply of question kind ``it.task`` on ``facts`` (``cannot answer this`` when this
    recording's extraction lacks what the kind reads)."""
    kind = get(it.task)
    why = kind.needs(facts)
    return kind.cannot(why) if why else kind.reply(it, facts)

