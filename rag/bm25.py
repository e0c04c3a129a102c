"""BM25 over chunks via the maintained ``bm25s`` library (Lucene scoring). Words are read in the corpus's language
(rag/bm25_language.py: found at build, or set): its Snowball stemmer and stopword list where there is one, English's
for English text as ever, never English's for another language; Chinese, Japanese and Korean as overlapping character
bigrams, as Lucene's CJK analyzer reads them, and so Thai, Lao, Khmer and Myanmar, also written without spaces between
words (each character with its combining marks). How the text was split is saved with the index (TOKENIZER_FILE), and
a loaded index splits its queries the same way; ``is_current`` tells whether it is split as a new index would be."""
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
_CHARS = {1: CJK, 2: CJK_2, 3: CJK_2}
_SEQ = {split: re.compile(chars.pattern + "+") for split, chars in _CHARS.items()}
# bm25s's words (two or more word characters) and, with cjk_bigrams, a Chinese or Japanese character standing alone
_WORDS = r"(?u)\b\w\w+\b"


def _chars(blocks: tuple[tuple[int, int], ...], categories: tuple[str, ...]) -> str:
    """The characters of ``blocks`` (first, last code point) whose Unicode category is among ``categories``, as the
    inside of a regular expression's character class."""
    ranges: list[list[int]] = []
    for first, last in blocks:
        for c in range(first, last + 1):
            if unicodedata.category(chr(c)) in categories:
                if ranges and ranges[-1][1] == c - 1:
                    ranges[-1][1] = c
                else:
                    ranges.append([c, c])
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


_MARK = ("Mn", "Mc", "Me")


def _marks() -> str:
    """The combining vowel signs, viramas and points of the scripts from Hebrew to Sinhala (Arabic, Devanagari,
    Tamil, ...), which Python's ``\\w`` leaves out: "हिन्दी भाषा में" would be cut into pieces at them. (Latin, Greek
    and Cyrillic's combining accents are not among them: a decomposed "é" splits as it always did; nor are Thai's:
    SEA_MARKS, from split 3.)"""
    return _chars(((0x0590, 0x0DFF),), _MARK)


# Thai, Lao, Myanmar (and its extensions) and Khmer: written without spaces between words, so from split 3 on their
# runs are read as overlapping bigrams too (cjk_bigrams), of characters that each keep their combining marks (vowel
# signs, tone marks) and, after a Myanmar virama or a Khmer coeng, the consonant it stacks below
SEA_BLOCKS = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0xA9E0, 0xA9FF),
              (0xAA60, 0xAA7F))
SEA_LETTERS = _chars(SEA_BLOCKS, ("Lu", "Ll", "Lt", "Lm", "Lo"))
SEA_MARKS = _chars(SEA_BLOCKS, _MARK)
_SEA_UNIT = re.compile(rf"[{SEA_LETTERS}](?:[\u1039\u17d2][{SEA_LETTERS}]|[{SEA_MARKS}])*")
_SEA_RUN = re.compile(rf"(?:{_SEA_UNIT.pattern})+")


_W = r"\w" + _marks()
# the same words with those marks inside them: text without them is split exactly as by _WORDS
_WORDS_MARKS = rf"(?u)(?<![{_W}])\w[{_W}]*[{_W}](?![{_W}])"
_W3 = _W + SEA_MARKS  # and from split 3 Thai's, Lao's, Myanmar's and Khmer's, inside their bigrams
_SPLIT_WORDS = {1: _WORDS, 2: _WORDS_MARKS, 3: rf"(?u)(?<![{_W3}])\w[{_W3}]*[{_W3}](?![{_W3}])"}
# with cjk_bigrams, a character standing alone is a word too: Chinese or Japanese (and Korean, from split 2), and from
# split 3 a Thai, Lao, Myanmar or Khmer one (with its marks, which the words above take in)
_ALONE = {1: CJK.pattern, 2: CJK_2.pattern, 3: CJK_2.pattern + f"|[{SEA_LETTERS}]"}
SPLIT = 3  # how a new index splits its text; a saved index with a lower one is split as it was built (Analyzer.split)
TOKENIZER_FILE = "ragdoctor_tokenizer.json"  # beside bm25s's files: how this index's text was split into words


