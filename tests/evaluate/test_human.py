"""Human-study page: opens in headless Chromium, a scripted answer round-trips through the scorer."""
import json
import os
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.evaluate.human import (NoHumanAnswers, build_page, load_answer_files, score_answers,
                                     select_queries)
from harp_lib.core.schema import Recording

from eval_fixtures import queries

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _tone(path: Path, seconds: float, f: float = 440.0):
    t = np.arange(int(16000 * seconds)) / 16000
    audio.write(path, (0.1 * np.sin(2 * np.pi * f * t)).astype(np.float32), 16000)


def dump_dom(page: Path, fragment: str, tmp: Path) -> str:
    """Load ``page#fragment`` in headless Chromium and return the DOM after its scripts ran."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--mute-audio", f"--user-data-dir={tmp / 'chromium-profile'}", "--dump-dom",
           page.resolve().as_uri() + "#" + fragment]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=90,
                       env={**os.environ, "HOME": str(tmp)})
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("human")
    bench = tmp / "emotion"
    (bench / "recordings").mkdir(parents=True)
    (bench / "references").mkdir()
    _tone(bench / "recordings" / "ep1.wav", 1.0)
    for ref in ("spk_a", "spk_b", "angry", "sad"):
        _tone(bench / "references" / f"{ref}.wav", 0.2, 660.0)
    qs = [q for q in queries() if q.domain == "emotion"]
    recs = {"ep1": Recording("ep1", "emotion", "recordings/ep1.wav", 300.0)}
    p = build_page(qs, recs, bench, tmp / "pages" / "emotion_ep1.html")
    return tmp, p, {q.query_id: q for q in qs}


def test_page_is_self_contained_and_hides_ground_truth(page):
    _, p, qs = page
    html = p.read_text()
    assert "data:audio/flac;base64," in html and "http://" not in html and "https://" not in html
    for key in ("ground_truth", "gt_segment_ids", "emotion text 3", '"t0"'):
        assert key not in html
    for ui in ("Are you sure?", "Difficulty (0-4)", "ArrowLeft", "playbackRate", "Add note", "download"):
        assert ui in html


@pytest.mark.slow
def test_scripted_answers_round_trip_through_chromium_and_scorer(page):
    tmp, p, qs = page
    spec = {"answers": {
        "e_state": {"choice": ["Happy", "Surprise"], "sure": True, "difficulty": 1},      # right
        "e_change": {"choice": "falling", "sure": False, "difficulty": 3},               # wrong
        "e_comp": {"choice": "B", "sure": True, "difficulty": 2},                        # right
        "e_locate": {"choice": "1:46", "sure": True, "difficulty": 4},                   # 106 s: right (104 + 3)
        # e_locate_hard left unanswered
    }, "notes": [{"recording_id": "ep1", "t": 12.5, "text": "laughs here"}]}
    dom = dump_dom(p, "harp-autofill=" + quote(json.dumps(spec)), tmp)
    m = re.search(r'<pre id="harp-export">(.*?)</pre>', dom, flags=re.S)
    assert m and m.group(1).strip(), dom[-2000:]
    doc = json.loads(unescape(m.group(1)))
    assert doc["page_id"] == "emotion_ep1" and doc["recording_ids"] == ["ep1"]
    assert doc["notes"] == [{"recording_id": "ep1", "t": 12.5, "text": "laughs here"}]
    got = {a["query_id"]: a for a in doc["answers"]}
    assert got["e_state"]["choice"] == ["Happy", "Surprise"] and got["e_locate_hard"]["choice"] is None
    assert got["e_locate"] == {"query_id": "e_locate", "recording_id": "ep1", "query_type": "locate",
                               "choice": "1:46", "sure": True, "difficulty": 4}
    f = tmp / "answers" / "emotion_ep1.json"
    f.parent.mkdir()
    f.write_text(json.dumps(doc))
    df = score_answers(load_answer_files(f.parent), qs, tol=3.0).set_index("query_type")
    assert df.loc["state", "accuracy"] == 1.0 and df.loc["change", "accuracy"] == 0.0
    assert df.loc["locate", "accuracy"] == 1.0 and df.loc["locate_hard", "n_skipped"] == 1
    assert df.loc["change", "confidence"] == 0.0 and df.loc["change", "inverted_difficulty"] == 1.0
    # with a 1 s tolerance the 1:46 answer (106 s) is outside [99, 105]
    assert score_answers(load_answer_files(f), qs, tol=1.0).set_index("query_type").loc["locate", "accuracy"] == 0.0
    assert df.loc["Avg", "n_answers"] == 4


def test_no_answer_files_is_said_clearly(tmp_path):
    with pytest.raises(NoHumanAnswers, match="none were collected"):
        load_answer_files(tmp_path)


def test_select_queries_is_seeded_and_capped():
    qs = queries()
    a = select_queries(qs, max_per_type=1, seed=3)
    assert [q.query_id for q in a] == [q.query_id for q in select_queries(qs, max_per_type=1, seed=3)]
    assert len(a) == 10 and len({q.query_type for q in a}) == 10


@pytest.mark.slow
@pytest.mark.parametrize("demo", [False, True])
def test_figure4_marks_simulated_answers_apart_from_the_real_agent_lines(tmp_path, demo):
    """fig4's demo bars looked like a study's: now they are grey, hatched and labelled SIMULATED /
    DEMO, while the A4/A5 lines say they are real agent results.  A real study keeps its colours."""
    import matplotlib
    matplotlib.use("Agg")
    from harp_lib.evaluate.figures import figure4
    from harp_lib.core.schema import Score
    qs = [q for q in queries() if q.domain == "emotion"]
    doc = {"page_id": "p", "recording_ids": ["ep1"],
           "answers": [{"query_id": q.query_id, "recording_id": "ep1", "query_type": q.query_type,
                        "choice": None, "sure": True, "difficulty": 2} for q in qs]}
    (tmp_path / "a.json").write_text(json.dumps(doc))
    scores = [Score(q.query_id, s, "emotion", q.query_type, "rule", 1.0, 1.0) for q in qs for s in ("A4", "A5")]
    fig = figure4([tmp_path / "a.json"], scores, {q.query_id: q for q in qs}, tol=3.0, demo=demo)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    bars = [p for p in ax.patches if p.get_height() > 0 or p.get_width() > 0]
    if demo:
        assert all("SIMULATED" in lab for lab in labels[:2]) and "DEMO" in ax.get_title()
        assert all("real agent result" in lab for lab in labels[2:]) and len(labels) == 4
        assert bars and all(p.get_hatch() == "//" for p in bars)
    else:
        assert not any("SIMULATED" in lab or "DEMO" in lab for lab in labels + [ax.get_title()])
        assert not any(p.get_hatch() for p in bars)
