"""ragdoctor: an offline RAG pipeline with an evaluation and troubleshooting toolkit.

    import ragdoctor
    result = ragdoctor.evaluate(rows)          # a DataFrame, a list of dicts, a JSONL path, a ragas EvaluationDataset,
    result.summary()                           # or llama-index Response objects; see ragdoctor/api.py
    ragdoctor.Pipeline().ask("How big is the KV cache of a 7B model at 4k context?")

Errors: ``InputError`` (bad input, one line ``file:line: field 'x': problem``), ``UsageError`` (an argument that
cannot be run as given; an InputError) and ``GateFailed`` (the pytest plugin's failed gate; an AssertionError).

Importing the package is light: the library (models, pandas, llama-index) loads on first use of what it exports, and
so do the error classes' module (corpora.errors)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["EvalResult", "GateFailed", "GateResult", "InputError", "Pipeline", "UsageError", "__version__",
           "evaluate"]

if TYPE_CHECKING:
    from corpora.errors import InputError, UsageError
    from ragdoctor.api import EvalResult, GateResult, Pipeline, evaluate


class GateFailed(AssertionError):
    """A CI gate that failed its thresholds (the pytest plugin's ``ragdoctor_gate`` fixture and marker): an
    AssertionError, so ``pytest.raises``, ``xfail(raises=...)`` and except clauses take it. Its text is the one-line
    verdict. Defined here, in the package's light root, so the pytest plugin and ``ragdoctor.GateFailed`` need no
    import of the library."""


_API = ("EvalResult", "GateResult", "Pipeline", "evaluate")
_ERRORS = ("InputError", "UsageError")


def __getattr__(name: str) -> Any:
    if name in _API:
        from ragdoctor import api  # noqa: PLC0415 - lazy: `import ragdoctor` (and the CLI's --help) stays instant

        return getattr(api, name)
    if name in _ERRORS:
        from corpora import errors  # noqa: PLC0415 - lazy: as above (light, but a top-level package of its own)

        return getattr(errors, name)
    raise AttributeError(f"module 'ragdoctor' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The lazy exports too (help(ragdoctor), dir(), completion), not only what was loaded."""
    return sorted(set(globals()) | set(__all__))
