"""spread.py and tables.py share one Table II Avg and one row list (issue 32): the bootstrap's
point estimate is the table's Avg, cell for cell, on uneven random scores."""
from __future__ import annotations

import math
import random

from harp_lib import tasks
from harp_lib.evaluate import spread, tables
from harp_lib.core.schema import Score


def _scores(seed: int) -> list[Score]:
    rnd = random.Random(seed)
    out = []
    for setup in ("A1", "A4", "A7"):
        for t in tasks.all_tasks():
            if rnd.random() < 0.25:                      # some types missing: Avg over those present
                continue
            for i in range(rnd.randint(1, 9)):
                out.append(Score(f"{t.name}-{i}", setup, t.domain, t.name, "rule",
                                 float(rnd.random() < 0.6), float(rnd.random() < 0.3)))
    return out


def test_one_definition_of_avg_and_rows():
    assert tables.macro_avg is spread.macro_avg
    assert tables.TABLE2_ROWS is spread.TABLE2_ROWS
    assert tables.TABLE2_ROWS[:7] == ("A1", "A2", "A3", "A4", "A5", "A6", "A7") and len(tables.TABLE2_ROWS) == 14


def test_bootstrap_point_is_table2_avg():
    for seed in range(5):
        ss = _scores(seed)
        t2 = tables.table2(ss)
        ms = spread.macro_summary(ss, n_boot=50)
        assert list(ms["rows"]) == [r for r in tables.TABLE2_ROWS if not math.isnan(t2.loc[r, "Avg"])]
        for row, v in ms["rows"].items():
            assert v["avg"] == round(float(t2.loc[row, "Avg"]), 2), (seed, row)
            assert v["ci95"][0] <= v["avg"] <= v["ci95"][1]


def test_macro_avg_on_replicate_arrays_is_per_replicate():
    import numpy as np
    a, b, c = np.array([100.0, 0.0]), np.array([50.0, 50.0]), np.array([0.0, 30.0])
    got = spread.macro_avg({"State": a, "Change": b, "Semantic": c, "Time": float("nan")})
    want = [spread.macro_avg({"State": a[i], "Change": b[i], "Semantic": c[i]}) for i in range(2)]
    assert got.tolist() == want == [37.5, 27.5]
