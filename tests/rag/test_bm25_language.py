"""BM25 in the corpus's language (rag/bm25.py, rag/bm25_language.py): found at build (or set), its stemmer and
stopwords, never English's for another language; Chinese, Japanese, Korean as bigrams; saved with the index, and an
index saved before it read as it was built."""
import json
import re

import bm25s
import pytest
import Stemmer

from rag.bm25 import TOKENIZER_FILE, BM25Index, cjk_bigrams
from rag.bm25_language import SAMPLE_CHARS, SAMPLE_TEXTS, detect, sample

# per language: texts (a relevant one, a distractor full of the language's stopwords) and (query, the right text):
# each query words its question in other forms than its text does ("Ключ хранится" / "хранятся ключи")
CORPORA = {
    "german": (["Die Schlüssel und die Werte des Zwischenspeichers liegen im Arbeitsspeicher der Grafikkarte.",
                "Vektordatenbanken beantworten Anfragen nach den nächsten Nachbarn.",
                "Die Länge der Eingabe bestimmt die Kosten, die der Dienst berechnet, und die Dauer der Antwort.",
                "Das Sprachmodell erzeugt die Antwort Wort für Wort."],
               [("Wo liegt der Schlüssel des Zwischenspeichers?", 0),
                ("Welche Vektordatenbank beantwortet die Anfrage?", 1)]),
    "french": (["Le cache stocke chaque valeur et chaque clé dans la mémoire graphique.",
                "Une base vectorielle répond à la requête du plus proche voisin.",
                "Les questions sont longues et elles sont posées par les utilisateurs, les uns après les autres.",
                "Le modèle de langage génère la réponse mot par mot."],
               [("Où les valeurs sont-elles stockées ?", 0), ("Quelles bases répondent aux requêtes ?", 1)]),
    "spanish": (["La caché guarda cada clave y cada valor en la memoria gráfica.",
                 "Una base vectorial responde a la consulta del vecino más cercano.",
                 "Las preguntas son largas y los usuarios las hacen una tras otra, con las respuestas de los otros.",
                 "El modelo de lenguaje genera la respuesta palabra por palabra."],
                [("¿Dónde se guardan los valores y las claves?", 0), ("¿Qué bases responden a las consultas?", 1)]),
    "russian": (["Ключ хранится в кэше видеокарты.",
                 "Векторная база отвечает на запрос о ближайшем соседе.",
                 "Где это было, что это было и как это было, никто не знает.",
                 "Языковая модель порождает ответ слово за словом."],
                [("Где хранятся ключи?", 0), ("Какие векторные базы отвечают на запросы?", 1)]),
}
ENGLISH = ["The KV cache stores keys and values.", "FlashAttention tiles attention to save memory traffic.",
           "Ring all-reduce sends twice the gradient size.", "Caching keys speeds decoding."]
OLD_CJK = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]"  # the previous version's
CJK_TEXTS = ["大型语言模型的键值缓存随上下文长度线性增长。", "向量数据库使用近似最近邻搜索。", "多くの人々がキャッシュを使う。",
             "人の数は多い。", "키-값 캐시는 컨텍스트 길이에 비례하여 증가한다.", "벡터 데이터베이스는 최근접 이웃을 찾는다."]


def _top(index, query):
    return [d for d, _ in index.search(query, 4)]


@pytest.mark.parametrize("language", sorted(CORPORA))
def test_a_query_finds_its_text_in_the_corpus_language(language):
    texts, queries = CORPORA[language]
    index = BM25Index.build(texts)
    for query, right in queries:
        assert _top(index, query)[0] == right, query
    assert index.language == language


@pytest.mark.parametrize("language", sorted(CORPORA))
def test_read_as_english_as_every_corpus_was_before_one_of_its_queries_ranks_a_wrong_text_first(language):
    """English stemming misses the other forms of a word, and the language's stopwords ("die", "les", "las", "где")
    are words to it: the distractor that is full of them comes first."""
    texts, queries = CORPORA[language]
    english = BM25Index.build(texts, language="english")
    assert any(_top(english, query)[:1] != [right] for query, right in queries)


def _bigrams_before(text):
    """rag.bm25.cjk_bigrams as the previous version had it (Chinese and Japanese only)."""
    return re.sub(f"{OLD_CJK}+", lambda m: " " + " ".join(m[0][i:i + 2] for i in range(len(m[0]) - 1)) + " "
                  if len(m[0]) > 1 else f" {m[0]} ", text)


