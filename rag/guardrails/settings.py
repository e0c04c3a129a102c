"""Guardrails settings: which rails run, their thresholds and what a failing check does.

Kept free of heavy imports so ``rag.config`` can embed it as ``PipelineConfig.guardrails``."""
from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ChunkAction = Literal["redact", "drop", "flag"]
OutputAction = Literal["rewrite", "block"]


class GuardrailsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="run the pipeline inside NeMo Guardrails")
    input: bool = Field(True, description="input rails on the user question")
    retrieval: bool = Field(True, description="retrieval rail on the retrieved chunks")
    output: bool = Field(True, description="fact-checking output rail on the answer")
    injection_check: bool = Field(True, description="input: deterministic jailbreak / prompt-injection patterns")
    topic_check: bool = Field(True, description="input: off-topic check by embedding similarity to the corpus")
    topic_threshold: float = Field(0.30, ge=-1.0, le=1.0,
                                   description="off-topic when the question's cosine similarity to the nearest chunk "
                                               "(and to `topic`, when set) is below this (MiniLM scale)")
    topic: str = Field("", description="optional one-line description of what the corpus is about")
    llm_input_check: bool = Field(False, description="input: also ask the LLM whether to block the question "
                                                     "(one extra LLM call per question)")
    retrieval_action: ChunkAction = Field("redact", description="for a chunk carrying instructions aimed at the "
                                                                "model: 'redact' the offending sentences, 'drop' "
                                                                "the chunk (the next clean candidate moves up), or "
                                                                "only 'flag' it")
    groundedness_threshold: float = Field(0.5, ge=0.0, le=1.0,
                                          description="output: share of supported claims below which the answer fails")
    action: OutputAction = Field("rewrite", description="output: 'rewrite' the answer to UNVERIFIED_ANSWER, "
                                                        "or 'block' it with the refusal message")

    def short_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(), sort_keys=True).encode()).hexdigest()[:12]
