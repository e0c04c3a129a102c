"""The context budget: ranked chunks packed into a number of prompt tokens instead of a fixed top-k.

``pack`` takes the chunks in rank order while they fit whole. The first one that does not fit is cut at a sentence
boundary: its leading sentences that fit are kept (``cut``; the pipeline flags that chunk ``cut``), and packing stops
there: nothing ranked below it is given, so the budget is always filled with the best-ranked text and never with
short fragments from deep in the ranking. When not even its first sentence fits, that chunk is left out as well. A
budget smaller than the first chunk therefore gives the first chunk's leading sentences, or nothing.

Tokens are counted on the line the prompt shows for a chunk (``[chunk id] text``, rag/prompt.context_line) with the
embedder's own tokenizer, the one ``chunk_size`` is measured in (rag/store.tokenizer_for: MiniLM's WordPiece for the
bundled embedder, one token per word for the fake one). The generator's tokenizer is not at hand for every server
(an OpenAI-compatible endpoint has no tokenize call), so this approximates what the generator reads;
bench/context_budget.py reports the prompt tokens the bundled model counted at each budget."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rag.sentence_ends import NOT_AFTER_ABBREVIATION

T = TypeVar("T")

# the next one starts upper-case or a digit, and the full stop is not an abbreviation's ("Dr. Smith", "Fig. 3")
_SENTENCE_END = re.compile(NOT_AFTER_ABBREVIATION + r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


@dataclass
class Packing(Generic[T]):
    """What ``pack`` chose: ``packed`` (rank order; the last one is ``cut`` when it was shortened) fit in ``budget``
    tokens, using ``tokens``; ``left_out`` (rank order) were not given."""

    budget: int
    packed: list[T] = field(default_factory=list)
    left_out: list[T] = field(default_factory=list)
    tokens: int = 0
    cut: T | None = None


def sentences(text: str) -> list[str]:
    """``text`` split after each ., ! or ? followed by white space and an upper-case letter or a digit, and not after an
    abbreviation or a lone letter ("Dr. Smith", "Fig. 3"; "e.g. this" stays one sentence too); closing quotes and
    brackets stay with their sentence."""
    text, out, start = text.strip(), [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append(text[start : m.end()].strip())
        start = m.end()
    return [s for s in [*out, text[start:].strip()] if s]


def leading_sentences(text: str, room: int, count: Callable[[str], int]) -> str | None:
    """The longest run of ``text``'s first sentences (cut from ``text`` itself, its white space kept) whose ``count``
    is at most ``room``; None when not even the first one fits."""
    best = None
    for m in _SENTENCE_END.finditer(text.strip()):  # each boundary before the end (all of it the caller found too long)
        head = text.strip()[: m.end()].rstrip()
        if count(head) > room:
            break
        best = head
    return best


def pack(ranked: Sequence[T], budget: int, count: Callable[[T], int],
         shorten: Callable[[T, int], tuple[T, int] | None] | None = None) -> Packing[T]:
    """The chunks of ``ranked`` (best first) packed into ``budget`` tokens (see the module docstring). ``count``
    gives a chunk's tokens; ``shorten(chunk, room)`` returns the chunk cut to at most ``room`` tokens and its count,
    or None (without it, a chunk that does not fit is left out). A negative budget is an error."""
    if budget < 0:
        raise ValueError(f"context budget must be >= 0 tokens, got {budget}")
    out: Packing[T] = Packing(budget)
    for i, chunk in enumerate(ranked):
        size = count(chunk)
        if out.tokens + size <= budget:
            out.packed.append(chunk)
            out.tokens += size
            continue
        short = shorten(chunk, budget - out.tokens) if shorten is not None else None
        if short is not None and out.tokens + short[1] <= budget:
            out.cut = short[0]
            out.packed.append(short[0])
            out.tokens += short[1]
            out.left_out.extend(ranked[i + 1:])
        else:
            out.left_out.extend(ranked[i:])
        break
    return out
