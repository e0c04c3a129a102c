"""BM25 over chunks via the maintained ``bm25s`` library (Lucene scoring). Words are read in the corpus's language
(rag/bm25_language.py: found at build, or set): its Snowball stemmer and stopword list where there is one, English's
for English text as ever, never English's for another language; Chinese, Japanese and Korean as overlapping character
bigrams, as Lucene's CJK analyzer reads them. How the text was split is saved with the index (TOKENIZER_FILE), and a
loaded index splits its queries the same way."""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

import bm25s
import Stemmer

from rag import bm25_language
from rag.config import BM25_B, BM25_K1

# Chinese and Japanese, written without spaces: bm25s would read each run between punctuation as one word
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
# from split 2 on (Analyzer), also Japanese's iteration marks (人々), the rarer Chinese characters beyond the first
# plane, and Korean, whose spaced words carry their particles ("캐시는"): bigrams find "캐시" in it, as Lucene's do
CJK_2 = re.compile(CJK.pattern[:-1] + r"\u3005-\u3007\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\U00020000-\U0003134f]")
_CHARS = {1: CJK, 2: CJK_2}
_SEQ = {split: re.compile(chars.pattern + "+") for split, chars in _CHARS.items()}
# bm25s's words (two or more word characters) and, with cjk_bigrams, a Chinese or Japanese character standing alone
_WORDS = r"(?u)\b\w\w+\b"


def _marks() -> str:
    """The combining vowel signs, viramas and points of the scripts from Hebrew to Sinhala (Arabic, Devanagari,
    Tamil, ...), which Python's ``\\w`` leaves out: "हिन्दी भाषा में" would be cut into pieces at them. (Latin, Greek
    and Cyrillic's combining accents are not among them: a decomposed "é" splits as it always did; nor are Thai's.)"""
    ranges: list[list[int]] = []
    for c in range(0x0590, 0x0E00):
        if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me"):
            if ranges and ranges[-1][1] == c - 1:
                ranges[-1][1] = c
            else:
                ranges.append([c, c])
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


_W = r"\w" + _marks()
# the same words with those marks inside them: text without them is split exactly as by _WORDS
_WORDS_MARKS = rf"(?u)(?<![{_W}])\w[{_W}]*[{_W}](?![{_W}])"
TOKENIZER_FILE = "ragdoctor_tokenizer.json"  # beside bm25s's files: how this index's text was split into words


def cjk_bigrams(text: str, *, split: int = 2) -> str:
    """Each run of Chinese or Japanese characters (and Korean, from ``split`` 2 on: CJK_2) as its overlapping bigrams
    ("键值缓存" -> " 键值 值缓 缓存 "), a lone character as itself: text without spaces becomes words BM25 can match
    inside a sentence. Other text is unchanged."""
    def pairs(m: re.Match) -> str:
        run = m.group(0)
        return " " + (" ".join(run[i:i + 2] for i in range(len(run) - 1)) if len(run) > 1 else run) + " "
    return _SEQ[split].sub(pairs, text)


@dataclass(frozen=True)
class Analyzer:
    """How text becomes BM25's words, saved with the index (TOKENIZER_FILE). The defaults are how an index saved
    before the file named them was built: English stemming and stopwords, split 1."""

    language: str = "english"  # a Snowball language (Stemmer.algorithms()) or "none"
    stemmer: str | None = "english"
    stopwords: str | None = "en"  # a bm25s stopword list's name
    cjk_bigrams: bool = True
    split: int = 1  # 2: combining vowel signs kept inside words (_marks), Korean and CJK_2's characters in bigrams

    @classmethod
    def of(cls, language: str) -> Analyzer:
        """The analyzer of a language ("none": no stemming, no stopwords), as a new index is built with."""
        bm25_language.check_language(language)
        stem = None if language == bm25_language.NONE else language
        return cls(language, stem, bm25_language.STOPWORD_LISTS.get(language), cjk_bigrams=True, split=2)

    def stemmer_object(self):
        return None if self.stemmer is None else Stemmer.Stemmer(self.stemmer)

    def tokenize(self, texts: list[str], stem, **kw):
        words = _WORDS_MARKS if self.split >= 2 else _WORDS
        if self.cjk_bigrams:
            texts = [cjk_bigrams(t, split=self.split) for t in texts]
            words += "|" + _CHARS[self.split].pattern
        return bm25s.tokenize(texts, stopwords=self.stopwords, stemmer=stem, token_pattern=words,
                              show_progress=False, **kw)