def _pairs(run: list[str]) -> str:
    return " " + (" ".join(a + b for a, b in zip(run, run[1:])) if len(run) > 1 else "".join(run)) + " "


def cjk_bigrams(text: str, *, split: int = 2) -> str:
    """Each run of Chinese or Japanese characters (and Korean, from ``split`` 2 on: CJK_2) as its overlapping bigrams
    ("键值缓存" -> " 键值 值缓 缓存 "), a lone character as itself: text without spaces becomes words BM25 can match
    inside a sentence. From split 3 on, runs of Thai, Lao, Myanmar and Khmer likewise, each character with its
    combining marks ("ที่นี่" -> " ที่นี่ ": two characters, one bigram). Other text is unchanged."""
    text = _SEQ[split].sub(lambda m: _pairs(list(m.group(0))), text)
    if split >= 3:
        text = _SEA_RUN.sub(lambda m: _pairs(_SEA_UNIT.findall(m.group(0))), text)
    return text


@dataclass(frozen=True)
class Analyzer:
    """How text becomes BM25's words, saved with the index (TOKENIZER_FILE). The defaults are how an index saved
    before the file named them was built: English stemming and stopwords, split 1."""

    language: str = "english"  # a Snowball language (Stemmer.algorithms()) or "none"
    stemmer: str | None = "english"
    stopwords: str | None = "en"  # a bm25s stopword list's name
    cjk_bigrams: bool = True
    split: int = 1  # 2: combining vowel signs kept inside words (_marks), Korean and CJK_2's characters in bigrams;
    # 3: Thai, Lao, Myanmar and Khmer in bigrams too (SEA_BLOCKS)

    @classmethod
    def of(cls, language: str) -> Analyzer:
        """The analyzer of a language ("none": no stemming, no stopwords), as a new index is built with."""
        bm25_language.check_language(language)
        stem = None if language == bm25_language.NONE else language
        return cls(language, stem, bm25_language.STOPWORD_LISTS.get(language), cjk_bigrams=True, split=SPLIT)

    def stemmer_object(self):
        return None if self.stemmer is None else Stemmer.Stemmer(self.stemmer)

    def tokenize(self, texts: list[str], stem, **kw):
        words = _SPLIT_WORDS[self.split]
        if self.cjk_bigrams:
            texts = [cjk_bigrams(t, split=self.split) for t in texts]
            words += "|" + _ALONE[self.split]
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
        return cls(bm25s.BM25.load(str(folder), show_progress=False), n, analyzer=saved_analyzer(folder))


def saved_analyzer(folder: str | Path) -> Analyzer:
    """The analyzer the BM25 index saved in ``folder`` was built with (its TOKENIZER_FILE; see BM25Index.load)."""
    marker = Path(folder) / TOKENIZER_FILE
    if not marker.exists():
        return _BEFORE_BIGRAMS
    saved = json.loads(marker.read_text())
    fields = {k: saved[k] for k in Analyzer.__dataclass_fields__ if k in saved}
    return Analyzer(**{**fields, "cjk_bigrams": saved.get("cjk_bigrams") is True})


def is_current(folder: str | Path, language: str) -> bool:
    """Whether the BM25 index saved in ``folder`` reads text as one built now with ``language`` would: a set language
    by that language's analyzer, "auto" by today's analyzer of the language found at its build (the texts are the
    same, as the manifest's checksum and chunking say, and detection depends on them alone, so only a change of the
    analyzer, which raises SPLIT, can make a new build read them otherwise). False for an index saved before languages
    (read as English whatever its texts) or before a change of splitting, and for an unreadable TOKENIZER_FILE (a
    rebuild then checks the files against the manifest)."""
    try:
        saved = saved_analyzer(folder)
        return saved == Analyzer.of(saved.language if language == bm25_language.AUTO else language)
    except (OSError, ValueError, TypeError):
        return False
