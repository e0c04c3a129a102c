"""Which scripts a text is written in, for models that read only some (the judges: eval/judges/scripts.py; the
guardrails' topic rail: rag/guardrails/topic.py). The bundled MiniLM reads Latin-script (English) text: a text more
than ``MAX_FOREIGN`` of whose letters and pictographs are in other scripts, or are emoji, gets scores that mean
nothing from it."""
from __future__ import annotations

import unicodedata

import regex

MAX_FOREIGN = 0.2

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


def script_of(letter: str) -> str:
    """The script of a letter: 'Latin', or as its Unicode name begins ('Cyrillic', 'Greek', 'Han', 'Hiragana', ...)."""
    if _LATIN.match(letter):
        return "Latin"
    name = unicodedata.name(letter, "UNKNOWN").split(" ")[0]
    return {"CJK": "Han"}.get(name, name.title())


def main_script(text: str) -> str:
    """The most frequent script among the text's non-Latin letters (e.g. 'Han', 'Arabic'), or 'emoji'."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha() and (script := script_of(ch)) != "Latin":
            counts[script] = counts.get(script, 0) + 1
    if not counts:
        return "emoji" if _PICTO.search(text) else "unknown"
    return max(counts, key=lambda k: counts[k])
