"""The seven named setups of Table II (rows A1..A7, rationale rows R1..R7) and the planner's tools.

>>> SETUPS["A5"].tools
('time', 'keyword', 'label', 'text_emb', 'audio_emb', 'domain_emb')
>>> SETUPS["A4"].strip_domain, SETUPS["A4"].attach_audio
(True, True)
"""
from __future__ import annotations

from dataclasses import dataclass

from harp_lib.config.errors import ConfigError

#: Tools a plan set may call, in the order the planner prompt lists them.
TOOLS: tuple[str, ...] = ("time", "keyword", "label", "text_emb", "audio_emb", "domain_emb")


@dataclass(frozen=True)
class Setup:
    """A named retrieval x evidence configuration (one row of Table II).

    Derived fields replace the reference code's practice of inferring behaviour from file
    names: ``tools`` (what the planner may call), ``attach_audio`` (set clips are sent),
    ``strip_domain`` (text and labels hidden from the answerer), ``oracle`` (plan from ground
    truth) and ``skip_faithful`` (rationale = factual only, as the paper does for audio-only).
    """
    name: str
    retrieval: str      # keyword | vector | hybrid | oracle
    evidence: str       # metadata | audio | multimodal
    slug: str           # the reference code's name for it

    @property
    def tools(self) -> tuple[str, ...]:
        return {
            "keyword": ("time", "keyword", "label"),
            "vector": ("text_emb", "audio_emb", "domain_emb"),
            "hybrid": TOOLS,
            "oracle": ("time",),
        }[self.retrieval]

    @property
    def oracle(self) -> bool:
        return self.retrieval == "oracle"

    @property
    def attach_audio(self) -> bool:
        return self.evidence in ("audio", "multimodal")

    @property
    def show_metadata(self) -> bool:
        return self.evidence in ("metadata", "multimodal")

    @property
    def strip_domain(self) -> bool:
        return self.evidence == "audio"

    @property
    def skip_faithful(self) -> bool:
        return self.evidence == "audio"

    @property
    def answer_row(self) -> str:
        return self.name

    @property
    def rationale_row(self) -> str:
        return "R" + self.name[1:]

    def describe(self) -> str:
        return f"{self.name}: {self.retrieval} retrieval + {self.evidence} evidence"


SETUPS: dict[str, Setup] = {
    "A1": Setup("A1", "keyword", "metadata", "text"),
    "A2": Setup("A2", "vector", "metadata", "embed"),
    "A3": Setup("A3", "hybrid", "metadata", "hybrid"),
    "A4": Setup("A4", "hybrid", "audio", "hybrid_audio"),
    "A5": Setup("A5", "hybrid", "multimodal", "hybrid_all"),
    "A6": Setup("A6", "oracle", "audio", "oracle_audio"),
    "A7": Setup("A7", "oracle", "multimodal", "oracle_all"),
}
SETUP_ORDER: tuple[str, ...] = tuple(SETUPS)


def get_setup(name: str) -> Setup:
    """Look a setup up by row name (``A5``), rationale row (``R5``) or slug (``hybrid_all``)."""
    key = name.strip()
    if key.upper() in SETUPS:
        return SETUPS[key.upper()]
    if key.upper().startswith("R") and "A" + key[1:] in SETUPS:
        return SETUPS["A" + key[1:]]
    for s in SETUPS.values():
        if s.slug == key:
            return s
    raise UnknownSetupError(f"unknown setup {name!r}; choose one of {', '.join(SETUPS)} "
                            f"({', '.join(s.slug for s in SETUPS.values())})")


class UnknownSetupError(ConfigError, KeyError):
    """A setup name that is none of A1..A7 (or R1..R7 / the reference slugs)."""
    __module__ = "harp_lib.config"       # its public name (tracebacks print it)

    def __str__(self) -> str:            # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
