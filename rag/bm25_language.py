"""The language BM25 reads a corpus in (rag/bm25.py): its Snowball stemmer and stopword list, found once at index
build from an evenly spaced sample of the texts, or set by the caller.

The dominant script is the one with the most letters (Chinese, Japanese and Korean aside: those are split into
character bigrams whatever the language; Thai, Lao, Khmer and Myanmar, split so too, count as scripts without a
stemmer, so a corpus mostly in them is read with none, never with English's rules). In it the language is the one
whose function words ("the", "und", "и", "है") are most frequent, when they are at least ``MIN_SHARE`` of its words;
else the script's own rule (Cyrillic by the letters of each language, Arabic script likewise, Greek, Armenian and
Tamil are one language each), and Latin text without that evidence (titles, keywords, code) is read as English, as
every corpus was before, unless more than ``MAX_ACCENTED`` of its letters carry accents: then it has no stemmer. A
corpus in several languages is read in the one with the most function words (its majority); equal counts go to the
earlier language of ``FUNCTION_WORDS`` (English first), so the choice never depends on anything but the texts."""
from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import cache

import regex
import Stemmer
from bm25s import stopwords as sw

from corpora.scripts import script_of

AUTO, NONE = "auto", "none"
MIN_SHARE = 0.1  # function words among a script's words that name its language (prose has 25-50 %; see the tests)
MAX_ACCENTED = 0.01  # accented letters of Latin text beyond which it is not taken for English without evidence
SAMPLE_TEXTS, SAMPLE_CHARS = 1000, 2000  # at most this many texts, evenly spaced, each read to this length

# bm25s's stopword list for each language that has one (the stopwords removed; English keeps its short Lucene list)
STOPWORD_LISTS = {"english": "en", "german": "de", "dutch": "nl", "french": "fr", "spanish": "es", "portuguese": "pt",
                  "italian": "it", "russian": "ru", "swedish": "sv", "norwegian": "no", "danish": "da",
                  "turkish": "tr", "porter": "en", "dutch_porter": "nl"}

# Function words that tell languages of one script apart (detection only): bm25s's lists where it has one (NLTK's;
# English's longer one), a few of the commonest otherwise. A language without a Snowball stemmer reads unstemmed.
_LISTED = {"english": sw.STOPWORDS_EN_PLUS, "german": sw.STOPWORDS_GERMAN, "french": sw.STOPWORDS_FRENCH,
           "spanish": sw.STOPWORDS_SPANISH, "portuguese": sw.STOPWORDS_PORTUGUESE, "italian": sw.STOPWORDS_ITALIAN,
           "dutch": sw.STOPWORDS_DUTCH, "swedish": sw.STOPWORDS_SWEDISH, "norwegian": sw.STOPWORDS_NORWEGIAN,
           "danish": sw.STOPWORDS_DANISH, "turkish": sw.STOPWORDS_TURKISH}
_FEW = {
    "Latin": {
        "finnish": "ja on ei että se oli ovat kuin mutta tai myös joka jos niin sen tämä kun hän ole olla vain sekä",
        "hungarian": "az és hogy nem is egy van meg ez csak mint már vagy volt még azt el ki ha kell lesz pedig ezt "
                     "amely között után",
        "polish": "i w z na nie się do to że jest jak ale po co tak za od są przez dla oraz lub który która które "
                  "jego ich czy tylko",
        "czech": "a v se na je že s z do to i k ve pro jako by ale jsou které který která po od nebo také jeho jen "
                 "při až",
        "romanian": "și şi în de la cu pe nu din că o un este sau care mai pentru ce se sunt al ale lui fost prin "
                    "dar această acest",
        "indonesian": "yang dan di ini itu dengan untuk dari tidak dalam ke akan pada adalah juga atau ada oleh bisa "
                      "dapat karena sebagai telah sudah mereka kami saya",
        "catalan": "i de la el que a en els les per amb és del un una no es al als com més però aquest aquesta seu "
                   "seva hi ha són",
        "serbian": "i je u se na da su za od sa ne koji koja koje što šta kao iz ili to ali bi biti nije bio jer već "
                   "samo može",
        "basque": "eta da ez du bat ere dira zen edo baina hori beste izan dute zuen bere baino oso egin behar",
        "lithuanian": "ir yra kad su o bet iš į tai jis ji buvo kaip apie nuo per dėl arba ar taip jo jų būti",
        "estonian": "ja on ei et see oli ka kui mis aga ning või seda mida oma siis veel nii kes olla",
        "irish": "agus ar ag le go do sé sí bhí ach ní níl seo sin tá mar nó chun leis ó faoi",
        "esperanto": "la kaj de en estas al ke por kun ne mi vi li ŝi ĝi ni ili sed aŭ tiu kiu pri el sia",
        "swahili": "na ya wa za kwa ni katika kuwa hiyo hii yake cha kama lakini pia au vya huo sana",
        "tagalog": "ang ng sa na mga at ay ko ito hindi siya para niya kung lang din rin pa may kay",
    },
    "Devanagari": {
        "hindi": "है हैं के की में और का को से यह था पर भी नहीं",
        "nepali": "छ छन् र को मा हो पनि यो गर्न थियो भएको छैन",
        "marathi": "आहे आणि या व हे आहेत ते होते नाही",
    },
}
FUNCTION_WORDS: dict[str, dict[str, frozenset[str]]] = {
    "Latin": {lang: frozenset(words) for lang, words in _LISTED.items()}
    | {lang: frozenset(words.split()) for lang, words in _FEW["Latin"].items()},
    "Devanagari": {lang: frozenset(words.split()) for lang, words in _FEW["Devanagari"].items()},
}
_SPEAKERS = {script: {w: tuple(lang for lang, fw in table.items() if w in fw) for w in set().union(*table.values())}
             for script, table in FUNCTION_WORDS.items()}  # a function word -> the languages it is one of
