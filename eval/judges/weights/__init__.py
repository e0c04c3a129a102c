"""The shipped default judge weights (the package carries them; nothing is downloaded).

groundedness-minilm-v1/   fp16 MiniLM-L6 cross-encoder, (premise, claim) -> P(supported), plus combiner.json;
                          MODEL_CARD.md says what it was trained on, how it measures and where it fails.
Rebuild it with ``ragdoctor judge train --out eval/judges/weights/groundedness-minilm-v1``.
"""
from __future__ import annotations

from pathlib import Path

DEFAULT_MODEL = "groundedness-minilm-v1"
_REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")


def default_model_dir() -> Path | None:
    """The shipped cross-encoder folder, or None when the package was installed without it."""
    path = Path(__file__).resolve().parent / DEFAULT_MODEL
    return path if all((path / f).is_file() for f in _REQUIRED) else None


def load_default_scorer(**kwargs):
    """The default NLI Scorer: the shipped cross-encoder with its combiner (eval.judges.compact.load_scorer).
    Raises JudgeUnavailable when the weights are not installed."""
    from eval.judges.base import JudgeUnavailable
    from eval.judges.compact import load_scorer

    path = default_model_dir()
    if path is None:
        raise JudgeUnavailable(f"the shipped NLI judge weights are missing ({Path(__file__).parent / DEFAULT_MODEL})")
    return load_scorer(path, **kwargs)
