"""Agreement between judges (HARP_REFERENCE §5.7): leniency, Cohen's and Fleiss' kappa, and
all-judge percent agreement, per domain, for the answer and rationale verdicts.

Degenerate cases (documented conventions, no division by zero):

* no items -> every statistic is ``None``;
* expected agreement ``p_e == 1`` (every rating of every judge is the same single class):
  observed agreement is then 1 as well and kappa is reported as **1.0** (perfect, trivially);
* judges that are each constant but in *different* classes: ``p_o = p_e = 0`` -> kappa 0.0;
* fewer than two judges: kappas and percent agreement are ``None``.

>>> cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0])
0.5
>>> round(fleiss_kappa([[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 0]]), 4)
0.3333
>>> cohen_kappa([1, 1], [1, 1]), fleiss_kappa([[0, 0, 0]])
(1.0, 1.0)
"""
from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Hashable, Iterable, Optional, Sequence

__all__ = ["cohen_kappa", "fleiss_kappa", "percent_agreement", "leniency", "agreement_stats",
           "judge_agreement"]


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> Optional[float]:
    """Cohen's kappa of two raters; expected agreement from the product of the marginals."""
    if len(a) != len(b):
        raise ValueError(f"raters rated different numbers of items ({len(a)} vs {len(b)})")
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    if pe >= 1.0 - 1e-12:
        return 1.0
    return (po - pe) / (1.0 - pe)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> Optional[float]:
    """Fleiss' kappa; ``ratings[i]`` holds the ratings of item ``i`` by every rater (k >= 2)."""
    items = [list(r) for r in ratings]
    if not items:
        return None
    k = len(items[0])
    if k < 2 or any(len(r) != k for r in items):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings for every item")
    n_items = len(items)
    cats = sorted({c for r in items for c in r}, key=repr)
    p_bar = 0.0
    totals = Counter()
    for r in items:
        cnt = Counter(r)
        totals.update(cnt)
        p_bar += (sum(v * v for v in cnt.values()) - k) / (k * (k - 1))
    p_bar /= n_items
    pe = sum((totals[c] / (n_items * k)) ** 2 for c in cats)
    if pe >= 1.0 - 1e-12:
        return 1.0
    return (p_bar - pe) / (1.0 - pe)


def percent_agreement(ratings: Sequence[Sequence[Hashable]]) -> Optional[float]:
    """Fraction of items on which every rater gives the same rating.

    >>> percent_agreement([[1, 1, 1], [1, 0, 1]])
    0.5
    """
    items = [list(r) for r in ratings]
    if not items:
        return None
    return sum(len(set(r)) == 1 for r in items) / len(items)


def leniency(values: Iterable[float]) -> Optional[float]:
    """A judge's mean verdict (share of YES)."""
    v = [float(x) for x in values]
    return sum(v) / len(v) if v else None


def agreement_stats(by_judge: dict[str, Sequence[int]]) -> dict:
    """All statistics for aligned verdict lists ``{judge: [v_item0, v_item1, ...]}``.

    >>> s = agreement_stats({"a": [1, 0, 1, 1], "b": [1, 0, 0, 1]})
    >>> s["percent_agreement"], s["cohen_kappa[a|b]"], s["leniency[b]"]
    (0.75, 0.5, 0.5)
    """
    judges = sorted(by_judge)
    lens = {len(by_judge[j]) for j in judges}
    if len(lens) > 1:
        raise ValueError(f"judges rated different numbers of items: {lens}")
    n = lens.pop() if lens else 0
    out: dict = {"n_items": n, "n_judges": len(judges)}
    for j in judges:
        out[f"leniency[{j}]"] = leniency(by_judge[j])
    if len(judges) < 2:
        out.update(percent_agreement=None, fleiss_kappa=None, mean_cohen_kappa=None)
        return out
    rows = [[by_judge[j][i] for j in judges] for i in range(n)]
    out["percent_agreement"] = percent_agreement(rows)
    out["fleiss_kappa"] = fleiss_kappa(rows)
    ks = []
    for a, b in combinations(judges, 2):
        kv = cohen_kappa(by_judge[a], by_judge[b])
        out[f"cohen_kappa[{a}|{b}]"] = kv
        if kv is not None:
            ks.append(kv)
    out["mean_cohen_kappa"] = sum(ks) / len(ks) if ks else None
    return out


def judge_agreement(scores, *, metrics: Sequence[str] = ("answer", "rationale")):
    """Agreement table from :class:`~harp_lib.core.schema.Score` rows of several judges.

    One row per (domain, metric); items are the (setup, query_id) pairs every judge scored.
    Returns a pandas DataFrame (empty when there are no scores).
    """
    import pandas as pd  # heavy: pandas (~0.4 s)
    by: dict[tuple[str, str], dict[tuple[str, str], object]] = {}
    for s in scores:
        by.setdefault((s.domain, s.judge), {})[(s.setup, s.query_id)] = s
    domains = sorted({d for d, _ in by})
    rows = []
    for d in domains:
        judges = sorted(j for dd, j in by if dd == d)
        common = set.intersection(*(set(by[(d, j)]) for j in judges)) if judges else set()
        keys = sorted(common)
        for m in metrics:
            vals = {j: [int(round(getattr(by[(d, j)][k], m))) for k in keys] for j in judges}
            rows.append({"domain": d, "metric": m, "judges": ",".join(judges), **agreement_stats(vals)})
    return pd.DataFrame(rows)
