"""BM25 over chunks via the maintained ``bm25s`` library (Lucene scoring, English stopwords, Snowball stemmer)."""
from __future__ import annotations

import re
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from corpora.errors import warn
from rag.config import BM25_B, BM25_K1

# Chinese and Japanese, written without spaces: bm25s reads each run between punctuation as one word
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
CJK_RUN = 4  # characters: a word is 1 to 3 of them, a longer run is several words BM25 cannot match one by one
CJK_SHARE = 0.2  # of the indexed text's characters, from which BM25 is warned about


def _stemmer():
    return Stemmer.Stemmer("english")


def unspaced_share(tokens) -> float:
    """The share of the indexed text (characters of its tokens, counted as often as they occur) in tokens holding a
    run of Chinese or Japanese characters (CJK_RUN or more): text BM25 holds as whole sentences, not words."""
    ids = [np.asarray(doc, dtype=np.int64) for doc in tokens.ids if len(doc)]
    if not ids:
        return 0.0
    freq = np.bincount(np.concatenate(ids), minlength=len(tokens.vocab))
    length = np.zeros(len(freq), dtype=np.int64)
    unspaced = np.zeros(len(freq), dtype=bool)
    for token, i in tokens.vocab.items():
        length[i] = len(token)
        unspaced[i] = len(CJK.findall(token)) >= CJK_RUN
    total = int((freq * length).sum())
    return float((freq * length)[unspaced].sum() / total) if total else 0.0


def _warn_unspaced(tokens) -> None:
    share = unspaced_share(tokens)
    if share >= CJK_SHARE:
        warn(f"BM25: {share:.0%} of the corpus's indexed text is Chinese or Japanese written without spaces, which "
             "BM25 reads as one word per run between punctuation: it cannot match a word inside such a run, so keyword "
             "search finds little there; use dense retrieval (retrieval.mode = \"dense\")")


class BM25Index:
    """Keyword index over a fixed list of texts; ``search`` returns (position, score) best first."""

    def __init__(self, retriever, n: int):
        self._retriever = retriever
        self.n = n
        self._stem = _stemmer()

    @classmethod
    def build(cls, texts: list[str], *, k1: float = BM25_K1, b: float = BM25_B) -> BM25Index | None:
        """None when no text has a word BM25 can index (only stopwords or one-letter words): bm25s cannot build then.
        ``k1`` and ``b`` are fixed into the saved scores (bm25s precomputes them at index time)."""
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False)
        if not tokens.vocab:
            return None
        _warn_unspaced(tokens)
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts))

    def _tokens(self, queries: list[str]) -> list[list[str]]:
        toks = bm25s.tokenize(queries, stopwords="en", stemmer=self._stem, return_ids=False, show_progress=False)
        vocab = self._retriever.vocab_dict
        return [[t for t in q if t in vocab] for q in toks]

    def search_batch(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        k = max(1, min(k, self.n))
        out: list[list[tuple[int, float]]] = []
        for toks in self._tokens(queries):
            if not toks:  # no query word is in the corpus: BM25 has nothing to say
                out.append([])
                continue
            docs, scores = self._retriever.retrieve([toks], k=k, show_progress=False)
            out.append([(int(d), float(s)) for d, s in zip(docs[0], scores[0]) if s > 0])
        return out

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        return self.search_batch([query], k)[0]

    def save(self, folder: str | Path) -> None:
        self._retriever.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: str | Path, n: int) -> BM25Index:
        return cls(bm25s.BM25.load(str(folder), show_progress=False), n)
