"""Refusals and unanswerable questions: a refusal is not 'ungrounded', and it is correct exactly when the
question cannot be answered from the corpus."""
from __future__ import annotations

from eval.records import EvalSample
from rag.prompt import is_refusal


def refused(sample: EvalSample) -> bool:
    return sample.outcome == "refused" or (sample.outcome != "blocked" and is_refusal(sample.answer))


def unanswerable(sample: EvalSample) -> bool | None:
    """True/False when labels tell; None when nothing says whether the corpus holds the answer."""
    if sample.metadata.get("kind") == "unanswerable" or sample.metadata.get("answerable") is False:
        return True
    if sample.reference is not None and is_refusal(sample.reference):
        return True
    if sample.relevant_ids is not None:
        return len(sample.relevant_ids) == 0
    if sample.reference:
        return False
    return None
