"""Run the agent over a benchmark: ``harp infer --domain D --setup A1..A7``.

Reads ``data/benchmark/<domain>/{recordings,queries}.jsonl`` and ``data/index/<domain>/``,
appends one :class:`~harp_lib.core.schema.Prediction` per query to
``data/predictions/<domain>/<setup>.jsonl`` (resumable: query ids already written are
skipped).  A query that fails is written with ``error`` set, never dropped: a reference clip
that is missing or outside the data root, an LLM server that stays down after its retries
(``LLMError``), an empty answer.  On resume, a torn last line (a kill mid-write) is cut and
rows that failed only because the LLM was unreachable are retried, so no row is duplicated.

Notebook use::

    from harp_lib.config import load_config
    from harp_lib.agent import run_setup
    preds = run_setup(load_config(), "emotion", "A3", limit=5)
"""
from __future__ import annotations

import logging
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional, Sequence

from harp_lib.core.atomic import StorageError
from harp_lib.config import AgentRunParams, Config, Setup, create_backend, get_setup, positive_int
from harp_lib.core.locks import LockBusy, stage_lock
from harp_lib.core.progress import progress as bar
from harp_lib.core.paths import DataPaths
from harp_lib.core.jsonl import (append_jsonl, check_own_jsonl, drop_jsonl_rows, read_jsonl, repair_jsonl_tail,
                                 reset_jsonl)
from harp_lib.core.schema import Evidence, Plan, Prediction, Query, Recording, Segment, read_predictions
from harp_lib.agent.context import QueryContext, agent_params
from harp_lib.agent.plan_parse import plan_fell_back
from harp_lib.llm import make_client
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.retrieval.references import Hearing
from harp_lib.retrieval.tools import QueryEncoder, RetrievalTrace, retrieve
from harp_lib.core.segments import SegmentSet

__all__ = ["Agent", "answer_query", "run_setup", "prediction_path"]

log = logging.getLogger(__name__)


def prediction_path(cfg: Config, domain: str, setup: str) -> Path:
    """``data/predictions/<domain>/<setup>.jsonl``: the file :class:`~harp_lib.core.paths.DataPaths`
    builds, under the setup's canonical row name (as :func:`harp_lib.evaluate.store.predictions_path`)."""
    return DataPaths(cfg).predictions(domain, get_setup(setup).name)