def test_english_is_read_as_before_to_the_bit():
    """The previous version's tokenisation, by hand: English stopwords and stemmer, bm25s's words, CJK bigrams."""
    texts = ENGLISH + ["keys keys keys cache", "filler words about something else entirely " * 5, "KV 键值缓存 日"]
    index = BM25Index.build(texts)
    old = bm25s.BM25(k1=0.9, b=0.4)
    stem = Stemmer.Stemmer("english")
    pattern = r"(?u)\b\w\w+\b|" + OLD_CJK
    old.index(bm25s.tokenize([_bigrams_before(t) for t in texts], stopwords="en", stemmer=stem, token_pattern=pattern,
                             show_progress=False), show_progress=False)
    for query in ("How are keys cached?", "gradient ring", "attention traffic", "键值", "日", "keys"):
        toks = bm25s.tokenize([_bigrams_before(query)], stopwords="en", stemmer=stem, token_pattern=pattern,
                              return_ids=False, show_progress=False)[0]
        docs, scores = old.retrieve([[t for t in toks if t in old.vocab_dict]], k=len(texts), show_progress=False)
        expected = sorted(((int(d), float(s)) for d, s in zip(docs[0], scores[0]) if s > 0),
                          key=lambda h: (-h[1], h[0]))
        assert index.search(query, len(texts)) == expected, query


def test_chinese_japanese_and_korean_are_read_as_bigrams_without_a_stemmer():
    index = BM25Index.build(CJK_TEXTS)
    assert _top(index, "键值缓存") == [0] and _top(index, "最近邻") == [1]
    assert _top(index, "人々") == [2]  # Japanese's iteration mark is part of the word (before: "人" alone)
    assert _top(index, "캐시") == [4]  # inside "캐시는": Korean words carry their particles
    assert _top(index, "데이터베이스") == [5]
    assert index.language == "none"  # no word of another script to stem
    assert cjk_bigrams("캐시는", split=1) == "캐시는" and cjk_bigrams("캐시는").split() == ["캐시", "시는"]


def test_scripts_with_combining_vowel_signs_keep_their_words_whole():
    """Python's \\w leaves out Devanagari's vowel signs: "डेटाबेस" was cut into letters, and no word was left."""
    texts = ["बड़े भाषा मॉडल का कैश संदर्भ की लंबाई के साथ बढ़ता है।", "वेक्टर डेटाबेस निकटतम पड़ोसी खोज का उपयोग करता है।",
             "भाषा मॉडल उत्तर लिखता है।"]
    index = BM25Index.build(texts)
    assert _top(index, "डेटाबेस") == [1] and _top(index, "कैश") == [0]
    assert index.language == "hindi"


@pytest.mark.parametrize(("texts", "language"), [
    (CORPORA["german"][0], "german"), (CORPORA["french"][0], "french"), (CORPORA["spanish"][0], "spanish"),
    (CORPORA["russian"][0], "russian"), (ENGLISH, "english"), (CJK_TEXTS, "none"),
    (["La cache chiave-valore di un grande modello linguistico cresce in modo lineare con la lunghezza del contesto.",
      "Un database vettoriale risponde alle richieste dei vicini più prossimi."], "italian"),
    (["O cache de chaves e valores de um grande modelo de linguagem cresce de forma linear com o comprimento do "
      "contexto.", "Um banco de dados vetorial responde às consultas de vizinhos mais próximos."], "portuguese"),
    (["De sleutel-waardecache van een groot taalmodel groeit lineair met de lengte van de context."], "dutch"),
    (["Pamięć podręczna kluczy i wartości dużego modelu językowego rośnie liniowo wraz z długością kontekstu.",
      "Wektorowa baza danych odpowiada na zapytania o najbliższych sąsiadów."], "polish"),
    (["Suuren kielimallin välimuisti kasvaa lineaarisesti kontekstin pituuden mukaan.",
      "Vektoritietokanta vastaa lähimpien naapureiden kyselyihin, ja se on nopea."], "finnish"),
    (["Кеш ключів і значень великої мовної моделі зростає лінійно з довжиною контексту."], "none"),  # Ukrainian
    (["Кеш кључева и вредности великог језичког модела расте линеарно са дужином контекста."], "serbian"),
    (["Η κρυφή μνήμη κλειδιών ενός μεγάλου γλωσσικού μοντέλου μεγαλώνει με το μήκος του πλαισίου."], "greek"),
    (["تنمو ذاكرة التخزين المؤقت للمفاتيح والقيم في النموذج اللغوي الكبير خطيا مع طول السياق."], "arabic"),
    (["حافظه پنهان کلید و مقدار در یک مدل زبانی بزرگ به صورت خطی با طول متن رشد می کند."], "persian"),
    (["Bộ nhớ đệm khóa giá trị tăng tuyến tính theo độ dài ngữ cảnh."], "none"),  # Vietnamese: no stemmer
    (["KV cache", "FlashAttention kernels", "ring all-reduce"], "english"),  # no evidence, plain ASCII: as before
    (["Schlüsselwert-Zwischenspeicher", "Größenänderung"], "none"),  # no evidence, accented: not English
    (["12345 67890", "!!!"], "none"),
])
def test_the_dominant_language_is_detected(texts, language):
    assert detect(texts) == language


