"""Content words of a text, in any script, for the lexical signals (the lexical judge, premise pre-filtering, the
compact judge's lexical feature).

Plain ASCII text keeps exactly the tokens it always had: lowercase runs of ``[a-z0-9]`` with an optional decimal part
(``3.14``), English stopwords removed. Other text is NFKC-normalised (full-width forms, ligatures) and lowercased;
a token is then a run of letters, combining marks and digits of any script; scripts written without spaces between
words (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar, Tibetan) give one token per character (with its marks);
each emoji or other pictograph is a token of its own (skin-tone modifiers and joiners are dropped).

Before either, invisible characters (zero-width space and joiners, word joiner, soft hyphen, byte-order mark) are
dropped, so 'f\u200bp16' is the one word 'fp16', and a number grouped in thousands is written whole: '1,024' and
'1\u00a0024' (a no-break, narrow no-break, thin or figure space between groups) are the token '1024', as '1024' is.
Only strict groups count (see GROUPED): '1,2,4,8', '10,20,30' and '0,125' stay apart, '1,048,580' is '1048580'. A
plain space between digit groups ('128 000') is left alone here: it may as well separate two numbers ('rank 5 100
tokens'); the number reader (eval/judges/features.numbers) reads it both ways. A short negation is written out first
("isn't" is "is not", "can't" and "cannot" are "can not"): the word "not" is a token either way."""
from __future__ import annotations

import re
import unicodedata

import regex

_ASCII_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}"
# scripts a digit may touch and still be a number ('约占2 GB', '제3장'): the unspaced ones and Hangul, whose particles
# attach to the word before them
NUMBER_NEIGHBOURS = _UNSPACED + r"\p{Hangul}"
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
_GROUP_SPACES = "\u00a0\u202f\u2009\u2007"  # no-break, narrow no-break, thin and figure space
# a number grouped in thousands: a first group of 1 to 3 digits (not starting with 0), then groups of exactly 3 digits,
# all after one separator (a comma or one of _GROUP_SPACES), not glued to a word (a CJK character may touch), nor
# after a dot, a comma or a digit and group space, nor followed by a digit or the separator and a digit: '1,024',
# '128\u00a0000', '1,048,576'; not '1,2,4,8', '10,20,30', '0,125', '12,345,67', '2023\u00a0100'
GROUPED = regex.compile(rf"(?<![^\W{NUMBER_NEIGHBOURS}]|[.,])(?<!\d[{_GROUP_SPACES}])([1-9]\d{{0,2}})"
                        rf"((?P<sep>[,{_GROUP_SPACES}])\d{{3}}(?:(?P=sep)\d{{3}})*)(?!\d|(?P=sep)\d)")
_TOKEN = regex.compile(r"[\p{L}\p{M}\p{N}]+(?:\.\p{Nd}+)?|\p{Extended_Pictographic}")
_PIECES = regex.compile(rf"[{_UNSPACED}]\p{{M}}*|[^{_UNSPACED}]+")
STOPWORDS = frozenset(
    "a an the of to in on for and or is are was were be been it its this that with as by at from what which who how "
    "why when does do did can could should would may might than then there".split())


def _unicode_tokens(text: str) -> list[str]:
    out: list[str] = []
    for tok in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
        if tok.isascii():
            out.append(tok)
        else:
            out.extend(_PIECES.findall(tok))
    return out


def visible(text: str) -> str:
    """``text`` without invisible characters (zero-width space and joiners, word joiner, soft hyphen, BOM)."""
    return text.translate(_INVISIBLE)


def ungrouped(text: str) -> str:
    """``text`` with every number grouped in thousands written whole ('1,024' -> '1024'; see GROUPED)."""
    if "," not in text and text.isascii():
        return text
    return GROUPED.sub(lambda m: m.group(1) + m.group(2).translate(_SEPARATORS), text)


_SEPARATORS = dict.fromkeys(map(ord, "," + _GROUP_SPACES))


# a negation written short is the word "not" ("isn't" as "is not": a stopword and "not"; the tokens "isn" and "t"
# matched nothing in "is not"), and "cannot" is "can not"
_CONTRACTED = re.compile(r"\b(\w+?)n['\u2019]t\b|\b(can)not\b", re.IGNORECASE)
_STEMS = {"ca": "can", "wo": "will", "sha": "shall"}  # "can't", "won't", "shan't"


def _written_out(m: re.Match) -> str:
    stem = m.group(1) or m.group(2)
    return f"{_STEMS.get(stem.lower(), stem)} not"


def expanded(text: str) -> str:
    """``text`` with short negations written out ("isn't" -> "is not", "won't" -> "will not", "cannot" -> "can not")."""
    if "'" not in text and "\u2019" not in text and "annot" not in text.lower():
        return text
    return _CONTRACTED.sub(_written_out, text)


def content_tokens(text: str) -> list[str]:
    """The content words of ``text`` in order (see the module docstring)."""
    text = expanded(ungrouped(visible(text)))
    raw = _ASCII_TOKEN.findall(text.lower()) if text.isascii() else _unicode_tokens(text)
    return [t for t in raw if t not in STOPWORDS]


# --- which scripts a text is written in (for judges whose model reads only some) ---------------------------------
_LETTER = regex.compile(r"\p{L}")
_LATIN = regex.compile(r"\p{Latin}")
_PICTO = regex.compile(r"\p{Extended_Pictographic}")


def non_latin_share(text: str) -> float:
    """Share of the text's letters and pictographs that are not Latin script (0.0 for text without any)."""
    if text.isascii():
        return 0.0
    letters = len(_LETTER.findall(text))
    picto = len(_PICTO.findall(text))
    total = letters + picto
    return 0.0 if total == 0 else (total - len(_LATIN.findall(text))) / total


def main_script(text: str) -> str:
    """The most frequent script among the text's non-Latin letters (e.g. 'Han', 'Arabic'), or 'emoji'."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha() and not _LATIN.match(ch):
            name = unicodedata.name(ch, "UNKNOWN").split(" ")[0]
            script = {"CJK": "Han"}.get(name, name.title())
            counts[script] = counts.get(script, 0) + 1
    if not counts:
        return "emoji" if _PICTO.search(text) else "unknown"
    return max(counts, key=lambda k: counts[k])
