"""BM25 over chunks (rag/bm25.py): Lucene scoring through bm25s, stemming and stopwords, nothing to index, save/load."""
from rag.bm25 import BM25Index, cjk_bigrams

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


def test_chinese_and_japanese_without_spaces_are_matched_by_character_bigrams(tmp_path):
    """bm25s alone reads each run of CJK characters between punctuation as one word ("键值缓存" would never match a
    sentence holding it); as overlapping bigrams a word inside a sentence is found, as Lucene's CJK analyzer finds it."""
    assert cjk_bigrams("GPU的键值缓存。") == "GPU 的键 键值 值缓 缓存 。" and cjk_bigrams("KV 日 cache") == "KV  日  cache"
    texts = ["大型语言模型的键值缓存随上下文长度线性增长。", "向量数据库使用近似最近邻搜索。", "KV cache",
             "キャッシュのサイズはコンテキスト長に比例する。"]
    index = BM25Index.build(texts)
    assert [d for d, _ in index.search("键值缓存", 4)] == [0]
    assert [d for d, _ in index.search("最近邻", 4)] == [1]
    assert [d for d, _ in index.search("キャッシュ", 4)] == [3]
    assert [d for d, _ in index.search("KV cache", 4)] == [2]  # spaced text as before
    index.save(tmp_path / "bm25")
    assert BM25Index.load(tmp_path / "bm25", 4).search("键值缓存", 4) == index.search("键值缓存", 4)


def test_an_index_saved_before_cjk_bigrams_is_queried_as_it_was_built(tmp_path):
    import bm25s
    texts = ["键值缓存 growth", "vector search"]
    old = bm25s.BM25()
    old.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    old.save(str(tmp_path / "bm25"), show_progress=False)  # no tokenizer file: whole runs were its words
    loaded = BM25Index.load(tmp_path / "bm25", 2)
    assert loaded.cjk is False and [d for d, _ in loaded.search("键值缓存", 2)] == [0]


def test_out_of_range_k1_or_b_is_refused():
    import math

    import pytest
    for k1, b in ((-1, 0.5), (0, 0.5), (1.2, 1.5), (1.2, -0.1), (math.nan, 0.5), (1.2, math.inf)):
        with pytest.raises(ValueError, match="0 < k1 <= 10 and 0 <= b <= 1"):
            BM25Index.build(TEXTS, k1=k1, b=b)


def test_equal_scores_come_in_corpus_order_at_every_k():
    """bm25s gave the three copies as 17, 3, 29, and kept 17 alone at k=1."""
    texts = [f"filler note {i} about apples" for i in range(40)]
    texts[3] = texts[17] = texts[29] = "Paged attention splits the KV cache."
    texts[8] = "The KV cache and more words."
    index = BM25Index.build(texts)
    for k in range(1, 5):
        assert [p for p, _ in index.search("paged KV cache", k)] == [3, 17, 29, 8][:k]
    assert [p for p, _ in index.search_batch(["paged attention", "apples"], 3)[0]] == [3, 17, 29]


# Thai, written without spaces between words: five short sentences on different topics
THAI = ["แมวของฉันชอบนอนบนโซฟาทั้งวัน",  # my cat likes to sleep on the sofa all day
        "รถไฟฟ้าสายใหม่จะเปิดให้บริการปีหน้า",  # the new electric train line opens next year
        "หน่วยความจำแคชเก็บคีย์และค่าไว้ในการ์ดจอ",  # the cache memory keeps keys and values on the graphics card
        "ร้านกาแฟนี้ขายขนมปังอร่อยมาก",  # this coffee shop sells very tasty bread
        "ฝนตกหนักทำให้น้ำท่วมถนนในเมือง"]  # heavy rain flooded the streets of the town


def test_thai_without_spaces_is_matched_by_bigrams_of_its_characters_with_their_marks():
    """bm25s read each Thai run as one word (cut at its vowel signs): a phrase inside a sentence was never found. As
    overlapping bigrams of characters, each with its combining marks, a query's words find the sentence holding them."""
    index = BM25Index.build(THAI)
    for query, right in [("ความจำ", 2), ("น้ำท่วมถนน", 4), ("ขนมปัง", 3), ("รถไฟฟ้า", 1), ("แมว", 0),
                         ("นอนบนโซฟา", 0), ("ร้านกาแฟ", 3)]:
        assert [d for d, _ in index.search(query, 5)][:1] == [right], query
    assert index.language == "none"  # Thai has no stemmer: English's rules never read it
    # a tone mark or vowel sign stays with its consonant ("ที่" is one unit), so is a Khmer coeng's stacked consonant
    assert cjk_bigrams("ที่นี่", split=3).split() == ["ที่นี่"]
    assert cjk_bigrams("กิน", split=3).split() == ["กิน"]
    assert cjk_bigrams("ខ្មែរ", split=3).split() == ["ខ្មែរ"]
    assert cjk_bigrams("မြန်မာ", split=3).split() == ["မြန်", "န်မာ"]
    assert cjk_bigrams("ພາສາລາວ", split=3).split() == ["ພາ", "າສ", "ສາ", "າລ", "ລາ", "າວ"]
    assert cjk_bigrams("ที่นี่", split=2) == "ที่นี่"  # an index from before is split as it was built


def test_lao_khmer_and_myanmar_are_matched_by_their_bigrams_too():
    texts = ["ພາສາລາວມີຕົວອັກສອນ", "ខ្ញុំចូលចិត្តញ៉ាំបាយ", "မြန်မာနိုင်ငံ", "plain English text"]
    index = BM25Index.build(texts)
    assert [d for d, _ in index.search("ຕົວອັກສອນ", 4)][:1] == [0]
    assert [d for d, _ in index.search("ញ៉ាំបាយ", 4)][:1] == [1]
    assert [d for d, _ in index.search("နိုင်ငံ", 4)][:1] == [2]


def test_mixed_thai_and_english_keeps_the_english_words_whole():
    texts = ["ระบบใช้GPUเพื่อเร่งความเร็ว", "เราเก็บข้อมูลใน cache ของ server", "ร้านกาแฟนี้ขายขนมปังอร่อยมาก"]
    index = BM25Index.build(texts)
    words = index.analyzer.tokenize(texts, index._stem, return_ids=False)
    assert "gpu" in words[0] and {"cache", "server"} <= set(words[1])
    assert [d for d, _ in index.search("GPU", 3)] == [0]
    assert [d for d, _ in index.search("cache server", 3)] == [1]
    assert [d for d, _ in index.search("เร่งความเร็ว", 3)][:1] == [0]


def test_an_index_saved_before_thai_bigrams_is_queried_as_it_was_built(tmp_path):
    import bm25s

    from rag.bm25 import TOKENIZER_FILE, Analyzer
    old = Analyzer("none", None, None, cjk_bigrams=True, split=2)
    retriever = bm25s.BM25()
    retriever.index(old.tokenize(THAI, None), show_progress=False)
    BM25Index(retriever, len(THAI), analyzer=old).save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25", len(THAI))
    assert loaded.analyzer == old and '"split": 2' in (tmp_path / "bm25" / TOKENIZER_FILE).read_text()
    assert [d for d, _ in loaded.search("ความจำ", 5)] == []  # split as it was built: no bigrams of Thai
