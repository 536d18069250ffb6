"""Clinical query types (MedMosaic): reported (Semantic) and exhibited (Acoustic) symptoms."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..answer_format import yes_no_in
from ..labels import RESPIRATORY_TERMS, cough_count
from .base import Task, TypedRecord, cite
from .registry import register

__all__ = ["YesNoGT", "YesNoInfo", "YesNoTask", "ReportedTask", "ExhibitedTask"]

_NEGATION = re.compile(r"\b(no|not|never|without|denies|deny|don't|didn't|haven't|hasn't)\b(\W+\w+){0,2}\W+$")


@dataclass(frozen=True, kw_only=True)
class YesNoGT(TypedRecord):
    answer: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class YesNoInfo(TypedRecord):
    type: Optional[str] = None
    group: Optional[str] = None
    annotation: Optional[str] = None


class YesNoTask(Task):
    """Yes/No questions: the first Yes/No of the answer must equal the GT answer."""
    domain = "clinical"
    GroundTruth, JudgeInfo = YesNoGT, YesNoInfo
    human_form = ("choice", [("Yes", "Yes"), ("No", "No")])

    def parse_decision(self, decision: str) -> Optional[str]:
        return yes_no_in(decision)

    def verdict(self, query, decision, *, tol):
        want = str(query.ground_truth.get("answer", "")).strip().capitalize()
        said = self.parse_decision(decision)
        return int(said == want), f"GT {want}; answer says {said or 'neither yes nor no'}"

    def ground_truth_lines(self, query, tol):
        lines = [f"answer: {query.ground_truth.get('answer')}"]
        for k in ("group", "annotation"):
            if query.judge_info.get(k):
                lines.append(f"{k}: {query.judge_info[k]}")
        return lines

    def empty_oracle_is_error(self) -> bool:
        return False   # a "No" has nothing to find: the whole consultation is the right window

    def human_correct(self, query, choice, *, tol):
        return str(choice).strip().lower() == str(query.ground_truth.get("answer")).strip().lower()


@register
class ReportedTask(YesNoTask):
    """Does the patient report a respiratory symptom (said in words)?"""
    name, column, order = "reported", "Semantic", 60

    def rule_answer(self, ctx, sets):
        cites = []
        for _, items in sets:
            for it in items:
                low = (it.text or "").lower()
                found = None
                for term in RESPIRATORY_TERMS:
                    for m in re.finditer(r"\b" + term + r"\w*", low):
                        if not _NEGATION.search(low[:m.start()]):
                            found = m.group(0)
                            break
                    if found:
                        break
                syms = it.labels.get("symptoms") or []
                if found or syms:
                    what = f'"{found}"' if found else "symptoms=" + ",".join(map(str, syms))
                    cites.append(cite(it, what, speaker=ctx.setup.show_metadata))
        if cites:
            return "Yes", "Respiratory symptoms are mentioned: " + "; ".join(dict.fromkeys(cites)) + "."
        n = sum(len(i) for _, i in sets)
        return "No", f"None of the {n} retrieved turns mentions a respiratory symptom."


@register
class ExhibitedTask(YesNoTask):
    """Does the patient audibly cough (or sneeze, clear the throat)?"""
    name, column, order = "exhibited", "Acoustic", 70

    def rule_answer(self, ctx, sets):
        cites = []
        for _, items in sets:
            for it in items:
                n = it.labels.get("cough_count")
                if not isinstance(n, int):
                    try:
                        n = cough_count(str(it.labels.get("primary", "")))
                    except ValueError:
                        n = 0
                ev = [e for e in (it.labels.get("events") or []) if e in ("cough", "sneeze", "throat_clear")]
                if n > 0 or ev:
                    cites.append(cite(it, f"cough_count={n}" + (f" events={','.join(ev)}" if ev else ""),
                                      speaker=ctx.setup.show_metadata))
        if cites:
            return "Yes", "Audible respiratory events: " + "; ".join(dict.fromkeys(cites)) + "."
        n = sum(len(i) for _, i in sets)
        return "No", f"No cough or respiratory sound in the {n} retrieved segments."
