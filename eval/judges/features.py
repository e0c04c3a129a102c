"""Cheap, explainable signals of whether a claim is supported by its evidence: pure functions, no models.

Each catches something word overlap misses or a small cross-encoder misreads, and each is a named feature of the
compact judge's combiner (eval/judges/nli.py), whose weight the model card reports:

  lexical_doc     share of the claim's content words found anywhere in the evidence (not just in one window)
  idf_doc         the same, each word weighted by its rarity (inverse document frequency): a missing name or term
                  counts more than a missing common word
  bigram_doc      share of the claim's adjacent content-word pairs found adjacent in the evidence: the same words in
                  another order or relation ("A outperforms B" against "B outperforms A") keep unigram overlap but
                  lose their pairs
  number_missing  share of the claim's numbers (digits, number words, percentages, years) the evidence never states
  entity_missing  share of the claim's names (capitalised or mixed-case words, acronyms) the evidence never mentions
  negation_flip   the claim and its best window disagree in polarity (one negated, the other not)
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation

from eval.judges.lexical import unigram_precision
from eval.tokens import content_tokens

_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                      "ninety": "90", "hundred": "100", "thousand": "1000", "million": "1000000",
                      "billion": "1000000000", "half": "0.5", "twice": "2", "double": "2", "once": "1"})
_NUM = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)*(?![\d])")
# a word before a number that makes "3.10" a version (not the decimal 3.1): a version word, a product whose versions
# are written so, or a name (an acronym or mixed case anywhere, a capitalised word inside a sentence)
_VERSION_WORDS = frozenset("version versions release releases ver rev revision python cuda cudnn node java ubuntu "
                           "debian fedora kernel linux macos ios android windows gcc clang llvm torch pytorch numpy"
                           .split())
_WORD_BEFORE = re.compile(r"([A-Za-z][\w+]*)[ \t]*$")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without|n't)\b|n't\b",
                       re.IGNORECASE)
_CAP = re.compile(r"\b(?:[A-Z][a-z]*[A-Z0-9][\w-]*|[A-Z]{2,}[\w-]*|[A-Z][a-z][\w'-]*|[a-z]+[A-Z][\w-]*)\b")
_FUNCTION = frozenset("the a an in on at it he she they we i you this that these those there its his her their but "
                      "and or if when while as after before yes no not my our your also however so what which who "
                      "how why where for from to of by with is are was were be".split())


def _version_before(text: str, at: int) -> bool:
    """The number at ``at`` follows a version word or a name (a capitalised word that does not open a sentence)."""
    head = text[max(0, at - 48) : at]  # a bounded look back: a long context is not rescanned per number
    m = _WORD_BEFORE.search(head)
    if not m:
        return False
    word = m.group(1)
    if word.lower() in _VERSION_WORDS:
        return True
    if word.isupper() or not word[0].isupper():  # an acronym or a unit ("BLEU 27.30", "MMLU 86.40", "pH 7.40"): a score
        return False
    if any(ch.isupper() for ch in word[1:]):  # a product name in mixed case ("PyTorch 2.10")
        return True
    before = head[: m.start()].rstrip()
    return bool(before) and before[-1] not in ".!?:;\n"


def numbers(text: str, *, words: bool = True) -> set[str]:
    """Numbers a text states, normalised exactly: '1,024' -> '1024', '2.50' -> '2.5' (a plain decimal: 3.50 and 3.5
    are one number), '1e3' is not one, 'twelve' -> '12' (``words``: number words too). Every digit counts:
    '1,048,580' and '1,048,576' are two numbers. A number with two or more dots (a version '2.1.0', an address
    '10.0.0.1') and a decimal written as a version ('Python 3.10', 'PyTorch 2.10', 'version 2.10': after a version word
    or a name, see _version_before; with a 0 closing two or more decimals, else it reads the same either way: 'CUDA
    12.0' is 12) are read as written, whole: 'Python 3.10' and 'Python 3.1' state two versions."""
    out: set[str] = set()
    for m in _NUM.finditer(text):
        raw = m.group(0).replace(",", "").lstrip("+")
        if raw.count(".") >= 2 or (re.search(r"\.\d+0$", raw) and _version_before(text, m.start())):
            out.add(raw)
            continue
        try:
            value = Decimal(raw)
        except InvalidOperation:
            continue
        out.add(format(value.normalize(), "f") if value else "0")
    if words:
        for w in _WORD.findall(text.lower()):
            if w in _NUMBER_WORDS:
                out.add(_NUMBER_WORDS[w])
    return out


def number_missing(claim: str, evidence: str) -> float:
    """Share of the claim's numbers that the evidence does not state (0 when the claim has none)."""
    c = numbers(claim)
    if not c:
        return 0.0
    return len(c - numbers(evidence)) / len(c)


def names(text: str) -> set[str]:
    """Name-like words (lower-cased): capitalised words other than a sentence's first word, acronyms and mixed-case
    terms anywhere ('GPTQ', 'vLLM', 'H100'), minus function words."""
    out: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        for k, m in enumerate(_CAP.finditer(sentence)):
            word = m.group(0)
            first = m.start() == len(sentence) - len(sentence.lstrip())
            mixed = any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() for ch in word)
            if (first and not mixed) or word.lower() in _FUNCTION:
                continue
            out.add(word.lower())
    return out


def entity_missing(claim: str, evidence: str) -> float:
    """Share of the claim's names that occur nowhere in the evidence, case-insensitively (0 when it has none)."""
    c = names(claim)
    if not c:
        return 0.0
    low = evidence.lower()
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
