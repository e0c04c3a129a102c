"""The Trace: one record per question from the pipeline (or imported from any other RAG system)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["answered", "refused", "blocked", "error"]


class RetrievedChunk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    doc_id: str
    rank: int = Field(ge=1)
    score: float | None = None
    text: str
    title: str = ""
    signals: dict[str, float] = Field(default_factory=dict, description="dense/bm25/rrf scores and ranks")
    flags: list[str] = Field(default_factory=list, description="e.g. 'instruction' when a rail flagged the chunk")


class Trace(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sample_id: str
    question: str
    reference: str | None = None
    relevant_doc_ids: list[str] | None = None
    contexts: list[RetrievedChunk] = Field(default_factory=list)
    candidates: list[dict[str, Any]] = Field(default_factory=list,
                                             description="retrieved below the top-k cut: chunk_id, doc_id, rank, score")
    prompt: list[dict[str, str]] = Field(default_factory=list, description="chat messages sent to the generator")
    answer: str = ""
    outcome: Outcome = "answered"
    cited_chunk_ids: list[str] = Field(default_factory=list)
    latency_ms: dict[str, float] = Field(default_factory=dict, description="per stage: retrieve, generate, total")
    config_hash: str = ""
    input_hash: str = Field("", description="hash of the question record and the index content it was answered from "
                                             "(rag.runner.input_hash): a resume reuses a trace only when it matches")
    generator: str = ""
    embedder: str = ""
    error: str | None = None
    guardrails: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @property
    def context_texts(self) -> list[str]:
        return [c.text for c in self.contexts]

    @property
    def retrieved_doc_ids(self) -> list[str]:
        """Document ids in rank order, first occurrence only."""
        return list(dict.fromkeys(c.doc_id for c in sorted(self.contexts, key=lambda c: c.rank)))
