"""Record a llama-index query or chat engine's queries as ragdoctor traces (the public name of
rag/llamaindex_recorder.py):

    from ragdoctor.integrations import llamaindex
    llamaindex.record(query_engine, "runs/mine")      # every query -> runs/mine/traces.jsonl
    query_engine.query("What does PagedAttention page?")   # then: ragdoctor eval runs/mine/traces.jsonl

llama-index's placeholder answer ("Empty Response": nothing retrieved, or the LLM said nothing) is recorded as an
error that says so, its metrics unmeasured, never judged as an answer that scores 0."""
from __future__ import annotations

from rag.llamaindex_recorder import EMPTY_RESPONSE, NO_RETRIEVAL, Recorder, record

__all__ = ["EMPTY_RESPONSE", "NO_RETRIEVAL", "Recorder", "record"]
