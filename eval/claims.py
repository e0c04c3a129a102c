"""Claim decomposition and sentence splitting, deterministic and model-free.

An answer is split into sentences, each sentence into clauses at ';' and at contrastive/coordinating joints
(', but', ', while', ', and' + subject-like start), citations removed. Fragments under three words are merged back."""
from __future__ import annotations

import re

from eval.tokens import content_tokens
from rag.prompt import makes_no_claim, strip_citations
from rag.sentence_ends import NOT_AFTER_ABBREVIATION

# a sentence ends at . ! ? (and closing quotes/brackets) before whitespace, whatever case follows (lower-cased text has
# sentences too), except after a listed abbreviation or a lone letter ("J. Smith", "U.S. troops")
_SENT_END = re.compile(NOT_AFTER_ABBREVIATION + r"(?<=[.!?])[\"')\]]*(\s+)(?=[\w\"'(\[])")
MAX_SENTENCE_WORDS = 40  # a longer "sentence" (unpunctuated text, a list run together) is cut into even pieces
MAX_WINDOW_WORDS = 70  # a premise window longer than this would not fit a cross-encoder's 160 tokens with its claim
_CLAUSE = re.compile(r";\s+|,\s+(?:but|while|whereas|and then|so)\s+|\s+—\s+")
_ASIDE = re.compile(r"\s*\(([^()]*)\)")  # a parenthetical aside, checked as a claim of its own when it is one
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+", re.MULTILINE)


def split_sentences(text: str, max_words: int = MAX_SENTENCE_WORDS) -> list[str]:
    """Sentences of ``text`` (newlines and bullets are boundaries too); a run of more than ``max_words`` words
    without a sentence end is cut into even pieces of at most ``max_words`` words, so no window hides most of its
    text past a model's maximum length."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)", text):
        block = _BULLET.sub("", block).replace("\n", " ").strip()
        if block:
            start = 0
            for m in _SENT_END.finditer(block):  # cut at the whitespace: closing quotes stay with their sentence
                out.extend(_cut(block[start : m.start(1)].strip(), max_words))
                start = m.end(1)
            out.extend(_cut(block[start:].strip(), max_words))
    return out


def _cut(sentence: str, max_words: int) -> list[str]:
    words = sentence.split()
    if not words:
        return []
    if len(words) <= max_words:
        return [sentence]
    pieces = -(-len(words) // max_words)
    size = -(-len(words) // pieces)
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def _words(s: str) -> int:
    return len(re.findall(r"\w+", s))


def _prose(s: str) -> int:
    """Words of two or more letters: tells an aside in words from a formula in parentheses."""
    return len(re.findall(r"[A-Za-z]{2,}", s))


def decompose(answer: str, *, min_words: int = 3) -> list[str]:
    """Atomic-ish claims of an answer, in order. Empty for an empty answer. A part that only declines, apologises or
    asks for more ("I don't know.", "The documents do not mention X.") is no claim: a hedged answer is judged on what
    it asserts, not marked down for its hedge."""
    claims: list[str] = []
    for sentence in split_sentences(strip_citations(answer)):
        asides = [a.strip(" ,.") for a in _ASIDE.findall(sentence) if _prose(a) >= min_words]
        if asides:
            sentence = _ASIDE.sub(lambda m: "" if _prose(m.group(1)) >= min_words else m.group(0), sentence)
        parts = [p.strip(" ,.") for p in _CLAUSE.split(sentence) if p and p.strip(" ,.")]
        merged: list[str] = []
        for p in parts:
            if merged and _words(p) < min_words:
                merged[-1] = f"{merged[-1]}, {p}"
            else:
                merged.append(p)
        if merged and _words(merged[0]) < min_words and len(merged) > 1:
            merged[1] = f"{merged[0]}, {merged[1]}"
            merged = merged[1:]
        claims.extend(m if m.endswith((".", "!", "?")) else m + "." for m in [*merged, *asides])
    return [c for c in claims if _words(c) > 0 and not makes_no_claim(c)]


_POLARITY_WORDS = frozenset({"yes", "no", "not"})


def standalone(claims: list[str], question: str) -> list[str]:
    """Each claim as it can be checked against evidence on its own: a bare yes/no ("Yes.", "No, it is not.") says
    nothing without its question, so such a claim is read after the question ("Is FlashAttention exact? Yes.");
    a claim with a word of its own stays as it is (read after the question, a short answer would share the
    question's words with any evidence about it, and word overlap could no longer tell a right one from a wrong one)."""
    q = question.strip()
    if not q:
        return claims
    return [f"{q} {c}" if all(t in _POLARITY_WORDS for t in content_tokens(c)) else c for c in claims]


def sentence_windows(text: str, size: int = 2) -> list[str]:
    """Overlapping windows of ``size`` consecutive sentences (premises for claim verification), each at most
    MAX_WINDOW_WORDS words; the single sentences come first so the best-matching sentence can be named as evidence."""
    sents = split_sentences(text)
    if len(sents) <= 1:
        return sents or ([text] if text.strip() else [])
    windows = list(sents)
    if size > 1:
        joined = (" ".join(sents[i : i + size]) for i in range(len(sents) - size + 1))
        windows += [w for w in joined if len(w.split()) <= MAX_WINDOW_WORDS]
    return windows


def premise_windows(text: str, lead: str = "") -> list[str]:
    """The sentence windows of ``text``, each led by ``lead`` (e.g. the question, so a short reference like "25 MB"
    reads in context); the lead is never a window on its own."""
    lead = lead.strip() + " " if lead.strip() else ""
    return [lead + w for w in sentence_windows(text)]
