"""The records at the bottom of the flow: documents of a corpus and the questions asked of it."""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


def _not_blank(v: str) -> str:
    if not v.strip():
        raise ValueError("is blank")
    return v


Question = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]  # a question with something in it


class Document(BaseModel):
    """One source document. ``id`` is the unit that relevance labels refer to."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    text: str
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class Sample(BaseModel):
    """One question with what is known about its right answer."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: Question
    reference: str | None = None
    relevant_doc_ids: list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def answerable(self) -> bool | None:
        """False when the record says so (``metadata.kind == "unanswerable"`` or ``metadata.answerable == false``),
        True when it names relevant documents; None otherwise: an empty ``relevant_doc_ids`` means "no labels", not
        "unanswerable" (eval.answerability.unanswerable reads a refusal reference too)."""
        if self.metadata.get("kind") == "unanswerable" or self.metadata.get("answerable") is False:
            return False
        return True if self.relevant_doc_ids else None
