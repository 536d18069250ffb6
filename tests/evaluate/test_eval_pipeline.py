"""harp judge -> harp score -> harp tables / figures on crafted predictions in a scratch root."""
import pandas as pd
import pytest

from harp_lib.app.cli import main as harp
from harp_lib.evaluate import judge, scoring, tables
from harp_lib.evaluate.rule_judge import RuleJudge
from harp_lib.evaluate.store import UnknownQueryError
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.schema import Judgement, Score

from eval_fixtures import item, prediction, queries

RIGHT = {
    "e_state": ("Happy", "[32.0s–58.0s] primary=Happy", [item("x", 32, 58, primary="Happy")]),
    "e_change": ("rising", "[62.0s–88.0s] V=0.30 to [92.0s–118.0s] V=0.60",
                 [item("a", 62, 88), item("b", 92, 118)]),
    "e_comp": ("A", "[120.0s–150.0s]", [item("a", 120, 150)]),                  # wrong: GT is B
    "e_locate": ("1:42 (Angry)", "[98.0s–106.0s] primary=Angry", [item("x", 98, 106, primary="Angry")]),
    "e_locate_hard": ("3:22 Sad", "[198.0s–206.0s] primary=Sad", [item("x", 198, 206, primary="Neutral")]),
    "c_rep": ("Yes", "[20.0s–40.0s] cough", [item("c", 20, 40)]),
    "c_exh": ("No", "nothing heard", []),                                         # wrong
    "c_no": ("No", "nothing found", [item("c", 0, 20)]),
    "s_time": ("A", "[0.0s–75.0s] primary=High", [item("m", 0, 75, primary="High")]),
    "s_pos": ("B", "[450.0s–525.0s]", [item("m", 450, 525)]),
    "s_audio": ("tie", "[0.0s–75.0s]", [item("m", 0, 75)]),
}


def write_predictions(root, setups=("A3", "A4")):
    for dom in ("emotion", "clinical", "song"):
        for s in setups:
            preds = [prediction(q, *RIGHT[q.query_id], setup=s) for q in queries() if q.domain == dom]
            write_jsonl(root / "data" / "predictions" / dom / f"{s}.jsonl", preds)


@pytest.mark.slow
def test_judge_score_tables_figures(harp_root, capsys, monkeypatch):
    write_predictions(harp_root)
    assert harp(["judge", "--skip-missing"]) == 0
    jf = harp_root / "data" / "judgements" / "emotion" / "A3.rule.jsonl"
    js = {j.query_id: j for j in read_jsonl(jf, Judgement)}
    assert len(js) == 5 and js["e_state"].rationale == 1 and js["e_comp"].answer == 0
    assert js["e_locate_hard"].factual == 1 and js["e_locate_hard"].faithful == 0   # label not retrieved
    a4 = {j.query_id: j for j in read_jsonl(harp_root / "data/judgements/emotion/A4.rule.jsonl", Judgement)}
    assert a4["e_locate_hard"].faithful == 1                                      # skip_faithful

    # resumable: a second run judges nothing (the judge would raise if called)
    monkeypatch.setattr(RuleJudge, "judge", lambda self, inp: (_ for _ in ()).throw(AssertionError("re-judged")))
    assert harp(["judge", "--skip-missing"]) == 0
    assert len(read_jsonl(jf, Judgement)) == 5
    monkeypatch.undo()
    monkeypatch.setenv("HARP_ROOT", str(harp_root))
    monkeypatch.setenv("HARP_PROGRESS", "off")

    assert harp(["score"]) == 0
    sc = {s.query_id: s for s in read_jsonl(harp_root / "data/scores/clinical/A3.rule.jsonl", Score)}
    assert sc["c_no"].retrieval_hit_rate_overlap is None and sc["c_no"].plan_hit_rate is None
    assert sc["c_rep"].retrieval_hit_rate_overlap == 1.0 and sc["c_exh"].retrieval_hit_rate_id == 0.0
    assert sc["c_rep"].plan_hit_rate == 1.0                   # full-recording window, no groups

    assert harp(["tables"]) == 0
    t2 = pd.read_csv(harp_root / "results/tables/table2.csv", index_col=0)
    assert t2.shape == (14, 11) and list(t2.index) == [f"A{i}" for i in range(1, 8)] + [f"R{i}" for i in range(1, 8)]
    assert list(t2.columns) == ["State", "Change", "Comp.", "Locate", "Locate+", "Semantic", "Acoustic",
                                "Time", "Position", "Audio", "Avg"]
    vals = t2.loc[["A3", "A4", "R3", "R4"]].to_numpy()
    assert ((vals >= 0) & (vals <= 100)).all()
    assert t2.loc["A3", "Comp."] == 0 and t2.loc["A3", "State"] == 100 and t2.loc["A3", "Semantic"] == 100
    assert t2.loc["A3", "Acoustic"] == 0
    # A3: emotion 4 of 5 types right (80), clinical 1 of 2 (50), song 3 of 3 (100)
    assert t2.loc["A3", "Avg"] == pytest.approx((80 + 50 + 100) / 3)
    assert t2.loc["R3", "Locate+"] == 0 and t2.loc["R4", "Locate+"] == 100
    assert t2.loc["A1"].isna().all()                            # no A1 predictions
    md = (harp_root / "results/tables/table2.md").read_text()
    assert "backends: answerer=rule; planner=rule" in md
    for name in ("hit_rates", "judge_agreement", "table2_vs_paper"):
        for ext in ("csv", "md", "tex"):
            assert (harp_root / "results/tables" / f"{name}.{ext}").exists()
    vs = pd.read_csv(harp_root / "results/tables/table2_vs_paper.csv", index_col=0)
    assert vs.loc["A7", "Avg paper"] == 73.7 and vs.loc["A3", "State ours"] == 100
    hr = pd.read_csv(harp_root / "results/tables/hit_rates.csv", index_col=[0, 1])
    assert hr.loc[("A3", "Retr HR (overlap)"), "Semantic"] == 100.0      # c_no (no GT) left out
    assert "Only one judge" in (harp_root / "results/tables/judge_agreement.md").read_text()

    capsys.readouterr()
    assert harp(["figures"]) == 0
    out = capsys.readouterr()
    assert (harp_root / "results/figures/accuracy_by_type.png").stat().st_size > 10_000
    assert (harp_root / "results/figures/hitrate_vs_accuracy.png").exists()
    assert not (harp_root / "results/figures/figure4_human.png").exists()
    assert "no human answer files" in out.err and "none were collected" in out.err


