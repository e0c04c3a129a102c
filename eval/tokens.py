"""Content words of a text, in any script, for the lexical signals (the lexical judge, premise pre-filtering, the
compact judge's lexical feature).

Plain ASCII text keeps exactly the tokens it always had: lowercase runs of ``[a-z0-9]`` with an optional decimal part
(``3.14``), English stopwords removed. Other text is NFKC-normalised (full-width forms, ligatures) and lowercased;
a token is then a run of letters, combining marks and digits of any script; scripts written without spaces between
words (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar, Tibetan) give one token per character (with its marks);
each emoji or other pictograph is a token of its own (skin-tone modifiers and joiners are dropped)."""
from __future__ import annotations

import re
import unicodedata

import regex

_ASCII_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}"
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


def content_tokens(text: str) -> list[str]:
    """The content words of ``text`` in order (see the module docstring)."""
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
