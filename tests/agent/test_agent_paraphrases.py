"""The paraphrase set: written apart from the templates, bound to the ci benchmark, understood.

Language understanding (intent, direction, absence, time phrases, plans) is checked on every
row without models; one end-to-end run of ``evaluate`` covers the clinical and song rows.
"""
from collections import Counter

import pytest

from test_agent_benchmark import _SongIx, ci_bench  # noqa: F401  (session fixture: the ci benchmark)

from harp_lib.agent.context import QueryContext, agent_params
from harp_lib.tasks import read_question
from harp_lib.agent.planner import RulePlanner
from harp_lib.retrieval.references import Hearing
from harp_lib.config import SETUPS, load_config
from harp_lib.evaluate.paraphrase_answers import evaluate
from harp_lib.evaluate.paraphrase_bind import bind
from harp_lib.evaluate.paraphrase_plans import plan_hit
from harp_lib.evaluate.paraphrase_set import TASK_ORDER, load_paraphrases
from harp_lib.evaluate.paraphrases import write_tables
from harp_lib.core.timespan import song_spans


def _by_type(queries):
    out = {}
    for q in sorted(queries, key=lambda q: q.query_id):
        out.setdefault(q.query_type, []).append(q)
    return out


def test_the_set_covers_every_type_in_other_words(ci_bench):
    rows = load_paraphrases()
    supported = [r for r in rows if r.get("expect") != "unsupported"]
    assert len(rows) >= 300 and set(Counter(r["task"] for r in supported)) == set(TASK_ORDER)
    assert min(Counter(r["task"] for r in supported).values()) >= 20
    assert sum(r.get("polarity", 1) < 0 for r in rows) >= 15 and sum(bool(r.get("absence")) for r in rows) >= 3
    templates = {q.text for d in ci_bench for q in ci_bench[d][1]}
    for d, (recs, queries, _, _) in ci_bench.items():
        bt = _by_type(queries)
        for r in rows:
            b = bind(r, bt, {x.id: x for x in recs}) if r["task"] in bt else None
            if b is not None:
                assert b[0].text not in templates, r["id"]
    forms = " ".join(r["text"] for r in rows)
    for needle in ("{t_clock}", "{t_spoken}", "{a_word}", "track", "piece", "{t0}-{t1} s", "not as", "worse",
                   "calmer" if "calmer" in forms else "{less_pole_adj}", "free of", "Leaving aside"):
        assert needle in forms, needle


def test_every_paraphrase_is_understood_and_planned(ci_bench):
    """Intent, direction and absence from the text alone; the rule plan searches where the answer is.
    The tune half only (issue 31): its measured rate is every row; the eval half is measured once, by
    ``harp paraphrase-eval --split eval``, and its failures are never read while tuning."""
    rows = [r for r in load_paraphrases() if r["split"] == "tune"]
    n, hits, fails = 0, 0, []
    for domain, (recs, queries, gt, root) in ci_bench.items():
        bt = _by_type(queries)
        rec = {r.id: r for r in recs}
        ix = _SongIx(gt)
        for r in rows:
            if r["task"] not in bt:
                continue
            q, base = bind(r, bt, rec)
            it = read_question(q.text, domain, tuple(q.references))
            want = "unsupported" if r.get("expect") == "unsupported" else r["task"]
            assert it.task == want, (r["id"], q.text, it)
            if want == "unsupported":
                continue
            assert it.polarity == r.get("polarity", 1), (r["id"], q.text, it)
            assert it.absence == bool(r.get("absence")), (r["id"], q.text)
            gt_flip = (r.get("polarity", 1) < 0) != bool(r.get("swap"))
            if "winner" in base.ground_truth and base.ground_truth["winner"] in ("A", "B"):
                assert (q.ground_truth["winner"] != base.ground_truth["winner"]) == gt_flip, r["id"]
            ctx = QueryContext(q, rec[q.recording_id], SETUPS["A3"], ix, agent_params(None), bench_dir=root,
                               hearing=Hearing(domain, labelers=[]))
            plan, _ = RulePlanner().plan(ctx)
            ok = plan_hit(r, q, plan, gt, song_spans(ix.segments(q.recording_id)), rec[q.recording_id].duration, 30.0)
            n += 1
            hits += bool(ok)
            if not ok:
                fails.append((r["id"], q.text, [ps.localize for ps in plan.sets]))
    assert n >= 80 and hits == n, fails


