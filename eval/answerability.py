"""Refusals and unanswerable questions: a refusal is not 'ungrounded', and it is correct exactly when the
question cannot be answered from the corpus."""
from __future__ import annotations

from eval.records import EvalSample
from rag.prompt import is_refusal


def refused(sample: EvalSample) -> bool:
    return sample.outcome == "refused" or (sample.outcome != "blocked" and is_refusal(sample.answer))


def unanswerable(sample: EvalSample) -> bool | None:
    """True/False when the record tells; None when nothing says whether the corpus holds the answer.

    Unanswerable only when the record says so: ``metadata.kind == "unanswerable"``, ``metadata.answerable == false``
    or a reference that is itself a refusal. An empty ``relevant_ids`` list means "no relevance labels", never
    "unanswerable" on its own: a real reference answer (or any relevant id) makes the question answerable."""
    if sample.metadata.get("kind") == "unanswerable" or sample.metadata.get("answerable") is False:
        return True
    if sample.reference is not None and is_refusal(sample.reference):
        return True
    if (sample.reference or "").strip() or sample.relevant_ids or sample.metadata.get("answerable") is True:
        return False
    return None