class Agent:
    """Planner + tools + answerer for one domain and setup (shared across queries).

    ``planner`` / ``answerer`` default to params.yaml ``agent.planner`` / ``agent.answerer``
    (the oracle setups always use the oracle planner); an LLM client is built from ``llm:``
    only when one of them needs it.
    """

    def __init__(self, index, setup: Setup | str, cfg: Optional[Config] = None, *, domain: str,
                 planner: Any = None, answerer: Any = None, client: Any = None, encoder: Any = None,
                 hearing: Any = None, params: Optional[AgentRunParams] = None):
        self.cfg = cfg
        self.setup = get_setup(setup) if isinstance(setup, str) else setup
        self.domain = domain
        self.index = index
        self.params = params if params is not None else agent_params(cfg)
        self._client = client
        self.planner = self._make("planner", "oracle" if self.setup.oracle else
                                  (planner if isinstance(planner, str) else None) or self.params.planner,
                                  planner if planner is not None and not isinstance(planner, str) else None)
        self.answerer = self._make("answerer", (answerer if isinstance(answerer, str) else None)
                                   or self.params.answerer,
                                   answerer if answerer is not None and not isinstance(answerer, str) else None)
        self.encoder = encoder or QueryEncoder(getattr(index, "spaces", {}) or {},
                                               sr=int(self.params.clip_sample_rate))
        self.hearing = hearing if hearing is not None else Hearing(domain, cfg,
                                                                   sr=int(self.params.clip_sample_rate))

    @property
    def client(self):
        if self._client is None:
            if self.cfg is None:
                raise ValueError("an LLM planner/answerer needs a Config (llm: section) or client=")
            self._client = make_client(self.cfg.get("llm"), root=self.cfg.root)
        return self._client

    def _make(self, stage: str, name: str, given: Any):
        if given is not None:
            return given
        kwargs = {"client": self.client} if name == "llm" else {}
        return create_backend(stage, name, **kwargs)

    def backends(self) -> dict:
        out = {"planner": getattr(self.planner, "name", type(self.planner).__name__),
               "answerer": getattr(self.answerer, "name", type(self.answerer).__name__)}
        if "llm" in out.values() and self._client is not None:
            out["llm"] = getattr(self._client, "backend", "")
            out["llm_model"] = getattr(self._client, "model_id", "")
        for space, meta in sorted((getattr(self.index, "spaces", {}) or {}).items()):
            out[f"{space}_emb"] = f"{meta.get('backend')}:{meta.get('model')}"
        return out

    def context(self, query: Query, recording: Recording, bench_dir: Optional[Path],
                gt_segments: Optional[list] = None) -> QueryContext:
        return QueryContext(query=query, recording=recording, setup=self.setup, index=self.index,
                            params=self.params, bench_dir=bench_dir, gt_segments=gt_segments,
                            encoder=self.encoder, hearing=self.hearing)

    def __call__(self, query: Query, recording: Recording, bench_dir: Optional[Path] = None,
                 gt_segments: Optional[list] = None, *, trace: bool = False):
        """Plan, retrieve and answer one query; errors are recorded in the prediction.

        With ``trace=True`` returns ``(prediction, RetrievalTrace)`` (the per-tool hits of
        :func:`~harp_lib.retrieval.tools.retrieve`; empty when planning failed).
        """
        rtrace = RetrievalTrace()
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        plan, evidence, answer, rationale, err, raw = Plan(), Evidence(), "", "", None, ""
        meta: dict = {}
        stage = "inputs"
        try:
            if query.recording_id != recording.id:
                raise ValueError(f"query {query.query_id} is about {query.recording_id!r}, "
                                 f"got recording {recording.id!r}")
            ctx = self.context(query, recording, bench_dir, gt_segments)
            missing = [f"{r}={p}" for r, p in ctx.references.items() if not p.is_file()]   # resolve_under
            if missing:                                        # refuses URLs and ../ escapes
                raise FileNotFoundError(f"reference clip(s) not found: {', '.join(missing)}")
            stage = "plan"
            plan, m = self.planner.plan(ctx)
            meta.update(m)
            timings["plan_sec"] = round(time.perf_counter() - t0, 3)
            stage = "retrieve"
            t1 = time.perf_counter()
            evidence, rtrace = retrieve(plan, ctx, trace=True)
            timings["retrieve_sec"] = round(time.perf_counter() - t1, 3)
            stage = "answer"
            t2 = time.perf_counter()
            answer, rationale, m = self.answerer.answer(ctx, plan, evidence)
            meta.update(m)
            timings["answer_sec"] = round(time.perf_counter() - t2, 3)
            if not str(answer or "").strip():
                raise ValueError("the answerer returned an empty answer")
        except Exception as e:  # noqa: BLE001 - recorded, never dropped
            err = f"{stage} failed for query {query.query_id}: {type(e).__name__}: {e}"
            log.warning("%s", err)                     # one line; the traceback with --debug
            log.debug("%s", traceback.format_exc(limit=3))
        timings["total_sec"] = round(time.perf_counter() - t0, 3)
        raw_plan, raw_answer = str(meta.pop("raw_plan", "") or ""), str(meta.pop("raw_output", "") or "")
        raw = (f"PLAN:\n{raw_plan}\n\nANSWER:\n{raw_answer}" if raw_plan and raw_answer
               else raw_plan or raw_answer)
        backends = self.backends()
        backends.update({k: v for k, v in meta.items() if k not in ("planner", "answerer")})
        pred = Prediction(query_id=query.query_id, setup=self.setup.name, domain=query.domain,
                          recording_id=query.recording_id, query_type=query.query_type, plan=plan,
                          evidence=evidence, answer=answer, rationale=rationale, backends=backends,
                          timings=timings, error=err, raw_output=raw)
        return (pred, rtrace) if trace else pred


def answer_query(query: Query, index, setup: Setup | str, cfg: Optional[Config] = None, *,
                 recording: Optional[Recording] = None, bench_dir: Optional[Path] = None,
                 gt_segments: Optional[list] = None, **agent_kw) -> Prediction:
    """Answer one query (notebooks).  ``recording`` defaults to a stub with the index's extent.

    >>> from harp_lib.retrieval.index import SegmentIndex
    >>> from harp_lib.core.schema import Segment
    >>> ix = SegmentIndex.from_segments([Segment("r_ext_0000", "r", 0, 20, "S0", "I feel great",
    ...                                          {"primary": "Happy"})])
    >>> q = Query("q", "emotion", "r", "state", 'Around 10 seconds, someone said "great". Which emotion?', {})
    >>> answer_query(q, ix, "A1", hearing=False).answer
    'Happy'
    """
    if recording is None:
        segs = index.segments(query.recording_id)
        dur = max((s.end for s in segs), default=0.0)
        recording = Recording(query.recording_id, query.domain, f"{query.recording_id}.wav", dur)
    hearing = agent_kw.pop("hearing", None)
    if hearing is False:
        hearing = Hearing(query.domain, None, labelers=[])
    agent = Agent(index, setup, cfg, domain=query.domain, hearing=hearing, **agent_kw)
    return agent(query, recording, bench_dir, gt_segments)


