"""The shipped default judge weights (the package carries them; nothing is downloaded).

groundedness-minilm-v5/   support/ and relevance/: fp16 MiniLM-L6 cross-encoders; combiner.json and idf.json: the
                          calibrated combiners over named features (eval/judges/nli.py); MODEL_CARD.md says what
                          it was trained on, how it measures and where it fails; stages/ holds each training stage's
                          recipe and data manifest. Rebuild: judge_train/recipes/*.json, then ``ragdoctor judge
                          combine`` (README: "Training the judge").
"""
from __future__ import annotations

from pathlib import Path

DEFAULT_MODEL = "groundedness-minilm-v5"
_REQUIRED = ("support/config.json", "support/model.safetensors", "support/tokenizer.json", "combiner.json")


def default_model_dir() -> Path | None:
    """The shipped cross-encoder folder, or None when the package was installed without it."""
    path = Path(__file__).resolve().parent / DEFAULT_MODEL
    return path if all((path / f).is_file() for f in _REQUIRED) else None


def load_default_scorer(**kwargs):
    """The default NLI Scorer: the shipped cross-encoder with its combiner (eval.judges.nli.load_scorer).
    Raises JudgeUnavailable when the weights are not installed."""
    from eval.judges.base import JudgeUnavailable
    from eval.judges.nli import load_scorer

    path = default_model_dir()
    if path is None:
        raise JudgeUnavailable(f"the shipped NLI judge weights are missing ({Path(__file__).parent / DEFAULT_MODEL})")
    return load_scorer(path, **kwargs)
