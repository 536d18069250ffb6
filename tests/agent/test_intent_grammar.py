"""Issue 31: the rule planner's time grammar and task vocabulary on questions as strangers write them.

One test per class of wording the issue lists; each failed on the code before the grammar
(checked by running this file against the previous commit).
"""
import pytest

from harp_lib.tasks import read_question
from harp_lib.understand.time_words import time_mentions
from harp_lib.understand.typos import MAX_EDITS, correct, edit_distance
from harp_lib.core.timespan import Span, localize


def test_an_explicit_range_beats_a_vague_phrase():
    assert time_mentions("In the last minute or so, 30:11 to 31:03, did the speaker's energy rise?") == \
        ["from 1811 to 1863 seconds"]
    assert time_mentions("In the opening minute and a half (0:00 to 1:38), who was calmer?") == ["from 0 to 98 seconds"]
    # without a range the vague phrase still counts
    assert time_mentions("In the last minute or so, did the speaker's energy rise?") == ["the last minute"]
    # an open range: a clock, a few words, then "up to" / "until" another clock
    it = read_question("I noticed something at 0:44. Up to 1:06, is the speaker becoming calmer, or is it the opposite?",
                       "emotion", ("A",))
    assert it.task == "change" and it.times == ("from 44 to 66 seconds",)


def test_spoken_and_hyphenated_numbers_and_fractions():
    assert time_mentions("How does she feel at the sixteen-and-a-half-minute mark?") == ["around 990 seconds"]
    assert time_mentions("Is the song at the twenty-two-and-a-half-minute mark better than the one at the "
                         "twelve-minute mark?") == ["around 1350 seconds", "around 720 seconds"]
    assert time_mentions("From twelve hundred and thirty-five seconds to twelve hundred and sixty seconds, "
                         "how did their arousal develop?") == ["from 1235 to 1260 seconds"]
    assert time_mentions("two and a half minutes in") == ["around 150 seconds"]
    assert localize(time_mentions("a minute and a half in")[0], point_window=1.0) == Span(89, 91)


def test_ordinals_in_words_opening_closing_last():
    assert time_mentions("Is the opening song better than the twelfth song?") == ["the 1st song", "the 12th song"]
    assert time_mentions("Which is weaker, the closing track or track 13?") == ["the last song", "the 13th song"]
    # in a medley, "the first one" / "the last one" are songs without a song noun
    it = read_question("Which is worse: the first one or the last one?", "song")
    assert it.task == "position" and it.times == ("the 1st song", "the last song") and it.polarity == -1
    assert localize("the last song", songs=[Span(0, 10), Span(10, 20), Span(20, 30)]) == Span(20, 30)


@pytest.mark.parametrize("text,domain,roles,task", [
    ("whats the emotoin of the speaker around 1:31", "emotion", ("A",), "state"),
    ("which emtion does the speaker show at 1:20", "emotion", ("A",), "state"),
    ("any cuoghing in this recording?", "clinical", (), "exhibited"),
    ("is there audible caughing between 11:06 and 12:23?", "clinical", (), "exhibited"),
    ("did the pateint complain of a caugh?", "clinical", (), "reported"),
    ("Song A or song B, whch has beter aesthtics?", "song", ("A", "B"), "audio"),
    ("Whose enrgy was hihger between 0:10 and 0:40, speaker A's or speaker B's?", "emotion", ("A", "B"), "comparison"),
])
def test_typos_in_the_task_word(text, domain, roles, task):
    assert read_question(text, domain, roles).task == task


def test_typo_threshold_keeps_real_words():
    """The tested threshold: one edit up to 8 letters, two from 9; real words near a task word stay."""
    assert MAX_EDITS[8] == 1 and edit_distance("respiratroy", "respiratory") == 1
    assert correct("the motion of the recorded letter was a tough chance") == \
        "the motion of the recorded letter was a tough chance"
    assert correct("resperatory symptons, aesthtics") == "respiratory symptoms, aesthetics"
    assert correct("the camel sat") == "the camel sat"                  # short / far words untouched
    assert read_question("In the recorded appointment, can you hear the patient cough?", "clinical").task == "exhibited"


def test_comparatives_in_either_order_and_change_cues():
    roles = ("A", "B")
    it = read_question("Was A calmer than B between 0:01 and 0:23, or the other way round?", "emotion", roles)
    assert (it.task, it.polarity, it.dimension) == ("comparison", -1, "arousal")
    it = read_question("Was B more energetic than A from 0:01 to 0:23?", "emotion", roles)
    assert (it.task, it.polarity) == ("comparison", 1)
    assert read_question("From 57 to 86 s, which of the two speakers was calmer?", "emotion", roles).task == "comparison"
    it = read_question("does this speaker get more positive between 0:10 and 0:40?", "emotion", ("A",))
    assert (it.task, it.polarity, it.dimension) == ("change", 1, "valence")
    assert read_question("Is the opening song better or worse than the second one?", "song").polarity == 1


def test_negations_and_excluded_clauses():
    it = read_question("In the consultation from 0:00 to 0:22, did the patient not report any respiratory symptom?",
                       "clinical")
    assert (it.task, it.absence) == ("reported", True)
    assert read_question("Not what was said, but what you can hear: any coughing from 0:00 to 0:27?",
                         "clinical").task == "exhibited"
    assert read_question("Between 0:09 and 0:44, point me to the moment the speaker feels like in the clip, and quote them.",
                         "emotion", ("A", "E")).task == "locate"