def test_a_mixed_corpus_is_read_in_its_majority_language_whatever_the_order():
    german, queries = CORPORA["german"]
    texts = german + ["The key-value cache of a large language model grows with the context."]
    for order in (texts, texts[::-1]):
        assert detect(order) == "german"
    index = BM25Index.build(texts)
    assert _top(index, queries[1][0])[0] == 1 and _top(index, "What makes the cache grow?")[0] == 4
    assert index.language == "german"
    # equal function-word counts: the earlier language of rag/bm25_language.FUNCTION_WORDS, English first
    assert detect(["the and of keys", "der und die Schlüssel"]) == detect(["der und die Schlüssel", "the and of keys"]) \
        == "english"


def test_a_large_corpus_is_detected_from_an_evenly_spaced_sample():
    texts = [f"{i} " + "x" * (3 * SAMPLE_CHARS) for i in range(5 * SAMPLE_TEXTS)]
    picked = sample(texts)
    assert len(picked) == SAMPLE_TEXTS and all(len(t) == SAMPLE_CHARS for t in picked)
    assert picked[0].startswith("0 ") and picked[1].startswith("5 ") and picked[-1].startswith(f"{5 * SAMPLE_TEXTS - 5} ")


def test_the_language_can_be_set():
    texts = ["Die Häuser der Stadt sind alt.", "Das Auto ist neu."]
    assert _top(BM25Index.build(texts, language="german"), "Haus") == [0]
    assert _top(BM25Index.build(texts, language="none"), "Haus") == []  # no stemming
    assert _top(BM25Index.build(texts, language="none"), "häuser") == [0]
    assert BM25Index.build(["the of a"], language="none") is not None  # no stopwords either
    with pytest.raises(ValueError, match="'klingon'.*'auto', 'none' or a Snowball language"):
        BM25Index.build(texts, language="klingon")


def test_save_and_load_keep_the_language(tmp_path):
    texts, queries = CORPORA["german"]
    index = BM25Index.build(texts)
    index.save(tmp_path / "bm25")
    saved = json.loads((tmp_path / "bm25" / TOKENIZER_FILE).read_text())
    assert saved == {"language": "german", "stemmer": "german", "stopwords": "de", "cjk_bigrams": True, "split": 3}
    again = BM25Index.load(tmp_path / "bm25", len(texts))
    assert again.analyzer == index.analyzer
    for query, _ in queries + [("Häuser Anfragen", 1)]:
        assert again.search(query, 4) == index.search(query, 4)


def test_an_index_saved_before_languages_is_queried_as_it_was_built(tmp_path):
    """Its tokenizer file names CJK bigrams alone: English stemmer and stopwords, Hangul not in bigrams, as then."""
    texts = ["Die Anfragen beantwortet der Dienst.", "Der Zwischenspeicher der Grafikkarte.", "캐시는 크다"]
    pattern = r"(?u)\b\w\w+\b|" + OLD_CJK
    old = bm25s.BM25(k1=0.9, b=0.4)
    old.index(bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), token_pattern=pattern,
                             show_progress=False), show_progress=False)
    old.save(str(tmp_path / "bm25"), show_progress=False)
    (tmp_path / "bm25" / TOKENIZER_FILE).write_text(json.dumps({"cjk_bigrams": True}) + "\n")
    loaded = BM25Index.load(tmp_path / "bm25", 3)
    assert (loaded.language, loaded.cjk, loaded.analyzer.split) == ("english", True, 1)
    assert _top(loaded, "Anfragen") == [0] and _top(loaded, "Anfrage") == []  # English stemming, as built
    assert _top(loaded, "die Grafikkarte") == [1, 0]  # "die" a word: not a German stopword to it
    assert _top(loaded, "캐시는") == [2] and _top(loaded, "캐시") == []  # a Korean word whole, as built
    assert _top(BM25Index.build(texts), "Anfrage") == [0]  # built now: German