@pytest.mark.slow
def test_paraphrase_eval_end_to_end(ci_bench, tmp_path):
    """Clinical and song rows through the whole rule agent (ground-truth index, offline embedders)."""
    root = next(iter(ci_bench.values()))[3].parent
    rows = [r for r in load_paraphrases() if r["task"] in ("reported", "exhibited", "position", "audio")
            and r["split"] == "tune"]
    res = evaluate(load_config(), root, rows=rows, template=True)
    assert len(res) == len(rows) and not any(x.get("error") for x in res)
    assert all(x["plan_hit"] for x in res if x["expect"] != "unsupported")
    unsup = [x for x in res if x["expect"] == "unsupported"]
    assert unsup and all(x["correct"] for x in unsup)
    clin = [x for x in res if x["task"] in ("reported", "exhibited") and x["expect"] != "unsupported"]
    assert sum(x["correct"] for x in clin) >= 0.7 * len(clin)
    # the same bound queries in template wording ran next to every answerable row
    assert all(x["template"]["plan_hit"] for x in res if x["expect"] != "unsupported")
    md, js = write_tables(tmp_path, "rule/gt@tune", res, {"split": "tune", "setup": "A3", "index": "gt"})
    assert "rule/gt@tune" not in md.read_text() and "rule/gt@tune" in js.read_text()   # md: eval half only
    md, js = write_tables(tmp_path, "rule/gt", res, {"split": "eval", "setup": "A3", "index": "gt"})
    text = md.read_text()
    assert ("| task | rule/gt n | rule/gt plan hit | rule/gt answer acc | rule/gt template plan hit | "
            "rule/gt template answer acc | llm n | llm plan hit | llm answer acc |" in text)
    assert "Only the evaluation half" in text
    assert "| exhibited |" in text and "| **answerable** |" in text and "| **all** |" in text


def test_paraphrase_subset_is_fixed_and_covers_every_task():
    from harp_lib.evaluate.paraphrase_set import subset
    rows = load_paraphrases()
    sub = subset(rows, 2)
    answerable = [r for r in sub if r.get("expect") != "unsupported"]
    assert sorted({r["task"] for r in answerable}) == sorted(TASK_ORDER)          # all ten types
    assert all(sum(r["task"] == t for r in answerable) == 2 for t in TASK_ORDER)
    assert sum(r.get("expect") == "unsupported" for r in sub) == 2
    assert [r["id"] for r in sub] == sorted(r["id"] for r in sub) == [r["id"] for r in subset(rows[::-1], 2)]
    with pytest.raises(ValueError, match="per-task must be >= 1"):
        subset(rows, 0)


def test_subset_columns_name_their_size(tmp_path):
    res = [{"id": "p001", "task": "state", "domain": "emotion", "expect": "answer", "plan_hit": True, "correct": 1},
           {"id": "p011", "task": "change", "domain": "emotion", "expect": "answer", "plan_hit": False, "correct": 0}]
    write_tables(tmp_path, "rule", res, {"split": "eval", "questions": 2})
    md, _ = write_tables(tmp_path, "llm@subset", res[:1], {"split": "eval", "questions": 1, "model": "m"})
    text = md.read_text()
    assert "| task | rule n | rule plan hit | rule answer acc | llm@subset n |" in text
    assert "| llm n |" not in text                                     # no empty placeholder column
    assert "| state | 1 | 100.0 | 100.0 | 1 | 100.0 | 100.0 |" in text
    assert "| change | 1 | 0.0 | 0.0 | 0 | – | – |" in text


def test_question_kinds_never_take_a_benchmark_question(ci_bench):
    """Issue 32: `harp ask` reads questions with tasks.recording.understand (the question kinds about a
    user's recording first); on every ci query and every bound paraphrase of the tune half it gives what
    read_question gives."""
    from harp_lib.tasks.recording import understand
    rows = [r for r in load_paraphrases() if r["split"] == "tune"]
    n = 0
    for domain, (recs, queries, _, _) in ci_bench.items():
        bt, by_id = _by_type(queries), {x.id: x for x in recs}
        bound = [b[0] for b in (bind(r, bt, by_id) for r in rows if r["task"] in bt) if b is not None]
        for q in list(queries) + bound:
            roles = tuple(q.references)
            assert understand(q.text, domain, roles) == read_question(q.text, domain, roles), q.text
            n += 1
    assert n >= 150                                 # 34 ci queries and 158 bound tune paraphrases


def test_the_split_is_the_fixed_rule_and_stratified():
    """Issue 31: every row carries the split ``split_rows`` gives from its id alone; each half holds
    >= 10 rows of every task (and some no task fits)."""
    from harp_lib.evaluate.paraphrase_set import split_rows
    rows = load_paraphrases()
    assert {r["id"]: r["split"] for r in rows} == split_rows(rows)
    for half in ("tune", "eval"):
        per = Counter("unsupported" if r.get("expect") == "unsupported" else r["task"] for r in rows
                      if r["split"] == half)
        assert min(per[t] for t in TASK_ORDER) >= 10 and per["unsupported"] >= 5, (half, per)
    assert split_rows(rows[::-1]) == split_rows(rows)                  # order of the file does not matter
