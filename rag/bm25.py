"""BM25 over chunks via the maintained ``bm25s`` library (Lucene scoring, English stopwords, Snowball stemmer;
Chinese and Japanese as overlapping character bigrams, as Lucene's CJK analyzer reads them)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import bm25s
import Stemmer

from rag.config import BM25_B, BM25_K1

# Chinese and Japanese, written without spaces: bm25s would read each run between punctuation as one word
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
_CJK_SEQ = re.compile(CJK.pattern + "+")
# bm25s's words (two or more word characters) and, with cjk_bigrams, a Chinese or Japanese character standing alone
_WORDS = r"(?u)\b\w\w+\b"
_WORDS_CJK = _WORDS + "|" + CJK.pattern
TOKENIZER_FILE = "ragdoctor_tokenizer.json"  # beside bm25s's files: how this index's text was split into words


def cjk_bigrams(text: str) -> str:
    """Each run of Chinese or Japanese characters as its overlapping bigrams ("键值缓存" -> " 键值 值缓 缓存 "), a lone
    character as itself: text without spaces becomes words BM25 can match inside a sentence. Other text is unchanged."""
    def pairs(m: re.Match) -> str:
        run = m.group(0)
        return " " + (" ".join(run[i:i + 2] for i in range(len(run) - 1)) if len(run) > 1 else run) + " "
    return _CJK_SEQ.sub(pairs, text)


def _stemmer():
    return Stemmer.Stemmer("english")


class BM25Index:
    """Keyword index over a fixed list of texts; ``search`` returns (position, score) best first."""

    def __init__(self, retriever, n: int, *, cjk: bool = True):
        self._retriever = retriever
        self.n = n
        self._stem = _stemmer()
        self.cjk = cjk  # text split with cjk_bigrams; False for an index saved before it was (read as it was built)

    @staticmethod
    def _tokenize(texts: list[str], stem, cjk: bool, **kw):
        if cjk:
            texts = [cjk_bigrams(t) for t in texts]
        return bm25s.tokenize(texts, stopwords="en", stemmer=stem, token_pattern=_WORDS_CJK if cjk else _WORDS,
                              show_progress=False, **kw)

    @classmethod
    def build(cls, texts: list[str], *, k1: float = BM25_K1, b: float = BM25_B) -> BM25Index | None:
        """None when no text has a word BM25 can index (only stopwords or one-letter words): bm25s cannot build then.
        ``k1`` and ``b`` are fixed into the saved scores (bm25s precomputes them at index time); out of range (k1 in
        (0, 10], b in [0, 1], as IndexConfig checks them) is a ValueError."""
        if not (0 < k1 <= 10 and 0 <= b <= 1):
            raise ValueError(f"BM25 needs 0 < k1 <= 10 and 0 <= b <= 1, got k1={k1}, b={b}")
        tokens = cls._tokenize(texts, _stemmer(), True)
        if not tokens.vocab:
            return None
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts))

    def _tokens(self, queries: list[str]) -> list[list[str]]:
        toks = self._tokenize(queries, self._stem, self.cjk, return_ids=False)
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
        (Path(folder) / TOKENIZER_FILE).write_text(json.dumps({"cjk_bigrams": self.cjk}) + "\n")

    @classmethod
    def load(cls, folder: str | Path, n: int) -> BM25Index:
        """An index saved without TOKENIZER_FILE was built before CJK bigrams: its queries are split as its text was."""
        marker = Path(folder) / TOKENIZER_FILE
        cjk = marker.exists() and json.loads(marker.read_text()).get("cjk_bigrams") is True
        return cls(bm25s.BM25.load(str(folder), show_progress=False), n, cjk=cjk)
