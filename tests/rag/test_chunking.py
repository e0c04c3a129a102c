from corpora.records import Document
from rag.chunking import chunk_documents, chunk_id, doc_id_of, hf_tokenizer, whitespace_tokenizer
from rag.config import ChunkingConfig
from rag.models import minilm_path


def _doc(n_sentences: int, doc_id: str = "d1") -> Document:
    text = " ".join(f"Sentence number {i} explains the KV cache in detail." for i in range(n_sentences))
    return Document(id=doc_id, title="KV cache", text=text)


def test_chunk_ids_name_their_document():
    assert chunk_id("a#b", 3) == "a#b#3"
    assert doc_id_of("a#b#3") == "a#b"


def test_short_document_is_one_chunk():
    nodes = chunk_documents([_doc(2)], ChunkingConfig(chunk_size=128, chunk_overlap=0), whitespace_tokenizer)
    assert [n.id_ for n in nodes] == ["d1#0"]
    assert nodes[0].metadata == {"doc_id": "d1", "title": "KV cache", "chunk": 0}


def test_long_document_splits_within_budget_with_overlap():
    tok = hf_tokenizer(str(minilm_path()))
    cfg = ChunkingConfig(chunk_size=40, chunk_overlap=10)
    nodes = chunk_documents([_doc(30)], cfg, tok)
    assert len(nodes) > 5
    assert all(len(tok(n.text)) <= cfg.chunk_size for n in nodes)
    assert [n.metadata["chunk"] for n in nodes] == list(range(len(nodes)))
    # overlap: consecutive chunks share text
    assert any(set(a.text.split()[-4:]) & set(b.text.split()[:12]) for a, b in zip(nodes, nodes[1:]))
    # nothing lost: every sentence number appears in some chunk
    joined = " ".join(n.text for n in nodes)
    assert all(f"number {i} " in joined for i in range(30))


def test_hf_tokenizer_has_no_padding_or_truncation():
    tok = hf_tokenizer(str(minilm_path()))
    assert len(tok("hello world")) == 2
    assert len(tok("word " * 1000)) == 1000


def test_chunking_is_deterministic():
    cfg = ChunkingConfig(chunk_size=32, chunk_overlap=8)
    a = [n.text for n in chunk_documents([_doc(20)], cfg, whitespace_tokenizer)]
    b = [n.text for n in chunk_documents([_doc(20)], cfg, whitespace_tokenizer)]
    assert a == b


def test_a_run_the_tokenizer_cannot_split_counts_by_its_length():
    """WordPiece maps a word it cannot split (Thai without spaces, a 3,000-character token) to one [UNK]: counted as
    one token, a chunk of 128 "tokens" held 6,000 characters and a context budget let them all through."""
    count = hf_tokenizer(str(minilm_path()))
    assert len(count("The KV cache stores keys.")) == 6  # text the vocabulary covers: unchanged
    assert len(count("\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35" * 100)) >= 600 / 4
    docs = [Document(id="huge", text="x" * 3000 + " capital of Spain is Madrid " + "y" * 3000)]
    nodes = chunk_documents(docs, ChunkingConfig(chunk_size=128, chunk_overlap=16), count)
    assert max(len(n.text) for n in nodes) <= 4 * 128 + 64
