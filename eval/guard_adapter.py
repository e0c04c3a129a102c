"""The groundedness judge as the guardrails' fact check: ``fact_check(answer, [(chunk_id, text)]) -> (score, failing)``.

rag/ cannot import eval/, so the CLI / session layer builds this callable here and injects it into
``rag.guardrails.GuardedPipeline``. The score is the groundedness metric's own definition (share of the answer's
claims supported by some chunk, ``eval.metrics.verify.Verifier.verify``); ``failing`` lists every claim that is not
supported, with its verdict, best score and the chunk/sentence that came closest."""
from __future__ import annotations

from collections.abc import Callable

from eval.claims import decompose
from eval.judges.registry import JudgeOptions, default_nli_path, make_judge
from eval.judges.scorer import ScorerJudge
from rag.guardrails.actions import FactCheckUnmeasured

FactCheck = Callable[[str, list[tuple[str, str]]], tuple[float, list[dict]]]
FACT_CHECK_JUDGES = ("auto", "nli", "lexical", "embedding")


class JudgeFactCheck:
    """A ``ScorerJudge`` seen as a fact-check callable; ``name`` identifies the judge in traces."""

    def __init__(self, judge: ScorerJudge):
        self.judge = judge
        self.name = judge.config_id

    def __call__(self, answer: str, chunks: list[tuple[str, str]]) -> tuple[float, list[dict]]:
        # the texts as the groundedness metric shows them to the judge: one it cannot read is no score, never a guess
        reads = self.judge.unreadable
        if reads is not None and (why := reads([answer, " ".join(text for _, text in chunks)])):
            raise FactCheckUnmeasured(why)
        claims = decompose(answer)
        if not claims:
            return 1.0, []
        if not chunks:
            return 0.0, [{"claim": c, "verdict": "unsupported", "score": 0.0, "chunk_id": None, "sentence": None}
                         for c in claims]
        verdicts = self.judge.verify([(claims, chunks)])[0]
        supported = sum(v.verdict == "supported" for v in verdicts)
        return supported / len(verdicts), [v.as_dict() for v in verdicts if v.verdict != "supported"]


def resolve_judge_name(name: str = "auto", nli_model: str | None = None) -> str:
    """'auto' is the compact NLI judge when its weights are present, else the lexical scorer (never a download)."""
    if name != "auto":
        return name
    return "nli" if (nli_model or default_nli_path()) else "lexical"


def make_fact_check(judge: str = "auto", *, nli_model: str | None = None, embedder=None,
                    nli_threshold: float | None = None) -> JudgeFactCheck:
    """Build the fact check from one of this project's judges (``FACT_CHECK_JUDGES``)."""
    name = resolve_judge_name(judge, nli_model)
    if name not in FACT_CHECK_JUDGES[1:]:
        raise ValueError(f"unknown fact-check judge {judge!r} (choose from {', '.join(FACT_CHECK_JUDGES)})")
    built = make_judge(name, JudgeOptions(nli_model=nli_model, embedder=embedder, nli_threshold=nli_threshold))
    if not isinstance(built, ScorerJudge):
        raise ValueError(f"the {name} judge cannot fact-check claims")
    return JudgeFactCheck(built)