_BEFORE_BIGRAMS = Analyzer(cjk_bigrams=False)  # an index saved without TOKENIZER_FILE


class BM25Index:
    """Keyword index over a fixed list of texts; ``search`` returns (position, score) best first."""

    def __init__(self, retriever, n: int, *, analyzer: Analyzer = Analyzer()):
        self._retriever = retriever
        self.n = n
        self.analyzer = analyzer
        self._stem = self.analyzer.stemmer_object()

    @property
    def cjk(self) -> bool:
        """Text split with cjk_bigrams; False for an index saved before it was (read as it was built)."""
        return self.analyzer.cjk_bigrams

    @property
    def language(self) -> str:
        return self.analyzer.language

    @classmethod
    def build(cls, texts: list[str], *, k1: float = BM25_K1, b: float = BM25_B,
              language: str = bm25_language.AUTO) -> BM25Index | None:
        """None when no text has a word BM25 can index (only stopwords or one-letter words): bm25s cannot build then.
        ``k1`` and ``b`` are fixed into the saved scores (bm25s precomputes them at index time); out of range (k1 in
        (0, 10], b in [0, 1], as IndexConfig checks them) is a ValueError. ``language``: "auto" (the texts' own,
        rag/bm25_language.py), "none" (no stemming, no stopwords) or a Snowball language (Stemmer.algorithms())."""
        if not (0 < k1 <= 10 and 0 <= b <= 1):
            raise ValueError(f"BM25 needs 0 < k1 <= 10 and 0 <= b <= 1, got k1={k1}, b={b}")
        bm25_language.check_language(language)
        analyzer = Analyzer.of(bm25_language.detect(texts) if language == bm25_language.AUTO else language)
        tokens = analyzer.tokenize(texts, analyzer.stemmer_object())
        if not tokens.vocab:
            return None
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts), analyzer=analyzer)

    def _tokens(self, queries: list[str]) -> list[list[str]]:
        toks = self.analyzer.tokenize(queries, self._stem, return_ids=False)
        vocab = self._retriever.vocab_dict
        return [[t for t in q if t in vocab] for q in toks]

    def search_batch(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        k = max(1, min(k, self.n))
        out: list[list[tuple[int, float]]] = []
        for toks in self._tokens(queries):
            if not toks:  # no query word is in the corpus: BM25 has nothing to say
                out.append([])
                continue
            out.append([(d, s) for d, s in self._top(toks, k) if s > 0])
        return out

    def _top(self, toks: list[str], k: int) -> list[tuple[int, float]]:
        """The best ``k`` (position, score), equal scores in corpus order, the earlier chunk first, at the cut too:
        bm25s's top-k selection gives tied chunks (one text in two documents) in no set order and may keep a later
        one over an earlier one at the k-th place. So one more than k is asked for, and more while the last ties the
        k-th (a tie at 0 aside: those chunks match no query word and are left out anyway)."""
        wide = min(k + 1, self.n)
        while True:
            docs, scores = self._retriever.retrieve([toks], k=wide, show_progress=False)
            hits = [(int(d), float(s)) for d, s in zip(docs[0], scores[0])]
            if wide >= self.n or not hits[k - 1][1] > 0 or hits[-1][1] != hits[k - 1][1]:
                return sorted(hits, key=lambda h: (-h[1], h[0]))[:k]
            wide = min(2 * wide, self.n)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        return self.search_batch([query], k)[0]

    def save(self, folder: str | Path) -> None:
        self._retriever.save(str(folder), show_progress=False)
        (Path(folder) / TOKENIZER_FILE).write_text(json.dumps(asdict(self.analyzer)) + "\n")

    @classmethod
    def load(cls, folder: str | Path, n: int) -> BM25Index:
        """The index with its text's analyzer: an index saved without TOKENIZER_FILE was built before CJK bigrams,
        one whose file names only them before languages (English), and its queries are split as its text was."""
        marker = Path(folder) / TOKENIZER_FILE
        analyzer = _BEFORE_BIGRAMS
        if marker.exists():
            saved = json.loads(marker.read_text())
            fields = {k: saved[k] for k in Analyzer.__dataclass_fields__ if k in saved}
            analyzer = Analyzer(**{**fields, "cjk_bigrams": saved.get("cjk_bigrams") is True})
        return cls(bm25s.BM25.load(str(folder), show_progress=False), n, analyzer=analyzer)
