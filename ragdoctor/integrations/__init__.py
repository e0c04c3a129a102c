"""Bring your own pipeline: ``from ragdoctor.integrations import llamaindex`` records a llama-index engine's queries
into a run folder (rag/llamaindex_recorder.py). Each integration imports its framework only when it is imported."""
