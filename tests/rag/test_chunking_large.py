"""A document past STREAM_ABOVE characters is chunked by split_long_text (rag/chunking.py): the chunks SentenceSplitter
makes, in memory that does not grow with the document's token count (SentenceSplitter tokenized a 5 MB text whole:
~700 MB, and listed a split per word)."""
import tracemalloc

import pytest
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.utils import globals_helper

from corpora.bundled import bundled_documents
from corpora.records import Document
from rag import chunking
from rag.chunking import STREAM_ABOVE, chunk_documents, hf_tokenizer, split_long_text, whitespace_tokenizer
from rag.config import ChunkingConfig
from rag.models import minilm_path

ODD = {
    "paragraphs": "\n\n\n".join(f"Paragraph {i}. It has sentences, commas; and more words here. " * 4 for i in range(30)),
    "one line": "word " * 3000,
    "no space": "x" * 3000 + " capital of Spain is Madrid " + "y" * 3000,
    "thai": "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35" * 400,
    "abbreviations": 'Dr. Smith (Jr.) said: "Hi!" Then left.) Next one. ' * 100,
    "a run of spaces": "a" + " " * 3000 + "b " * 200,
    "code": "def f(x):\n    return x.y.z(1, 2)\n\n" * 200,
    "blank": "  \n\n ",
}


@pytest.fixture(scope="module")
def minilm():
    return hf_tokenizer(str(minilm_path()))


@pytest.mark.parametrize("size,overlap", [(128, 16), (40, 10), (16, 0)])
def test_the_streaming_splitter_makes_sentence_splitters_chunks(minilm, size, overlap):
    """Equal on ordinary documents (the bundled corpus) and odd ones, both token counters (rag/chunking.py keeps
    SentenceSplitter itself for documents up to STREAM_ABOVE characters)."""
    texts = [d.text for d in bundled_documents()[:20]] + list(ODD.values())
    for tokenizer in (minilm, whitespace_tokenizer):
        splitter = SentenceSplitter(chunk_size=size, chunk_overlap=overlap, tokenizer=tokenizer)
        for text in texts:
            assert split_long_text(splitter, text, tokenizer) == splitter.split_text(text), text[:60]


def test_a_long_text_is_not_tokenized_whole(minilm):
    """Past _HEAD characters, the first _HEAD show that a text is over the chunk size: equal chunks, and no call to the
    tokenizer sees more than _HEAD characters."""
    text = " ".join(f"Sentence {i} of a long report on the KV cache." for i in range(1500))
    assert len(text) > chunking._HEAD
    seen: list[int] = []

    def counting(t: str) -> list[int]:
        seen.append(len(t))
        return minilm(t)

    splitter = SentenceSplitter(chunk_size=128, chunk_overlap=16, tokenizer=minilm)
    assert split_long_text(splitter, text, counting) == splitter.split_text(text)
    assert max(seen) <= chunking._HEAD


@pytest.mark.parametrize("shape", ["one line", "prose", "no space"])
def test_a_large_document_is_chunked_in_bounded_memory(minilm, shape):
    """1 MB in one line (a million-word split list before), in paragraphs of sentences, and with no space at all
    (split to characters): every chunk within the chunk size, numbered in order, nothing lost. No call to the tokenizer
    sees more than _HEAD characters (SentenceSplitter's first call took the whole text: ~140 MB in the tokenizer per
    MB), and Python's own allocations stay a few bytes per character of text (SentenceSplitter: 130 MB for this 1 MB
    line, 56 MB for the 0.5 MB without a space)."""
    n = 1_000_000
    if shape == "one line":
        text = ("word " * (n // 5))[:n]
    elif shape == "prose":
        text = "\n\n".join(f"Paragraph {i} explains the cache. It stores keys and values, once per token."
                           for i in range(n // 80))
    else:
        text = "abcdefghijklmnopqrstuvwxyz" * (n // 26 // 2)  # 0.5 MB: a split per character
    assert len(text) > STREAM_ABOVE
    cfg = ChunkingConfig()
    chunk_documents([Document(id="warm", text="Punkt loads. Once. " * 10)], cfg, minilm)  # nltk's import, not ours
    longest = 0

    def counting(t: str) -> list[int]:
        nonlocal longest
        longest = max(longest, len(t))
        return minilm(t)

    tracemalloc.start()
    try:
        nodes = chunk_documents([Document(id="big", title="Big", text=text)], cfg, counting)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert longest <= chunking._HEAD
    assert peak < 10 * len(text) + 5_000_000, f"{peak / 1e6:.0f} MB for {len(text) / 1e6:.1f} MB of text"
    assert [n.id_ for n in nodes] == [f"big#{i}" for i in range(len(nodes))]
    assert all(len(minilm(n.text)) <= cfg.chunk_size for n in nodes[:: max(1, len(nodes) // 200)] + nodes[-3:])
    assert nodes[0].text == text[: len(nodes[0].text)] and text.rstrip().endswith(nodes[-1].text)
    assert sum(len(n.text) for n in nodes) >= len(text.replace("\n\n", " ")) * 0.99  # overlap aside, all of it


@pytest.mark.slow
def test_a_large_document_gets_sentence_splitters_chunks(minilm):
    """The streaming splitter against SentenceSplitter on a whole 1 MB document of each shape (SentenceSplitter takes
    ~170 MB a MB of text, seconds)."""
    splitter = SentenceSplitter(chunk_size=128, chunk_overlap=16, tokenizer=minilm)
    for text in ("word " * 200_000, "\n\n".join(f"Line {i} is here. And Dr. Who too." for i in range(30_000)),
                 "qwertyuiop" * 50_000):
        assert split_long_text(splitter, text, minilm) == splitter.split_text(text)


def test_punkt_timing_out_goes_on_from_the_last_sentence_it_found(monkeypatch):
    """nltk's regex guard stops punkt after 5 s of CPU (some 15 MB of prose; SentenceSplitter raised TimeoutError):
    punkt goes on from the start of the last sentence it had found, and the sentences are those of one run."""
    text = " ".join(f"Sentence number {i} ends here." for i in range(50))
    whole = list(chunking._sentences(text))
    punkt = globals_helper.punkt_tokenizer
    real = punkt.span_tokenize
    calls = []

    def stops_after_10(t, *args, **kwargs):
        calls.append(len(t))
        for i, span in enumerate(real(t, *args, **kwargs)):
            if i == 10 and len(calls) < 4:
                raise TimeoutError("regular-expression match exceeded its 5.0s time limit")
            yield span

    monkeypatch.setattr(punkt, "span_tokenize", stops_after_10)
    assert list(chunking._sentences(text)) == whole
    assert len(calls) == 4


def test_punkt_timing_out_with_nothing_found_raises(monkeypatch):
    def stops(t, *args, **kwargs):
        raise TimeoutError("regular-expression match exceeded its 5.0s time limit")
        yield

    monkeypatch.setattr(globals_helper.punkt_tokenizer, "span_tokenize", stops)
    with pytest.raises(TimeoutError):
        list(chunking._sentences("One. Two."))
