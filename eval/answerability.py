"""Refusals and unanswerable questions: a refusal is not 'ungrounded', and it is correct exactly when the
question cannot be answered from the corpus."""
from __future__ import annotations

from corpora.records import Trace
from rag.prompt import is_refusal


def refused(t: Trace) -> bool:
    return t.outcome == "refused" or (t.outcome != "blocked" and is_refusal(t.answer))


def unanswerable(t: Trace) -> bool | None:
    """True/False when the record tells; None when nothing says whether the corpus holds the answer.

    Unanswerable only when the record says so (``metadata.kind == "unanswerable"``, ``metadata.answerable == false``:
    Trace.labelled_unanswerable) or when its reference is itself a refusal. An empty ``relevant_doc_ids`` list means
    "no relevance labels", never "unanswerable" on its own: a real reference answer (or any relevant id) makes the
    question answerable."""
    if t.labelled_unanswerable:
        return True
    if t.reference is not None and is_refusal(t.reference):
        return True
    if (t.reference or "").strip() or t.relevant_doc_ids or t.labelled_answerable:
        return False
    return None
