"""The records at the bottom of the flow: documents of a corpus and the questions asked of it."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
    question: str = Field(min_length=1)
    reference: str | None = None
    relevant_doc_ids: list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def answerable(self) -> bool | None:
        """False when the labels say the corpus cannot answer (no relevant documents)."""
        if self.metadata.get("kind") == "unanswerable":
            return False
        if self.relevant_doc_ids is None:
            return None
        return len(self.relevant_doc_ids) > 0
