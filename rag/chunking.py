"""Chunking with llama-index's SentenceSplitter, counting tokens with the embedder's own local tokenizer
(no tiktoken, nothing downloaded). Chunk ids are ``<doc_id>#<n>`` so every chunk names its document."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import TextNode
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
        for n, text in enumerate(splitter.split_text(doc.text)):
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
