"""Which text a judge's model can read. A model scores text it cannot read anyway, and the score looks like any
other: the bundled MiniLM (English) gives an unrelated Thai sentence pair cosine 1.00 (every character is [UNK]) and
an unrelated Hindi pair 0.78, above the embedding judge's 0.70 support cut. Such samples are unmeasured, with why.

- The bundled MiniLM embedder and the shipped nli judge (fine-tuned from it) read Latin-script (English) text: a
  text more than ``MAX_FOREIGN`` of whose letters and pictographs are in other scripts, or are emoji, is unreadable.
- Any other model folder with a ``tokenizer.json``: a text more than ``MAX_UNKNOWN`` of whose tokens are the
  tokenizer's unknown token is unreadable.
The lexical judge reads every script (eval/tokens.py); LLM judges are given the text as it is."""
from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from corpora.scripts import MAX_FOREIGN, main_script, non_latin_share

MAX_UNKNOWN = 0.2


Reader = Callable[[list[str]], str | None]  # a metric's texts (eval.metrics.base.Metric.model_texts) -> why unreadable


def latin_reader(model: str) -> Reader:
    def unreadable(texts: list[str]) -> str | None:
        for text in texts:
            share = non_latin_share(text)
            if share > MAX_FOREIGN:
                return (f"the judge's model ({model}) reads Latin-script text; {share:.0%} of this text is "
                        f"{main_script(text)}: not measurable by this judge")
        return None

    return unreadable


def vocabulary_reader(model: str, tokenizer_file: Path) -> Reader | None:
    """Unknown-token share through the model's own tokenizer; None when it cannot be loaded."""
    try:
        tok = Tokenizer.from_file(str(tokenizer_file))
        unk = (json.loads(tokenizer_file.read_text(encoding="utf-8")).get("model") or {}).get("unk_token")
    except Exception:  # noqa: BLE001 - no readable tokenizer: no check (the judge still runs)
        return None
    if not unk:
        return None
    tok.no_padding()
    tok.no_truncation()

    def unreadable(texts: list[str]) -> str | None:
        for text in texts:
            pieces = tok.encode(text, add_special_tokens=False).tokens
            share = sum(p == unk for p in pieces) / len(pieces) if pieces else 0.0
            if share > MAX_UNKNOWN:
                return (f"{share:.0%} of this text's tokens are unknown to the judge's model ({model}, mostly "
                        f"{main_script(text)}): not measurable by this judge")
        return None

    return unreadable


def tokenizer_of(model_dir: str | Path | None) -> Path | None:
    """A model folder's tokenizer.json, or a judge folder's (its models keep theirs in support/); None without one."""
    if not model_dir:
        return None
    found = [f for f in (Path(model_dir) / "tokenizer.json", Path(model_dir) / "support" / "tokenizer.json")
             if f.is_file()]
    return found[0] if found else None


def _vocabulary(tokenizer_file: Path) -> Any:
    try:
        return json.loads(tokenizer_file.read_text(encoding="utf-8")).get("model")
    except Exception:  # noqa: BLE001 - an unreadable tokenizer says nothing about the vocabulary
        return None


@lru_cache(maxsize=1)
def _minilm_vocabulary() -> Any:
    try:
        from rag.models import minilm_path  # noqa: PLC0415 - lazy: only when a model folder is checked

        return _vocabulary(minilm_path() / "tokenizer.json")
    except Exception:  # noqa: BLE001 - no bundled MiniLM: no model can be told to share its vocabulary
        return None


def reader_for(model_dir: str | Path | None, model_id: str, *, latin_only: bool) -> Reader | None:
    """The unreadable-text check for a judge's model: Latin-only for the bundled English models and any model with
    their vocabulary (one trained or combined from them: a `judge refit` or `judge combine` folder), else by the
    model's own vocabulary."""
    tokenizer = tokenizer_of(model_dir)
    if latin_only or (tokenizer is not None and _minilm_vocabulary() is not None
                      and _vocabulary(tokenizer) == _minilm_vocabulary()):
        return latin_reader(model_id)
    return vocabulary_reader(model_id, tokenizer) if tokenizer is not None else None
