"""Kappa statistics against hand-computed values, including the degenerate cases."""
import pytest

from harp_lib.evaluate.agreement import (agreement_stats, cohen_kappa, fleiss_kappa, judge_agreement,
                                         percent_agreement)
from harp_lib.core.schema import Score


def test_cohen_hand_computed():
    # p_o = 3/4, p_e = .5*.25 + .5*.75 = .5 -> (0.75 - 0.5) / 0.5
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    # p_o = 1/2, p_e = .25*.75 + .75*.25 = .375 -> 0.125 / 0.625
    assert cohen_kappa([1, 0, 0, 0], [1, 1, 1, 0]) == pytest.approx(0.2)
    assert cohen_kappa([1, 0], [0, 1]) == pytest.approx(-1.0)


def test_fleiss_hand_computed():
    # P_i = 1, 1/3, 1/3, 1 -> P = 2/3; p(1) = 6/12 -> P_e = 0.5 -> (2/3 - 1/2) / (1/2) = 1/3
    assert fleiss_kappa([[1, 1, 1], [1, 0, 1], [0, 0, 1], [0, 0, 0]]) == pytest.approx(1 / 3)
    assert percent_agreement([[1, 1, 1], [1, 0, 1], [0, 0, 1], [0, 0, 0]]) == 0.5


def test_degenerate_cases():
    # unanimous judges, single class: p_e = 1 -> kappa defined as 1.0 (no division by zero)
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) == 1.0
    assert fleiss_kappa([[0, 0, 0], [0, 0, 0]]) == 1.0
    assert percent_agreement([[0, 0, 0], [0, 0, 0]]) == 1.0
    # unanimous but two classes used: ordinary kappa = 1
    assert fleiss_kappa([[1, 1, 1], [0, 0, 0]]) == pytest.approx(1.0)
    # each judge constant, in different classes: p_o = p_e = 0 -> 0
    assert cohen_kappa([1, 1], [0, 0]) == 0.0
    # no items
    assert cohen_kappa([], []) is None and fleiss_kappa([]) is None and percent_agreement([]) is None
    # one judge: agreement undefined, leniency defined
    s = agreement_stats({"rule": [1, 0, 1, 1]})
    assert s["fleiss_kappa"] is None and s["percent_agreement"] is None and s["leniency[rule]"] == 0.75
    with pytest.raises(ValueError):
        fleiss_kappa([[1, 1], [1]])


def test_judge_agreement_table_per_domain():
    a, b, c = [1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0]
    scores = []
    for judge, vals in (("a", a), ("b", b), ("c", c)):
        for i, v in enumerate(vals):
            scores.append(Score(f"q{i}", "A3", "emotion", "state", judge, float(v), 1.0))
        scores.append(Score("only_a", "A3", "emotion", "state", judge, 1.0, 1.0) if judge == "a" else
                      Score("q0", "A5", "emotion", "state", judge, 1.0, 1.0))
    df = judge_agreement(scores).set_index(["domain", "metric"])
    row = df.loc[("emotion", "answer")]
    # item "only_a" (one judge) and ("A5","q0") (two judges) are not common to all -> 4 items
    assert row["n_items"] == 4 and row["n_judges"] == 3
    assert row["percent_agreement"] == 0.5
    assert row["fleiss_kappa"] == pytest.approx(1 / 3)
    assert row["cohen_kappa[a|b]"] == pytest.approx(0.5)
    assert row["cohen_kappa[a|c]"] == pytest.approx(0.5)
    assert row["cohen_kappa[b|c]"] == pytest.approx(0.2)
    assert row["mean_cohen_kappa"] == pytest.approx(0.4)
    assert (row["leniency[a]"], row["leniency[b]"], row["leniency[c]"]) == (0.5, 0.25, 0.75)
    rat = df.loc[("emotion", "rationale")]                    # all 1 -> unanimous single class
    assert rat["fleiss_kappa"] == 1.0 and rat["percent_agreement"] == 1.0
