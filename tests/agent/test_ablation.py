"""results/tables/ablation.md: oracle vs retrieved vs no evidence, on a crafted benchmark."""
from __future__ import annotations

from harp_lib.config import load_config
from harp_lib.evaluate.ablation import ablation_table, write_ablation
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Score


def test_ablation_rows_read_scores_and_answer_without_evidence(emotion_bench, emotion_queries_written, tmp_path):
    root = emotion_bench["root"].parent
    emotion_bench["index"].save(tmp_path / "index" / "emotion")
    cfg = load_config(overrides={"domains": ["emotion"], "paths": {
        "benchmark": str(root), "index": str(tmp_path / "index"), "scores": str(tmp_path / "scores"),
        "results": str(tmp_path / "results")}, "agent": {"planner": "rule", "answerer": "rule"}})
    qs = emotion_queries_written
    # oracle right on every query, retrieval right on the first half only
    for setup, ok in (("A7", lambda i: 1.0), ("A5", lambda i: float(i < len(qs) // 2))):
        write_jsonl(tmp_path / "scores" / "emotion" / f"{setup}.rule.jsonl",
                    [Score(q.query_id, setup, "emotion", q.query_type, "rule", ok(i), 0.0) for i, q in enumerate(qs)])
    df = ablation_table(cfg)
    allrow = df[(df["domain"] == "emotion") & (df["query type"] == "all")].iloc[0]
    assert allrow["n"] == len(qs)
    assert allrow["oracle evidence (A7)"] == 100.0
    assert allrow["retrieved evidence (A5)"] == round(100.0 * (len(qs) // 2) / len(qs), 1)
    # without evidence the rule answerer cannot locate anything: below the oracle
    assert allrow["no evidence"] < allrow["oracle evidence (A7)"]
    loc = df[df["query type"] == "locate"]
    assert loc.empty or loc.iloc[0]["no evidence"] == 0.0
    paths = write_ablation(cfg)
    md = [p for p in paths if p.suffix == ".md"][0]
    assert md == tmp_path / "results" / "tables" / "ablation.md" and "no evidence" in md.read_text()
