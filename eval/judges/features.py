"""Cheap, explainable signals of whether a claim is supported by its evidence: pure functions, no models.

Each catches something word overlap misses or a small cross-encoder misreads, and each is a named feature of the
compact judge's combiner (eval/judges/nli.py), whose weight the model card reports:

  lexical_doc     share of the claim's content words found anywhere in the evidence (not just in one window)
  idf_doc         the same, each word weighted by its rarity (inverse document frequency): a missing name or term
                  counts more than a missing common word
  bigram_doc      share of the claim's adjacent content-word pairs found adjacent in the evidence: the same words in
                  another order or relation ("A outperforms B" against "B outperforms A") keep unigram overlap but
                  lose their pairs
  number_missing  share of the claim's numbers (digits, number words, percentages, years, dates) the evidence never
                  states, each read in its common writings (eval/judges/numbers.py: '128 000' = '128,000' = '128K',
                  '15.03.2023' = 'March 15, 2023'), a data size or duration as its quantity ('2 GB' = '2048 MB', '1 h 30 min' = '90
                  min' = 'ninety minutes'; '64 MB' is not '64 KB'), a clock time after 'at' as a time of day ('at
                  10:30 h' is 10:30, not 10.5 hours)
  entity_missing  share of the claim's names (capitalised or mixed-case words, acronyms) the evidence never mentions
  negation_flip   the claim and its best window disagree in polarity (one negated, the other not)
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from eval.judges.lexical import unigram_precision
from eval.judges.numbers import FUNCTION_WORDS, number_facts, stated
from eval.tokens import content_tokens, visible

_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without|n't)\b|n't\b",
                       re.IGNORECASE)
_CAP = re.compile(r"\b(?:[A-Z][a-z]*[A-Z0-9][\w-]*|[A-Z]{2,}[\w-]*|[A-Z][a-z][\w'-]*|[a-z]+[A-Z][\w-]*)\b")


def number_missing(claim: str, evidence: str) -> float:
    """Share of the claim's numbers that the evidence does not state (0 when the claim has none)."""
    c = number_facts(claim)
    if not c:
        return 0.0
    given = stated(evidence)
    return sum(1 for f in c if not f.readings & given) / len(c)


def names(text: str) -> set[str]:
    """Name-like words (lower-cased): capitalised words other than a sentence's first word, acronyms and mixed-case
    terms anywhere ('GPTQ', 'vLLM', 'H100'), minus function words."""
    out: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", visible(text)):
        for k, m in enumerate(_CAP.finditer(sentence)):
            word = m.group(0)
            first = m.start() == len(sentence) - len(sentence.lstrip())
            mixed = any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() for ch in word)
            if (first and not mixed) or word.lower() in FUNCTION_WORDS:
                continue
            out.add(word.lower())
    return out


def entity_missing(claim: str, evidence: str) -> float:
    """Share of the claim's names that occur nowhere in the evidence, case-insensitively (0 when it has none)."""
    c = names(claim)
    if not c:
        return 0.0
    low = visible(evidence).lower()
    return sum(1 for n in c if n not in low) / len(c)


def negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def negation_flip(claim: str, premise: str) -> float:
    return float(negated(claim) != negated(premise))


def lexical_doc(claim: str, evidence: str) -> float:
    """Share of the claim's content words found anywhere in the evidence: the lexical baseline's unigram precision."""
    return unigram_precision(evidence, claim)


def _bigrams(tokens: list[str]) -> list[tuple[str, str]]:
    return list(zip(tokens, tokens[1:]))


def bigram_doc(claim: str, evidence: str) -> float:
    """Share of the claim's content-word bigrams that occur in the evidence; a claim of fewer than two content words
    has no pairs and falls back to its unigram share (lexical_doc)."""
    c = _bigrams(content_tokens(claim))
    if not c:
        return lexical_doc(claim, evidence)
    e = set(_bigrams(content_tokens(evidence)))
    return sum(1 for b in c if b in e) / len(c)


def idf_weights(documents: Iterable[str], min_df: int = 3) -> dict[str, float]:
    """Smoothed IDF, log((1 + N) / (1 + df)) + 1, of every content word in at least ``min_df`` documents."""
    df: dict[str, int] = {}
    n = 0
    for doc in documents:
        n += 1
        for t in set(content_tokens(doc)):
            df[t] = df.get(t, 0) + 1
    return {t: round(math.log((1 + n) / (1 + d)) + 1, 3) for t, d in df.items() if d >= min_df}


def idf_doc(claim: str, evidence: str, idf: Mapping[str, float], unseen: float) -> float:
    """IDF-weighted share of the claim's content words found in the evidence; a word the table lacks is rare
    (weight ``unseen``, the table's largest)."""
    c = content_tokens(claim)
    if not c:
        return 0.0
    e = set(content_tokens(evidence))
    weights = [idf.get(t, unseen) for t in c]
    return sum(w for t, w in zip(c, weights) if t in e) / sum(weights)
