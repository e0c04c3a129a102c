"""Hand-made traces for the metric unit tests: a question about a block size, the current and the outdated document,
a distractor; ``strict`` is the lexical scorer with a high support cut, so one changed number makes a claim unsupported."""
from __future__ import annotations

from corpora.records import Chunk, Trace
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge

QUESTION = "What is the default block size?"
CUR = Chunk(chunk_id="cur#0", doc_id="cur", rank=1,
            text="Updated 2025: the default block size is 16 tokens. Blocks live in GPU memory.")
OLD = Chunk(chunk_id="old#0", doc_id="old", rank=2, text="Note 2023: the default block size is 32 tokens.")
NOISE = Chunk(chunk_id="noise#0", doc_id="noise", rank=3, text="Unrelated text about tokenizers and merges.")
REFERENCE = "The default block size is 16 tokens. Blocks live in GPU memory."


def trace(answer: str = "The default block size is 16 tokens.", *, contexts: list[Chunk] | None = None,
          reference: str | None = REFERENCE, **fields) -> Trace:
    return Trace(sample_id=fields.pop("sample_id", "s"), question=QUESTION, answer=answer, reference=reference,
                 contexts=[CUR, OLD] if contexts is None else contexts, **fields)


def strict() -> ScorerJudge:
    return ScorerJudge(LexicalScorer(support_threshold=0.95, relevance_threshold=0.5))


class Reading(LexicalScorer):
    """The lexical scorer, recording every (premise, claim) pair it is given."""

    def __init__(self):
        super().__init__()
        self.read: list[tuple[str, str]] = []

    def support(self, pairs):
        self.read += pairs
        return super().support(pairs)
