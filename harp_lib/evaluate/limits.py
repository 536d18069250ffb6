"""What a Table II row can and cannot measure with the backends a profile runs
(the "offline limits" shown beside the table in ``notebooks/table2_main_results``).

The rows are read from the configuration, never from results: a profile that swaps in the
paper's models (LLM planner/answerer, audio LLM, LLM judges) gets fewer caveats.

>>> from harp_lib.config import load_config
>>> lim = offline_limits(load_config(profile="mini"))
>>> list(lim.columns)
['rows', 'what the number measures here', 'what it cannot measure']
>>> "A4-A7" in set(lim["rows"]) and "R1-R7" in set(lim["rows"])
True
"""
from __future__ import annotations

from harp_lib.config import Config

__all__ = ["offline_limits"]

_SERVED = ("openai",)     # llm backends that reach a real (possibly audio) model server


def _labelers(cfg: Config) -> str:
    lab = cfg.get("extract.backends").get("labelers") or {}
    names = sorted({(n["name"] if isinstance(n, dict) else n) for v in lab.values() for n in (v or [])})
    return ", ".join(names) or "none"


def offline_limits(cfg: Config):
    """One row per group of Table II rows: what the number measures with this profile's backends
    and what it cannot (an empty frame when every part is the paper's model)."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    agent, ev = cfg.get("agent"), cfg.get("evaluate")
    llm_backend = cfg.get("llm.backend")
    rule_agent = agent["planner"] == "rule" and agent["answerer"] == "rule"
    audio_llm = agent["answerer"] == "llm" and llm_backend in _SERVED
    rows = []
    if rule_agent:
        rows.append({"rows": "A1-A7",
                     "what the number measures here": "a deterministic rule planner and answerer (agent.planner/answerer: "
                                                      "rule) over the retrieved segments' labels and transcripts",
                     "what it cannot measure": "how an LLM plans, reads evidence or phrases an answer; the offline LLM "
                                               "agent's rows are a separate table (table2_llm)"})
    if not audio_llm:
        rows.append({"rows": "A4-A7",
                     "what the number measures here": f"the clips are 'heard' by the offline labelers "
                                                      f"({_labelers(cfg)}) run again on the clip audio, not by a model",
                     "what it cannot measure": "audio understanding by an audio LLM (the paper's Qwen3-Omni): "
                                               "A4/A6 (audio only) can never beat the labelers' own accuracy, and "
                                               "A5 vs A3 shows what re-labelling the clip adds, not what listening adds"})
    if ev["table_judge"] == "rule":
        rows.append({"rows": "R1-R7",
                     "what the number measures here": "the rule judge: cited times fall inside the evidence and cited "
                                                      "labels match it (deterministic checks)",
                     "what it cannot measure": "a reader's judgement of a free-text rationale (the paper's three LLM "
                                               "judges); see table_judge_agreement for an offline LLM judge on a subset"})
    if cfg.get("benchmark.source") == "synth":
        rows.append({"rows": "all columns",
                     "what the number measures here": "a generated benchmark: synthetic (TTS) voices with scripted "
                                                      "emotions, synthetic coughs, generated or short real songs",
                     "what it cannot measure": "the paper's corpora (LongEmo, MedMosaic, SongEval): compare trends "
                                               "between rows with the paper, not values"})
    return pd.DataFrame(rows, columns=["rows", "what the number measures here", "what it cannot measure"])
