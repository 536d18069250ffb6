"""Issue 31: a Locate answer must not go to a neighbouring segment that a rounded window clips.

The real case: mini benchmark, locate_hard-0006, setup A1 (extracted index of the fc3 run).  The
window "from 330.4 to 460.6 seconds" clips the end of a Sad utterance at 326.978-331.742 (1.3 s
of its 4.8 s inside); the next Sad utterance, 353.282-357.918, lies inside the window, in the
ground-truth event 347.2-358.1 s.  Ties on the label went to the earliest start: the answer was
5:29, the neighbour; ranked by the share inside (``agent.locate_min_share``) it is 5:56.
"""
from types import SimpleNamespace

from harp_lib import tasks
from harp_lib.agent.context import agent_params
from harp_lib.core.schema import EvidenceItem, EvidenceSet
from harp_lib.tasks.emotion import window_share


def _sad(sid, t0, t1):
    return EvidenceItem(sid, t0, t1, "SPEAKER_01", "", {"primary": "Sad"}, {"label": 1.0})


ITEMS = [_sad("podcast_01_ext_0087", 326.978, 331.742), _sad("podcast_01_ext_0093", 353.282, 357.918),
         _sad("podcast_01_ext_0110", 424.002, 430.494)]


def _answer(min_share):
    es = EvidenceSet(1, "from 330.4 to 460.6 seconds", 330.4, 460.6, tuple(ITEMS))
    ctx = SimpleNamespace(params=agent_params(None, locate_min_share=min_share), references={}, hearing=None,
                          domain="emotion", setup=SimpleNamespace(show_metadata=True))
    return tasks.get("locate_hard").rule_answer(ctx, [(es, list(ITEMS))])[0]


def test_the_clipped_neighbour_loses_to_a_segment_inside_the_window():
    assert window_share(ITEMS[0], SimpleNamespace(start=330.4, end=460.6)) == (0.282, 1.342)
    assert agent_params(None).locate_min_share == 0.5
    assert _answer(0.5) == "5:56 (Sad)"
    assert _answer(0.0) == "5:56 (Sad)"              # no minimum: the share inside still breaks the tie


def test_below_the_minimum_share_even_a_label_match_waits():
    """A clipped neighbour with the reference's label loses to a segment inside the window whose
    label differs, when less than ``locate_min_share`` of it is inside; with 0 it wins on the label."""
    other = EvidenceItem("podcast_01_ext_0093", 353.282, 357.918, "SPEAKER_01", "", {"primary": "Neutral"},
                         {"label": 1.0})
    es = EvidenceSet(1, "from 330.4 to 460.6 seconds", 330.4, 460.6, (ITEMS[0], other))
    for share, want in ((0.5, "5:56"), (0.0, "5:29")):
        ctx = SimpleNamespace(params=agent_params(None, locate_min_share=share), references={}, hearing=None,
                              domain="emotion", setup=SimpleNamespace(show_metadata=True))
        assert tasks.get("locate").rule_answer(ctx, [(es, [ITEMS[0], other])])[0].startswith(want), share


def test_a_clipped_segment_is_still_taken_when_nothing_else_is_there():
    es = EvidenceSet(1, "from 330.4 to 340 seconds", 330.4, 340.0, (ITEMS[0],))
    ctx = SimpleNamespace(params=agent_params(None), references={}, hearing=None, domain="emotion",
                          setup=SimpleNamespace(show_metadata=True))
    assert tasks.get("locate").rule_answer(ctx, [(es, [ITEMS[0]])])[0] == "5:29 (Sad)"
