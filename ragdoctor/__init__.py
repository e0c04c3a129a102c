"""ragdoctor: an offline RAG pipeline with an evaluation and troubleshooting toolkit.

    import ragdoctor
    result = ragdoctor.evaluate(rows)          # a DataFrame, a list of dicts, a JSONL path, a ragas EvaluationDataset,
    result.summary()                           # or llama-index Response objects; see ragdoctor/api.py
    ragdoctor.Pipeline().ask("How big is the KV cache of a 7B model at 4k context?")

Importing the package is light: the library (models, pandas, llama-index) loads on first use of what it exports."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["EvalResult", "GateResult", "Pipeline", "__version__", "evaluate"]

if TYPE_CHECKING:
    from ragdoctor.api import EvalResult, GateResult, Pipeline, evaluate


def __getattr__(name: str) -> Any:
    if name in ("EvalResult", "GateResult", "Pipeline", "evaluate"):
        from ragdoctor import api  # noqa: PLC0415 - lazy: `import ragdoctor` (and the CLI's --help) stays instant

        return getattr(api, name)
    raise AttributeError(f"module 'ragdoctor' has no attribute {name!r}")
