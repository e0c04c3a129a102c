"""A trivial lexical-overlap scorer: the baseline every other judge must beat (and a judge that never fails).

support(premise, hypothesis): share of the hypothesis's content words found in the premise (unigram precision).
relevance(question, passage): share of the question's content words found in the passage.

The share is undefined when the side it is a share of (the hypothesis: a claim; the question) has no content words
left after stopword removal ("Who was it?", "It is."): ``unigram_precision`` gives 0.0 there, which must not read as a
measured 0, so the lexical judge (``LexicalJudge``, eval/judges/lexical_judge.py) makes every result resting on such
an ask unmeasured. An empty other side (a passage or premise of stopwords only) is a measured 0: none of the
question's or claim's words are in it."""
from __future__ import annotations

from eval.judges.base import Support
from eval.tokens import content_tokens


def unigram_precision(premise: str, hypothesis: str) -> float:
    hyp = content_tokens(hypothesis)
    if not hyp:
        return 0.0
    prem = set(content_tokens(premise))
    return sum(1 for t in hyp if t in prem) / len(hyp)


class LexicalScorer:
    name = "lexical"
    family = "lexical"

    def __init__(self, support_threshold: float = 0.75, relevance_threshold: float = 0.5):
        self.support_threshold = support_threshold
        self.relevance_threshold = relevance_threshold

    def support(self, pairs: list[tuple[str, str]]) -> list[Support]:
        return [Support(unigram_precision(p, h)) for p, h in pairs]

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        return [unigram_precision(passage, question) for question, passage in pairs]