def test_the_index_config_sets_the_language_and_a_change_rebuilds_bm25_alone(tmp_path):
    from pydantic import ValidationError

    from corpora.records import Document
    from rag.config import ChunkingConfig, IndexConfig
    from rag.embeddings import FakeEmbedder
    from rag.store import ensure_index

    texts, queries = CORPORA["german"]
    docs = [Document(id=f"d{i}", title="", text=t) for i, t in enumerate(texts)]
    chunking = ChunkingConfig(chunk_size=64, chunk_overlap=8)
    store, _ = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=chunking, index_cfg=IndexConfig())
    assert store.bm25.language == "german"
    store, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=chunking,
                                index_cfg=IndexConfig(bm25_language="none"))
    assert built and set(store.build_seconds) == {"bm25"} and store.bm25.language == "none"
    assert IndexConfig().hash_fields() == IndexConfig(bm25_language="auto").hash_fields()
    assert "bm25_language" not in IndexConfig().hash_fields()
    with pytest.raises(ValidationError, match="Snowball language"):
        IndexConfig(bm25_language="klingon")


def test_an_index_whose_bm25_predates_languages_or_the_configured_one_gets_its_bm25_rebuilt_alone(tmp_path):
    """An index built before languages read German as English (its tokenizer file names only CJK bigrams, its manifest
    no language) whatever the config said: its BM25 part is now rebuilt as one built today would be, nothing
    re-embedded, and a language set in the config is the one its BM25 then reads; an unchanged config loads it."""
    from corpora.digest import sha256_file
    from corpora.records import Document
    from rag.config import ChunkingConfig, IndexConfig
    from rag.embeddings import FakeEmbedder
    from rag.store import ensure_index

    class NoEmbedding(FakeEmbedder):
        def embed(self, texts):
            raise AssertionError("a BM25 change must not re-embed the corpus")

    texts, _ = CORPORA["german"]
    docs = [Document(id=f"d{i}", title="", text=t) for i, t in enumerate(texts)]
    folder = tmp_path / "i"

    def ensure(language):
        return ensure_index(docs, folder, NoEmbedding(), chunking=ChunkingConfig(chunk_size=64, chunk_overlap=8),
                            index_cfg=IndexConfig(bm25_language=language))

    ensure_index(docs, folder, FakeEmbedder(), chunking=ChunkingConfig(chunk_size=64, chunk_overlap=8),
                 index_cfg=IndexConfig())
    chunks = [json.loads(line)["text"] for line in (folder / "chunks.jsonl").read_text().splitlines()]
    old = bm25s.BM25(k1=0.9, b=0.4)  # as that version built it: English, split 1
    old.index(bm25s.tokenize(chunks, stopwords="en", stemmer=Stemmer.Stemmer("english"),
                             token_pattern=r"(?u)\b\w\w+\b|" + OLD_CJK, show_progress=False), show_progress=False)
    for p in (folder / "bm25").iterdir():
        p.unlink()
    old.save(str(folder / "bm25"), show_progress=False)
    (folder / "bm25" / TOKENIZER_FILE).write_text(json.dumps({"cjk_bigrams": True}) + "\n")
    raw = json.loads((folder / "manifest.json").read_text())
    raw["index"].pop("bm25_language")
    raw["files"] = {k: v for k, v in raw["files"].items() if not k.startswith("bm25/")} | {
        f"bm25/{p.name}": {"bytes": p.stat().st_size, "sha256": sha256_file(p)} for p in (folder / "bm25").iterdir()}
    (folder / "manifest.json").write_text(json.dumps(raw))

    store, built = ensure("auto")
    assert built and set(store.build_seconds) == {"bm25"} and store.bm25.language == "german"
    assert _top(store.bm25, "Anfrage") == [1]  # German stemming: "Anfragen" found
    assert ensure("auto")[1] is False  # current now: loaded as it is
    for language in ("english", "none", "german", "auto"):  # each change of the configured language is seen
        store, built = ensure(language)
        assert built and store.bm25.language == ("german" if language == "auto" else language), language
        assert ensure(language)[1] is False