def test_unknown_query_id_is_an_error_not_a_zero(harp_root):
    q = queries()[0]
    bad = prediction(q, "Happy", "r").replace(query_id="e_missing")
    write_jsonl(harp_root / "data/predictions/emotion/A3.jsonl", [bad])
    with pytest.raises(UnknownQueryError, match="e_missing"):
        judge.run_judge("emotion", "A3", "rule")


def test_score_needs_judgements(harp_root):
    write_predictions(harp_root, setups=("A5",))
    with pytest.raises(FileNotFoundError, match="harp judge"):
        scoring.run_score("emotion", "A5", "rule")


def test_table2_macro_average_and_percent():
    s = [Score(f"q{i}", "A1", "emotion", "state", "rule", float(v), float(r))
         for i, (v, r) in enumerate([(1, 1), (0, 0), (1, 0), (1, 1)])]
    s += [Score("c0", "A1", "emotion", "change", "rule", 0.0, 0.0), Score("c1", "A1", "emotion", "change", "rule", 1.0, 0.0)]
    t = tables.table2(s)
    assert t.shape == (14, 11)
    assert t.loc["A1", "State"] == 75.0 and t.loc["R1", "State"] == 50.0 and t.loc["A1", "Change"] == 50.0
    assert t.loc["A1", "Avg"] == pytest.approx(62.5)            # macro over types, not 4/6 micro
    with pytest.raises(ValueError, match="several judges"):
        tables.table2(s + [Score("q0", "A1", "emotion", "state", "qwen", 1.0, 1.0)])
    full = [Score(f"{t}{k}", f"A{k}", "emotion", t, "rule", 1.0, 0.0) for t in
            ("state", "change", "comparison", "locate", "locate_hard") for k in range(1, 8)]
    full += [Score(f"{t}{k}", f"A{k}", "song", t, "rule", 0.0, 1.0) for t in
             ("reported", "exhibited", "time", "position", "audio") for k in range(1, 8)]
    tf = tables.table2(full)
    assert tf.notna().all().all() and ((tf >= 0) & (tf <= 100)).all().all()
    # emotion types all 100, clinical and song 0 -> per-domain means 100, 0, 0
    assert tf.loc["A1":"A7", "Avg"].tolist() == pytest.approx([100 / 3] * 7)


def test_paper_table_matches_reference_appendix():
    p = tables.paper_table2()
    assert p.shape == (14, 11) and p.loc["A5", "Avg"] == 61.6 and p.loc["R2", "Time"] == 0.0
    # the published Avg is the mean over domains of the per-domain type means (not a flat mean
    # over the ten types); 13 of 14 rows agree to rounding, A7 is off by 2.4 in the paper
    ours = p.apply(lambda r: tables.macro_avg(r.drop("Avg").to_dict()), axis=1)
    diff = (ours - p["Avg"]).abs()
    assert (diff.drop("A7") < 0.07).all() and diff["A7"] == pytest.approx(2.40, abs=0.01)
    assert (p.drop(columns="Avg").mean(axis=1) - p["Avg"]).abs().max() > 5
