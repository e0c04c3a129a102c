"""What a judge is. A *scorer* gives two primitive signals on text pairs; ``ScorerJudge`` (eval/judges/scorer.py)
turns any scorer into every metric a model computes (eval/metrics/). Judges that score whole metrics themselves
(ragas) and the labels judge implement ``Judge`` directly."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from corpora.records import MetricResult, Trace


@dataclass(frozen=True)
class Support:
    """How strongly a premise supports a hypothesis; ``contradicted`` when the scorer can tell (3-way NLI, LLM)."""

    supported: float
    contradicted: float | None = None


@dataclass(frozen=True)
class ClaimItem:
    """One claim to check: its candidate premise windows and the whole evidence (for a claim-level scorer)."""

    claim: str
    windows: Sequence[str]
    evidence: str


@dataclass(frozen=True)
class ClaimScore:
    support: float  # P(supported)
    best: int | None  # index of the window the scorer found most supportive (None: no windows)
    features: dict[str, float]


class Scorer(Protocol):
    name: str
    family: str  # "nli", "llm", "embedding", "lexical"
    support_threshold: float  # supported when Support.supported >= this
    relevance_threshold: float

    def support(self, pairs: list[tuple[str, str]]) -> list[Support]:
        """(premise, hypothesis) -> support, for a batch."""
        ...

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        """(question, passage) -> [0, 1], does the passage bear on the question."""
        ...


class Judge(Protocol):
    """``config_id`` names the judge and every setting that changes its verdicts (model, thresholds): the evaluation's
    configuration hash covers it, so a changed judge re-judges instead of resuming."""

    name: str
    family: str

    @property
    def config_id(self) -> str: ...

    def supports(self, metric: str) -> bool: ...

    def judge(self, metric: str, traces: list[Trace]) -> list[MetricResult]:
        """One result per trace, in order; failures come back as unmeasured results, never exceptions."""
        ...


class JudgeUnavailable(RuntimeError):
    """A judge that cannot run at all here (model missing, server unreachable): its metrics become unmeasured."""


def changed_settings(given: Mapping[str, object], defaults: Mapping[str, object],
                     tags: Mapping[str, str] | None = None) -> str:
    """The part of a judge's name that says which of its verdict-changing settings are not at their defaults:
    ``@name=value`` for each (``tags`` may spell one otherwise: "@3way", "@premises={}"). Empty at the defaults, so
    the names, caches and resumed runs of earlier versions stay valid."""
    spelled = tags or {}
    return "".join(spelled.get(k, f"@{k}={{}}").format(v) for k, v in given.items() if v != defaults[k])