#: Prediction errors retried when a run resumes: the LLM could not be reached, or its reply was
#: no answer (a refusal or prose: never kept, like the reply cache never keeps it).
RETRY_ON_RESUME = ("LLMError: ", "NoAnswer: ")


def _done_ids(path: Path) -> set[str]:
    """Query ids already in ``path``, after cutting a torn last line and dropping the rows that
    failed only because the LLM server was unreachable (:data:`RETRY_ON_RESUME`)."""
    repair_jsonl_tail(path)
    kept, retry = drop_jsonl_rows(path, lambda row: "query_id" in row and any(
        m in str(row.get("error") or "") for m in RETRY_ON_RESUME))
    if retry:
        log.warning("%s: retrying %d queries whose LLM calls failed: %s", path, len(retry),
                    ", ".join(str(r["query_id"]) for r in retry))
    return {r["query_id"] for r in kept if "query_id" in r}


def run_setup(cfg: Config, domain: str, setup: str, *, limit: Optional[int] = None,
              out_path: Optional[Path] = None, resume: bool = True, progress: bool = True,
              query_ids: Optional[Sequence[str]] = None, queries: Optional[Sequence[Query]] = None,
              **agent_kw) -> list[Prediction]:
    """Run one setup over a domain's queries; returns every prediction in the output file order.

    ``queries``: the domain's queries already read by the caller (the parallel infer path parses
    ``queries.jsonl`` once and hands each worker its part), instead of reading the file again.

    Writes (appends) ``data/predictions/<domain>/<setup>.jsonl``; with ``resume`` the query ids
    already there are skipped.  The output file is locked for the run (a second run on it
    waits, then finds the rows written and adds none twice); ``out_path`` / ``resume=False``
    only ever write into a missing file or a prediction file (never a device, folder, symlink
    or another program's file).
    """
    s = get_setup(setup)
    dp = DataPaths(cfg)
    bench = dp.benchmark(domain)
    for f in ("recordings.jsonl", "queries.jsonl"):
        if not (bench / f).exists():
            raise FileNotFoundError(f"{bench / f} is missing: build the benchmark first "
                                    f"(harp synth, or harp prepare for the paper corpora)")
    idx_dir = dp.index(domain)
    if not idx_dir.exists():
        raise FileNotFoundError(f"{idx_dir} is missing: run `harp extract --domain {domain}` and "
                                f"`harp index --domain {domain}` first")
    recs = {r.id: r for r in read_jsonl(bench / "recordings.jsonl", Recording)}
    queries = [q for q in (read_jsonl(bench / "queries.jsonl", Query) if queries is None else queries)
               if q.domain == domain]
    if query_ids is not None:
        keep = set(query_ids)
        queries = [q for q in queries if q.query_id in keep]
    if limit is not None:
        queries = queries[: int(limit)]
    out = Path(out_path) if out_path else prediction_path(cfg, domain, s.name)
    check_own_jsonl(out, Prediction, setup=s.name, domain=domain)   # before anything is created beside it
    # default file: <predictions>/.locks/<domain>.infer-<setup>.lock; --out: .<name>.lock beside it
    lock = stage_lock(out.parent, f"infer-{s.name}") if not out_path else \
        stage_lock(out.parent, "infer", lock_path=out.with_name(f".{out.name}.lock"))
    with lock:
        return _run_locked(cfg, domain, s, queries, recs, bench, idx_dir, out, resume, progress, agent_kw)


def stale_index_message(extract_dir: Path, idx_dir: Path, domain: str) -> Optional[str]:
    """A warning when an extracted segment file is newer than the index (``harp infer`` prints it:
    the run would answer from an index that misses the latest extraction); None when not.  By
    modification time, so only the CLI says it: a DVC checkout sets times in any order."""
    seg = idx_dir / "segments.jsonl"
    files = sorted((extract_dir / "segments").glob("*.jsonl")) if (extract_dir / "segments").is_dir() else []
    if not seg.exists() or not files:
        return None
    newest = max(files, key=lambda p: p.stat().st_mtime_ns)
    if newest.stat().st_mtime_ns <= seg.stat().st_mtime_ns:
        return None
    return (f"the index {idx_dir} is older than the extraction ({newest} changed after it): answers come from "
            f"the old index; run `harp index --domain {domain}` first")


