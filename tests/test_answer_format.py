"""The one answer-format module: one rationale splitter, one citation format."""
from harp_lib.core import answer_format
from harp_lib.agent import answerer, evidence
from harp_lib.evaluate import answers, llm_judge, rule_judge


def test_one_splitter_everywhere():
    split = answer_format.split_rationale
    assert answerer.split_rationale is split and answers.split_answer is split
    assert rule_judge.split_rationale is split and llm_judge.split_rationale is split


def test_rationale_only_output_has_no_decision():
    # nothing before "Rationale:" -> no answer was given; the text is the rationale (graded "empty answer")
    assert answer_format.split_rationale("Rationale: only this") == ("", "only this")
    assert answer_format.split_rationale("  rationale : only this", "more") == ("", "only this\nmore")
    assert answer_format.split_rationale("B\nRATIONALE: Set 2 scores higher") == ("B", "Set 2 scores higher")
    assert answer_format.split_rationale("Yes, the patient coughed.") == ("Yes, the patient coughed.", "")
    # a whole word only: "myrationale:" is not a separator
    assert answer_format.split_rationale("A. myrationale: x") == ("A. myrationale: x", "")


def test_empty_decision_is_graded_as_empty_answer():
    from harp_lib.core.schema import Query
    q = Query("q", "clinical", "r", "reported", "?", {"answer": "Yes"})
    decision, _ = answer_format.split_rationale("Rationale: the patient says yes, she coughs")
    assert rule_judge.RuleJudge().answer_verdict(q, decision).reason == "empty answer"


def test_one_citation_format():
    assert evidence.fmt_range is answer_format.fmt_range and evidence.render_labels is answer_format.render_labels
    cites = answer_format.times_in(answer_format.fmt_range(12.43, 17.08))
    assert [c.span for c in cites] == [(12.4, 17.1)]          # what is written is read back
