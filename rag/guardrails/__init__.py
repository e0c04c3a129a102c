"""NeMo Guardrails around the RAG pipeline (input, retrieval and output rails), offline.

Importing this package is cheap: nemoguardrails loads only when a ``GuardedPipeline`` with the rails on is built."""
from __future__ import annotations

from rag.guardrails.settings import GuardrailsConfig

__all__ = ["GuardedPipeline", "GuardrailsConfig", "guard"]


def __getattr__(name: str):
    if name in ("GuardedPipeline", "guard"):
        from rag.guardrails import rails  # noqa: PLC0415 - lazy: nemoguardrails (1 s) only when the rails are built

        return getattr(rails, name)
    raise AttributeError(f"module 'rag.guardrails' has no attribute {name!r}")