def _run_locked(cfg, domain, s, queries, recs, bench, idx_dir, out: Path, resume: bool, progress: bool,
                agent_kw: dict) -> list[Prediction]:
    check_own_jsonl(out, Prediction, setup=s.name, domain=domain)   # never another run's file
    if not resume:
        reset_jsonl(out, Prediction)
    done = _done_ids(out) if resume else set()
    todo = [q for q in queries if q.query_id not in done]
    gt_by_rec: dict[str, list[Segment]] = {}
    if s.oracle:
        segf = bench / "segments.jsonl"
        if not segf.exists():
            raise FileNotFoundError(f"{segf} is missing: the oracle setups {s.name} need ground-truth segments")
        gt_by_rec = SegmentSet.read(segf).by_recording()
    if todo:
        index = SegmentIndex.load(idx_dir)
        agent = Agent(index, s, cfg, domain=domain, **agent_kw)
        it = bar(todo, desc=f"infer {domain} {s.name}", total=len(todo)) if progress else todo
        for q in it:
            rec = recs.get(q.recording_id)
            if rec is None:
                pred = Prediction(q.query_id, s.name, q.domain, q.recording_id, q.query_type, Plan(), Evidence(),
                                  "", error=f"query {q.query_id}: recording {q.recording_id!r} is not in "
                                            f"{bench / 'recordings.jsonl'}")
            else:
                pred = agent(q, rec, bench, gt_by_rec.get(q.recording_id, []))
            append_jsonl(out, [pred])
    wanted = {q.query_id for q in queries}
    return [p for p in read_predictions(out, s.name, domain) if p.query_id in wanted] if out.exists() else []


def _summary(preds) -> str:
    """``N with errors (M no answer), K plans repaired, F planner replies not a plan``: a refusal
    or prose from the planner is a fallback plan, never counted as a repaired one."""
    n_err = sum(1 for p in preds if p.error)
    n_none = sum(1 for p in preds if p.error and "NoAnswer: " in p.error)
    n_fell = sum(1 for p in preds if plan_fell_back(p.plan))
    n_plan = sum(1 for p in preds if p.plan.errors and not plan_fell_back(p.plan))
    return (f"{n_err} with errors ({n_none} no answer: a refusal or prose), {n_plan} plans repaired, "
            f"{n_fell} planner replies not a plan (fell back to the full recording)")


def add_arguments(ap) -> None:
    """``harp infer --domain D --setup A1..A7 [--limit N]`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--domain", required=True, action="append",
                    help="emotion | clinical | song (repeatable)")
    ap.add_argument("--setup", required=True, action="append", help="A1..A7 (repeatable, or 'all')")
    ap.add_argument("--limit", type=positive_int, default=None, help="first N queries only (N >= 1)")
    ap.add_argument("--planner", default=None, help="override agent.planner (rule | llm)")
    ap.add_argument("--answerer", default=None, help="override agent.answerer (rule | llm)")
    ap.add_argument("--no-resume", action="store_true", help="overwrite instead of skipping done queries")
    ap.add_argument("--out", default=None, help="output file (one domain and setup only)")


def run(cfg: Config, a) -> int:
    setups = [x for s in a.setup for x in (cfg.setups if s == "all" else [s])]
    if a.out and (len(a.domain) > 1 or len(setups) > 1):
        print(f"harp infer: --out names one file but {len(a.domain)} domain(s) x {len(setups)} setup(s) "
              f"were asked for; give one --domain and one --setup with --out, or drop --out to write "
              f"<paths.predictions>/<domain>/<setup>.jsonl each", file=sys.stderr)
        return 2
    rc = 0
    for d in a.domain:
        dp = DataPaths(cfg)
        stale = stale_index_message(dp.extract_dir(d), dp.index(d), d)
        if stale:
            print(f"harp infer: warning: {stale}", file=sys.stderr)
        for s in setups:
            try:
                preds = run_setup(cfg, d, s, limit=a.limit, out_path=Path(a.out) if a.out else None,
                                  resume=not a.no_resume, planner=a.planner, answerer=a.answerer,
                                  progress=not a.quiet)
            except (FileNotFoundError, KeyError, ValueError, StorageError, LockBusy) as e:
                print(f"harp infer: {e}", file=sys.stderr)
                return 1 if isinstance(e, StorageError) else 2     # a storage fault is not a usage error
            print(f"{d} {get_setup(s).name}: {len(preds)} predictions -> "
                  f"{prediction_path(cfg, d, s) if not a.out else a.out} ({_summary(preds)})")
            n_err = sum(1 for p in preds if p.error)
            rc = rc or (1 if n_err == len(preds) and preds else 0)
    return rc
