"""Chunking with llama-index's SentenceSplitter, counting tokens with the embedder's own local tokenizer
(no tiktoken, nothing downloaded). Chunk ids are ``<doc_id>#<n>`` so every chunk names its document. A document
longer than STREAM_ABOVE characters gets the same chunks from a streaming copy of the splitter (split_long_text), in
memory bounded by a few copies of its text rather than by its token count."""
from __future__ import annotations

import re
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, islice
from pathlib import Path

from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import TextNode
from llama_index.core.utils import globals_helper
from tokenizers import Tokenizer

from corpora.records import Document
from rag.config import ChunkingConfig

Tokenize = Callable[[str], list[int]]


@lru_cache(maxsize=4)
def hf_tokenizer(model_dir: str) -> Tokenize:
    """The fast tokenizer stored beside a sentence-transformers model, with padding/truncation off."""
    tok = _plain_tokenizer(model_dir)
    unk = tok.token_to_id("[UNK]")

    def tokenize(text: str) -> list[int]:
        """Token ids; an unknown-token run counts as one token per 4 characters it covers. WordPiece maps any word it
        cannot split (Thai or Japanese written without spaces, base64, a 300-character URL) to a single [UNK], so a
        600-character run would count as 1 token: chunks and context budgets would be far past their size."""
        enc = tok.encode(text, add_special_tokens=False)
        if unk is None or unk not in enc.ids:
            return enc.ids
        out: list[int] = []
        for t, (start, end) in zip(enc.ids, enc.offsets, strict=True):
            out.append(t)
            if t == unk:
                out.extend([unk] * max(0, -(-(end - start) // 4) - 1))
        return out

    return tokenize


def model_token_counts(model_dir: str, texts: list[str]) -> list[int]:
    """How many tokens the model itself reads of each text, special tokens included and nothing cut (its input
    limit is compared with these): unlike hf_tokenizer, an unknown-token run counts as the one token it is."""
    tok = _plain_tokenizer(model_dir)
    return [len(enc.ids) for enc in tok.encode_batch(texts, add_special_tokens=True)]


@lru_cache(maxsize=2)
def _plain_tokenizer(model_dir: str) -> Tokenizer:
    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def whitespace_tokenizer(text: str) -> list[int]:
    """Dependency-free token counter (one token per whitespace word) for the fake embedder."""
    return list(range(len(text.split())))


def chunk_id(doc_id: str, n: int) -> str:
    return f"{doc_id}#{n}"


def doc_id_of(chunk: str) -> str:
    """Inverse of :func:`chunk_id` (document ids may themselves contain '#')."""
    return chunk.rsplit("#", 1)[0]


def chunk_documents(docs: Iterable[Document], cfg: ChunkingConfig, tokenizer: Tokenize):
    """Split documents into llama-index ``TextNode``s.

    Each node keeps its document's title; ``embedding_text`` puts it first.
    """
    splitter = SentenceSplitter(chunk_size=cfg.chunk_size, chunk_overlap=cfg.chunk_overlap, tokenizer=tokenizer)
    nodes = []
    for doc in docs:
        long = len(doc.text) > STREAM_ABOVE
        texts = split_long_text(splitter, doc.text, tokenizer) if long else splitter.split_text(doc.text)
        for n, text in enumerate(texts):
            nodes.append(
                TextNode(
                    id_=chunk_id(doc.id, n),
                    text=text,
                    metadata={"doc_id": doc.id, "title": doc.title, "chunk": n},
                    excluded_embed_metadata_keys=["doc_id", "chunk"],
                    excluded_llm_metadata_keys=["doc_id", "chunk"],
                )
            )
    return nodes


def embedding_text(node) -> str:
    """What gets embedded and BM25-indexed for a chunk: its document title, then its text."""
    title = node.metadata.get("title") or ""
    return f"{title}\n{node.text}" if title else node.text


# A document longer than this (characters) is chunked by split_long_text. SentenceSplitter tokenizes the whole text
# first (a 5 MB text: a million tokens, ~700 MB in the tokenizer) and lists every split (a word each, in text with
# no sentence ends) before merging them: its memory grows with the document, about 170 MB per MB of text.
STREAM_ABOVE = 100_000
_HEAD = 20_000  # characters of a long text tokenized to show it is over the chunk size
_CACHED = 64  # token counts of splits up to this many characters are remembered (words and characters repeat)


@dataclass
class _Split:
    text: str
    is_sentence: bool
    token_size: int


def split_long_text(splitter: SentenceSplitter, text: str, tokenizer: Tokenize) -> list[str]:
    """``splitter.split_text(text)``'s chunks (llama-index 0.14's SentenceSplitter: its default separators and
    sentence tokenizer, as chunk_documents builds it), made in memory that does not grow with the text's token count:
    its splits are produced lazily, each merged as it comes, and a text longer than _HEAD characters is tokenized
    whole only when its first _HEAD characters (cut at a space) do not already count more than twice the chunk size
    (a text's first words never count more tokens than the whole text, up to a few at the cut). Equal to
    split_text's chunks: tests/rag/test_chunking_large.py."""
    return list(_StreamingSplitter(splitter, tokenizer).chunks(text))


class _StreamingSplitter:
    """SentenceSplitter._split and _merge as generators (same order of split functions, same merge rules)."""

    def __init__(self, splitter: SentenceSplitter, tokenizer: Tokenize):
        self.size, self.overlap = splitter.chunk_size, splitter.chunk_overlap
        self.tokenize = tokenizer
        self.paragraph, self.separator = splitter.paragraph_separator, splitter.separator
        regex = splitter.secondary_chunking_regex
        self.phrases = re.compile(regex) if regex else None
        self.counts: dict[str, int] = {}

    def chunks(self, text: str) -> Iterator[str]:
        if text == "":
            yield text
            return
        for chunk in self._merge(self._split(text, self._size(text))):
            chunk = chunk.strip()
            if chunk:
                yield chunk

    def _count(self, text: str) -> int:
        if len(text) > _CACHED:
            return len(self.tokenize(text))
        n = self.counts.get(text)
        if n is None:
            if len(self.counts) >= 100_000:
                self.counts.clear()
            n = self.counts[text] = len(self.tokenize(text))
        return n

    def _size(self, text: str) -> int | None:
        """The text's token count, or None where it is surely over the chunk size."""
        if len(text) > _HEAD:
            head = text[:_HEAD]
            cut = max(head.rfind(" "), head.rfind("\n"))
            if len(self.tokenize(head[:cut] if cut > _HEAD // 2 else head)) > 2 * self.size + 16:
                return None
        return self._count(text)

    def _split(self, text: str, size: int | None) -> Iterator[_Split]:
        if size is not None and size <= self.size:
            yield _Split(text, True, size)
            return
        pieces, is_sentence, single = self._pieces(text)
        for piece in pieces:
            n = self._size(piece)
            if n is not None and n <= self.size:
                yield _Split(piece, is_sentence, n)
            elif single:  # one character over the chunk size: _merge raises SentenceSplitter's error
                yield _Split(piece, is_sentence, self._count(piece))
            else:
                yield from self._split(piece, n)

    def _pieces(self, text: str) -> tuple[Iterator[str], bool, bool]:
        """SentenceSplitter._get_splits_by_fns lazily: (pieces, whether they are sentences, whether there is only one).
        Paragraphs, else sentences (both sentences); else phrases, words, characters."""
        for split in (self._paragraphs, _sentences):
            it = split(text)
            head = list(islice(it, 2))
            if len(head) > 1:
                return chain(head, it), True, False
        for split in (self._phrases, self._words, _characters):
            it = split(text)
            head = list(islice(it, 2))
            if len(head) > 1:
                break
        return chain(head, it), False, len(head) <= 1

    def _paragraphs(self, text: str) -> Iterator[str]:
        return _split_keep(text, self.paragraph)

    def _phrases(self, text: str) -> Iterator[str]:
        return (m.group() for m in self.phrases.finditer(text)) if self.phrases is not None else iter([text])

    def _words(self, text: str) -> Iterator[str]:
        return _split_keep(text, self.separator)

    def _merge(self, splits: Iterator[_Split]) -> Iterator[str]:
        """SentenceSplitter._merge over an iterator, yielding each chunk as it closes (before its strip)."""
        cur: deque[tuple[str, int]] = deque()
        cur_len = 0
        new = True
        split = next(splits, None)
        while split is not None:
            if split.token_size > self.size:
                raise ValueError("Single token exceeded chunk size")
            close = False
            if cur_len + split.token_size > self.size and not new:
                close = True
            else:
                if new and cur_len + split.token_size > self.size:
                    while cur and cur_len + split.token_size > self.size:
                        cur_len -= cur.popleft()[1]
                if split.is_sentence or cur_len + split.token_size <= self.size or new:
                    cur_len += split.token_size
                    cur.append((split.text, split.token_size))
                    split = next(splits, None)
                    new = False
                else:
                    close = True
            if close:
                yield "".join(t for t, _ in cur)
                last, cur, cur_len, new = cur, deque(), 0, True
                for t, n in reversed(last):  # the overlap: the last chunk's last splits that fit in it
                    if cur_len + n > self.overlap:
                        break
                    cur_len += n
                    cur.appendleft((t, n))
        if not new:
            yield "".join(t for t, _ in cur)


def _split_keep(text: str, sep: str) -> Iterator[str]:
    """llama-index's split_text_keep_separator lazily: the parts between ``sep``, each after the first with ``sep`` in
    front, an empty first part left out."""
    start, first = 0, True
    while True:
        i = text.find(sep, start)
        part = text[start:] if i < 0 else text[start:i]
        if not first:
            yield sep + part
        elif part:
            yield part
        if i < 0:
            return
        start, first = i + len(sep), False


def _characters(text: str) -> Iterator[str]:
    return iter(text)


def _sentences(text: str) -> Iterator[str]:
    """llama-index's split_by_sentence_tokenizer (punkt): each sentence from its start to the next one's."""
    starts = _sentence_starts(text)
    for i, start in enumerate(starts):
        yield text[start:starts[i + 1] if i + 1 < len(starts) else len(text)]


def _sentence_starts(text: str) -> array[int]:
    """Where punkt's sentences start, all found before any is used (8 bytes a sentence): nltk's regex guard counts
    the process's CPU time from the first match on, so a lazy consumer's work would count against punkt's 5 s. When
    the guard trips anyway (a text of some 15 MB of prose: SentenceSplitter stops there with a TimeoutError), punkt
    goes on from the start of the last sentence it found."""
    punkt = globals_helper.punkt_tokenizer
    starts: array[int] = array("q")
    offset = 0
    while True:
        try:
            for start, _ in punkt.span_tokenize(text[offset:] if offset else text):
                starts.append(offset + start)
            return starts
        except TimeoutError:
            if not starts or starts[-1] <= offset:
                raise
            offset = starts.pop()
