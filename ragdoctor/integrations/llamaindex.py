"""Record a llama-index query or chat engine's queries as ragdoctor traces (the public name of
rag/llamaindex_recorder.py):

    from ragdoctor.integrations import llamaindex
    llamaindex.record(query_engine, "runs/mine")      # every query -> runs/mine/traces.jsonl
    query_engine.query("What does PagedAttention page?")   # then: ragdoctor eval runs/mine/traces.jsonl"""
from __future__ import annotations

from rag.llamaindex_recorder import NO_RETRIEVAL, Recorder, record

__all__ = ["NO_RETRIEVAL", "Recorder", "record"]
