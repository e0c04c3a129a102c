"""BM25 over chunks (rag/bm25.py): Lucene scoring through bm25s, stemming and stopwords, nothing to index, save/load."""
from rag.bm25 import BM25Index

TEXTS = ["The KV cache stores keys and values.", "FlashAttention tiles attention to save memory traffic.",
         "Ring all-reduce sends twice the gradient size.", "Caching keys speeds decoding."]


def test_search_ranks_by_shared_stemmed_words():
    index = BM25Index.build(TEXTS)
    hits = index.search("How are keys cached?", 4)
    assert [p for p, _ in hits][:2] == [3, 0] or [p for p, _ in hits][:2] == [0, 3]
    assert all(s > 0 for _, s in hits) and {p for p, _ in hits} <= {0, 3}  # documents with no query word: not listed
    assert index.search("zebra", 4) == [] and len(index.search_batch(["keys", "ring"], 1)) == 2


def test_a_corpus_with_no_indexable_word_gives_no_index():
    assert BM25Index.build(["the of a", "an it"]) is None


def test_save_and_load_give_the_same_results(tmp_path):
    index = BM25Index.build(TEXTS)
    index.save(tmp_path / "bm25")
    again = BM25Index.load(tmp_path / "bm25", len(TEXTS))
    assert again.search("gradient ring", 2) == index.search("gradient ring", 2)


def test_k1_and_b_change_the_scores_and_survive_save_and_load(tmp_path):
    long_doc = "keys " + "filler words about something else entirely " * 10
    texts = ["keys keys keys cache", long_doc, "keys cache"]
    default, flat = BM25Index.build(texts), BM25Index.build(texts, k1=0.9, b=0.0)
    d, f = dict(default.search("keys", 3)), dict(flat.search("keys", 3))
    assert d != f
    assert f[1] / f[2] > d[1] / d[2]  # no length normalisation (b=0): the long document is no longer pushed down
    flat.save(tmp_path / "bm25")
    assert BM25Index.load(tmp_path / "bm25", 3).search("keys", 3) == flat.search("keys", 3)


def test_a_corpus_of_unspaced_chinese_or_japanese_is_warned_about_once(caplog):
    """bm25s reads each run of CJK characters between punctuation as one word: "键值缓存" never matches a sentence."""
    caplog.set_level("WARNING")
    zh = ["大型语言模型的键值缓存随上下文长度线性增长。", "向量数据库使用近似最近邻搜索。"]
    index = BM25Index.build([*zh, "KV cache"])
    assert index.search("键值缓存", 3) == []  # the reason for the warning
    said = [r.getMessage() for r in caplog.records if "BM25" in r.getMessage()]
    assert len(said) == 1 and "written without spaces" in said[0] and "use dense retrieval" in said[0], said
    caplog.clear()
    BM25Index.build([*TEXTS, "日本語", "Müller straße café", "КЭШ ключей и значений растёт"])  # a few words: no
    assert "written without spaces" not in caplog.text