_ONE_LANGUAGE = {"Greek": "greek", "Armenian": "armenian", "Tamil": "tamil"}  # a script that is one stemmer's

# Cyrillic: Russian has ы and э; the letters of the other Cyrillic languages are not Russian's (Serbian's are its own)
_RUSSIAN, _SERBIAN = set("ыэ"), set("ђћјљњџ")
_NOT_RUSSIAN = set("іїєґўђћјљњџѓќѕәғқңөұүһҗӣӯҳҷӏ")
# Arabic script: Persian's letters beyond Arabic's 28; any others (Urdu, Pashto, Kurdish, Uyghur, ...) have no stemmer
_ARABIC = {chr(c) for c in range(0x0621, 0x064B)}
_PERSIAN = set("\u067e\u0686\u0698\u06af\u06a9\u06cc")  # پ چ ژ گ and Persian's own kaf and yeh

_WORD = regex.compile(r"\p{L}[\p{L}\p{M}]*")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]+")


def stemmers() -> list[str]:
    """The Snowball languages PyStemmer has (``language`` may be any of them, or "none" or "auto")."""
    return list(Stemmer.algorithms())


def check_language(language: str) -> str:
    """``language`` as given, or a ValueError that lists the choices."""
    if language not in (AUTO, NONE, *stemmers()):
        raise ValueError(f"BM25 language {language!r}: use 'auto', 'none' or a Snowball language "
                         f"({', '.join(stemmers())})")
    return language


def sample(texts: Sequence[str]) -> list[str]:
    """At most SAMPLE_TEXTS of the texts, evenly spaced from the first, each cut at SAMPLE_CHARS."""
    n = len(texts)
    m = min(n, SAMPLE_TEXTS)
    return [texts[i * n // m][:SAMPLE_CHARS] for i in range(m)]


@cache
def _script(ch: str) -> str:
    return script_of(ch)


def detect(texts: Sequence[str]) -> str:
    """The Snowball language of the texts' dominant language, or "none" (see the module's docstring)."""
    words: Counter[str] = Counter()
    for text in sample(texts):
        words.update(_WORD.findall(_CJK.sub(" ", text.lower())))
    by_script: dict[str, Counter[str]] = {}
    letters: Counter[str] = Counter()
    for word, count in words.items():
        script = _script(word[0])
        by_script.setdefault(script, Counter())[word] = count
        letters[script] += len(word) * count
    if not letters:  # no word outside Chinese, Japanese and Korean (or none at all): nothing to stem
        return NONE
    script = max(sorted(letters), key=lambda s: letters[s])  # equal counts: the first name in alphabetical order
    return _language(script, by_script[script])


def _language(script: str, words: Counter[str]) -> str:
    total = sum(words.values())
    hits = dict.fromkeys(FUNCTION_WORDS.get(script, {}), 0)
    speakers = _SPEAKERS.get(script, {})
    for word, count in words.items():
        for lang in speakers.get(word, ()):
            hits[lang] += count
    if hits:
        best = max(hits, key=lambda lang: hits[lang])  # the first of equals in table order
        if hits[best] >= MIN_SHARE * total:
            return best if best in stemmers() else NONE
    chars: Counter[str] = Counter()
    for word, count in words.items():
        for ch in word:
            if unicodedata.category(ch).startswith("L"):
                chars[ch] += count
    n = sum(chars.values())

    def share(letters: set[str]) -> float:
        return sum(chars[c] for c in letters) / n

    if script == "Latin":
        return "english" if share({c for c in chars if not c.isascii()}) <= MAX_ACCENTED else NONE
    if script == "Cyrillic":
        if share(_SERBIAN) >= 0.005 and share(set("ѓќѕ")) == 0:  # ѓ ќ ѕ: Macedonian
            return "serbian"
        return "russian" if share(_RUSSIAN) >= 0.005 and share(_NOT_RUSSIAN) < 0.001 else NONE
    if script == "Arabic":
        other = share({c for c in chars if c not in _ARABIC and c not in _PERSIAN})
        if other >= 0.005:
            return NONE
        return "persian" if share(_PERSIAN) >= 0.005 else "arabic"
    return _ONE_LANGUAGE.get(script, NONE)
