"""Cheap, explainable signals of whether a claim is supported by its evidence: pure functions, no models.

Each catches something word overlap misses or a small cross-encoder misreads, and each is a named feature of the
compact judge's combiner (eval/judges/nli.py), whose weight the model card reports:

  lexical_doc     share of the claim's content words found anywhere in the evidence (not just in one window)
  idf_doc         the same, each word weighted by its rarity (inverse document frequency): a missing name or term
                  counts more than a missing common word
  bigram_doc      share of the claim's adjacent content-word pairs found adjacent in the evidence: the same words in
                  another order or relation ("A outperforms B" against "B outperforms A") keep unigram overlap but
                  lose their pairs
  number_missing  share of the claim's numbers (digits, number words, percentages, years, dates) the evidence never
                  states, each read in its common writings (numbers(): '128 000' = '128,000' = '128K', '15.03.2023' =
                  'March 15, 2023')
  entity_missing  share of the claim's names (capitalised or mixed-case words, acronyms) the evidence never mentions
  negation_flip   the claim and its best window disagree in polarity (one negated, the other not)
"""
from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

import regex

from eval.judges.lexical import unigram_precision
from eval.tokens import NUMBER_NEIGHBOURS, content_tokens, ungrouped, visible

_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                      "ninety": "90", "hundred": "100", "thousand": "1000", "million": "1000000",
                      "billion": "1000000000", "half": "0.5", "twice": "2", "double": "2", "once": "1"})
# multipliers: a letter glued to a number ('1.5k', '128K', '$1.5M', '7B', '2bn', '1.2T'; 'm' only after a currency sign:
# '5m' is metres or minutes) or words after it ('1.5 million', 'two hundred'); a unit ('16GB', '128KB') is none
_SUFFIXES = {"k": 3, "K": 3, "m": 6, "M": 6, "b": 9, "B": 9, "bn": 9, "T": 12}
_MAGNITUDES = {"hundred": 2, "thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_MAG = "|".join(_MAGNITUDES)
_CURRENCY = "$€£¥"
_GAP = r"[ \t\u00a0\u202f\u2009]"
_GLUED = rf"[^\W{NUMBER_NEIGHBOURS}]"  # a word character other than a CJK one (digits may touch those: '约占2 GB')
_NUM = regex.compile(rf"""
    (?<!{_GLUED}|\.)                                    # not glued to a word ('g128', 'v4') nor after a dot
    (?P<sign>[-+])?
    (?:
        (?<!\d\ )(?P<spaced>[1-9]\d{{0,2}}(?:\ \d{{3}})+(?:\.\d+)?)(?!\d|\ \d)   # '128 000': 128000, or 128 and 0
      | (?<!\d,)(?P<comma>\d+,\d+)(?!\d|,\d)           # '0,5': the decimal 0.5, or 0 and 5 ('1,024' was written whole)
      | (?P<plain>\d+(?:\.\d+)*)
    )
    (?: (?P<suffix>(?i:bn)|[kKmMbBT])(?!{_GLUED})
      | (?P<words>(?:{_GAP}+(?i:{_MAG})s?\b)+) )?
    """, regex.VERBOSE)
_SIGNS = str.maketrans({"\u2212": "-", "\uff0d": "-", "\uff0e": "."} | {chr(0xFF10 + i): str(i) for i in range(10)})
_HAS_DIGIT = regex.compile(r"\d")
_LETTER_AFTER = regex.compile(r"[ \t\u00a0-]*([kKmMbBtT])")  # '64K', '64 KB', '64-bit', '7 billion': see _number
# dates: year, month and day in a common form, read as one fact 'YYYY-MM-DD'
_MONTHS = {name: i + 1 for i, names in enumerate(
    "jan january|feb february|mar march|apr april|may|jun june|jul july|aug august|sep sept september|oct october|"
    "nov november|dec december".split("|")) for name in names.split()}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH_NAME = regex.compile(rf"(?i:{_MONTH})")
_MAG_WORD = regex.compile(rf"(?i:{_MAG})")
_TH = "(?i:st|nd|rd|th)?"
_DATE = regex.compile(rf"""
      (?<!{_GLUED}|[.,/-])(?P<ymd>\d{{4}}(?P<s1>[-/.])\d{{1,2}}(?P=s1)\d{{1,2}})(?!\d|[-/.]\d)     # 2023-03-15
    | (?<!{_GLUED}|[.,/-])(?P<dmy>\d{{1,2}}(?P<s2>[-/.])\d{{1,2}}(?P=s2)\d{{4}})(?!\d|[-/.]\d)     # 15.03.2023, 3/15/2023
    | (?<!{_GLUED})(?P<mdy>(?i:{_MONTH})\.?{_GAP}+\d{{1,2}}{_TH},?{_GAP}+\d{{4}})(?!\d)            # March 15, 2023
    | (?<!{_GLUED}|[.,])(?P<dm_y>\d{{1,2}}{_TH}{_GAP}+(?i:of{_GAP}+)?(?i:{_MONTH})\.?,?{_GAP}+\d{{4}})(?!\d)  # 15 March 2023
    | (?<!\d)(?P<cjk>\d{{4}}\s*[年년]\s*\d{{1,2}}\s*[月월]\s*\d{{1,2}}\s*[日일])                  # 2023年3月15日
    """, regex.VERBOSE)
# a word before a number that makes "3.10" a version (not the decimal 3.1): a version word, a product whose versions
# are written so, or a name (an acronym or mixed case anywhere, a capitalised word inside a sentence)
_VERSION_WORDS = frozenset("version versions release releases ver rev revision python cuda cudnn node java ubuntu "
                           "debian fedora kernel linux macos ios android windows gcc clang llvm torch pytorch numpy"
                           .split())
_NUMBER_WORD_RUN = regex.compile(
    rf"(?<![^\W\d_])(?P<n>(?i:{'|'.join(sorted(_NUMBER_WORDS, key=len, reverse=True))}))(?![^\W\d_])"
    rf"(?P<mags>(?:{_GAP}+(?i:{_MAG})(?![^\W\d_]))*)")
_WORD_BEFORE = re.compile(r"([A-Za-z][\w+]*)[ \t]*$")
_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without|n't)\b|n't\b",
                       re.IGNORECASE)
_CAP = re.compile(r"\b(?:[A-Z][a-z]*[A-Z0-9][\w-]*|[A-Z]{2,}[\w-]*|[A-Z][a-z][\w'-]*|[a-z]+[A-Z][\w-]*)\b")
_FUNCTION = frozenset("the a an in on at it he she they we i you this that these those there its his her their but "
                      "and or if when while as after before yes no not my our your also however so what which who "
                      "how why where for from to of by with is are was were be".split())


def _version_before(text: str, at: int) -> bool:
    """The number at ``at`` follows a version word or a name (a capitalised word that does not open a sentence)."""
    head = text[max(0, at - 48) : at]  # a bounded look back: a long context is not rescanned per number
    m = _WORD_BEFORE.search(head)
    if not m:
        return False
    word = m.group(1)
    if word.lower() in _VERSION_WORDS:
        return True
    if word.isupper() or not word[0].isupper():  # an acronym or a unit ("BLEU 27.30", "MMLU 86.40", "pH 7.40"): a score
        return False
    if any(ch.isupper() for ch in word[1:]):  # a product name in mixed case ("PyTorch 2.10")
        return True
    before = head[: m.start()].rstrip()
    return bool(before) and before[-1] not in ".!?:;\n"


class NumberFact(NamedTuple):
    """One number a text states: ``shown`` names it when it is missing; it is stated wherever any of ``readings`` is
    (an ambiguous writing has two: '128 000' may be 128000 or the numbers 128 and 0, each part is stated by its own
    value or the whole's)."""

    shown: str
    readings: frozenset[str]


def _canonical(value: Decimal) -> str:
    return format(value.normalize(), "f") if value else "0"


def _date_readings(kind: str, raw: str) -> tuple[list[date], list[str]]:
    """The dates a match may mean (two for '03/04/2023', day first or month first) and its numbers as written."""
    nums = [int(x) for x in regex.findall(r"\d+", raw)]
    if kind in ("ymd", "cjk"):
        candidates = [(nums[0], nums[1], nums[2])]
    elif kind == "dmy":
        a, b, y = nums
        dotted = "." in raw  # 15.03.2023 is day first; only a day that cannot be one reads month first
        candidates = [(y, b, a), (y, a, b)]
        if dotted:
            candidates = [c for c in candidates if _valid(c)][:1]
    else:
        month = _MONTHS[_MONTH_NAME.search(raw).group(0).lower()]  # type: ignore[union-attr]
        day, year = nums
        candidates = [(year, month, day)]
    found = []
    for c in candidates:
        if _valid(c) and date(*c) not in found:
            found.append(date(*c))
    return found, [str(n) for n in nums]


def _valid(ymd: tuple[int, int, int]) -> bool:
    try:
        date(*ymd)
    except ValueError:
        return False
    return True


def _read(text: str, words: bool) -> tuple[dict[NumberFact, None], set[str]]:
    """The numbers ``text`` states, in order (see numbers), and the numbers written inside its dates (the year, and
    the day and month written in digits: stated, not facts of their own)."""
    facts: dict[NumberFact, None] = {}
    inside: set[str] = set()
    consumed: list[tuple[int, float]] = []  # spans of magnitude words read with their number, in order
    text = ungrouped(visible(text)).translate(_SIGNS)
    if _HAS_DIGIT.search(text):
        pieces, at = [], 0
        for m in _DATE.finditer(text):
            kind = m.lastgroup or ""
            found, written = _date_readings(kind, m.group(kind))
            if not found:
                continue  # no such day: read as numbers ('31.02.2023' as written, like a version)
            keys = frozenset(d.isoformat() for d in found)
            facts[NumberFact(found[0].isoformat() if len(found) == 1 else m.group(0), keys)] = None
            inside.update(written)
            pieces += [text[at : m.start()], " " * (m.end() - m.start())]
            at = m.end()
        text = "".join(pieces) + text[at:]
        for m in _NUM.finditer(text):
            found, also = _number(text, m)
            for fact in found:
                facts[fact] = None
            inside.update(also)
            if m.group("words"):
                consumed.append(m.span("words"))
    if words:
        for m in _NUMBER_WORD_RUN.finditer(text):
            k = bisect_right(consumed, (m.start(), math.inf)) - 1
            if k >= 0 and consumed[k][0] <= m.start() < consumed[k][1]:
                continue  # a magnitude read with the number before it ('1.5 million')
            value = _NUMBER_WORDS[m.group("n").lower()]
            exponent = sum(_MAGNITUDES[w.lower()] for w in _MAG_WORD.findall(m.group("mags")))
            key = _canonical(Decimal(value).scaleb(exponent))
            facts[NumberFact(key, frozenset([key]))] = None
    return facts, inside


def _number(text: str, m: regex.Match[str]) -> tuple[list[NumberFact], list[str]]:
    """The facts of one number match, and what else it states (see _magnitude)."""
    sign = "-" if m.group("sign") == "-" else ""
    exponent = 0
    suffix = m.group("suffix")
    if suffix and (suffix != "m" or text[max(0, m.start() - 1) : m.start()] in tuple(_CURRENCY)):
        exponent = _SUFFIXES.get(suffix, 9)  # 'bn' in any case
    if m.group("words"):
        exponent += sum(_MAGNITUDES[w.lower()] for w in _MAG_WORD.findall(m.group("words")))
    number = "plain" if m.group("plain") is not None else "spaced" if m.group("spaced") else "comma"
    letter = _LETTER_AFTER.match(text, m.end(number))  # the letter after the digits ('B' of '7B', 'b' of '7 billion')
    plain = m.group("plain")
    if plain is not None:
        if plain.count(".") >= 2 or (not exponent and re.search(r"\.\d+0$", plain)
                                     and _version_before(text, m.start())):
            return [NumberFact(sign + plain, frozenset([sign + plain]))], []
        return _magnitude(sign + plain, exponent, letter)
    spaced = m.group("spaced")
    parts = (spaced or m.group("comma")).replace(",", " ").split(" ")
    if spaced and exponent:  # '3 175B' (GPT-3 175B): two numbers, not the group 3175 billion
        facts, also = _magnitude(parts[-1], exponent, letter)
        return [_magnitude(sign + p, 0, None)[0][0] for p in parts[:-1]] + facts, also
    whole = Decimal(sign + ("".join(parts) if spaced else ".".join(parts)))
    values = [Decimal(p) for p in parts]
    values[0] = -values[0] if sign else values[0]
    values[-1] = values[-1].scaleb(exponent)
    alternative = _canonical(whole.scaleb(exponent))
    shown = m.group(0).strip()
    return [NumberFact(shown, frozenset([_canonical(v), alternative])) for v in values], []


def _magnitude(raw: str, exponent: int, letter: regex.Match[str] | None) -> tuple[list[NumberFact], list[str]]:
    """A number times 10**``exponent``. One with a magnitude also states its value without it and its written form
    ('64K' states 64 and '64k'), and any number before a letter states its written form ('64KB', '64 bytes', '7
    billion' state '64k', '64b', '7b'): a letter that abbreviates a unit ('64K' for 64 KB, '64B' for 64 bytes) still
    matches its unit, as the written form ('64k' in '64 KB') did before magnitudes were read."""
    try:
        bare = _canonical(Decimal(raw))
    except InvalidOperation:
        return [], []
    written = [f"{bare}{letter.group(1).lower()}"] if letter else []
    if not exponent:
        return [NumberFact(bare, frozenset([bare]))], written
    key = _canonical(Decimal(raw).scaleb(exponent))
    return [NumberFact(key, frozenset([key, *written]))], [bare, *written]


def number_facts(text: str, *, words: bool = True) -> list[NumberFact]:
    """The numbers a text states, each once, in order (see numbers; an ambiguous writing gives a fact per part)."""
    return list(_read(text, words)[0])


def numbers(text: str, *, words: bool = True) -> set[str]:
    """Numbers a text states, normalised exactly: '1,024' -> '1024', '2.50' -> '2.5' (a plain decimal: 3.50 and 3.5
    are one number), '1e3' is not one, 'twelve' -> '12' (``words``: number words too). Every digit counts:
    '1,048,580' and '1,048,576' are two numbers. A number with two or more dots (a version '2.1.0', an address
    '10.0.0.1') and a decimal written as a version ('Python 3.10', 'PyTorch 2.10', 'version 2.10': after a version word
    or a name, see _version_before; with a 0 closing two or more decimals, else it reads the same either way: 'CUDA
    12.0' is 12) are read as written, whole: 'Python 3.10' and 'Python 3.1' state two versions.

    Written other ways, a number reads the same:
      thousands   grouped by commas or by a no-break, narrow no-break, thin or figure space, in strict groups of three
                  ('1,024', '128\u00a0000' = '128000'; '1,2,4,8' and '10,20,30' are lists, see eval.tokens.GROUPED); by a
                  plain space ('128 000') both ways: the whole 128000, or 128 and 0 (it may be two numbers: 'rank 5
                  100 tokens'); only a 1-3 digit first group with 3-digit groups after it, so '2023 100' is 2023 and 100
      a comma     between digits that is no thousands group ('0,5', '2,25', '0,125'): both ways, the decimal 0.5 or the
                  numbers 0 and 5
      magnitudes  '1.5k' = '1,500', '128K' = '128000', '$1.5M' = '1.5 million' = '1500000', '7B' = '7 billion',
                  '2bn', '1.2T', 'two hundred' = 200; a unit is no magnitude ('16GB' is 16, '5m' is 5: 'm' is a
                  million only after a currency sign, '$5m'); '64K' also states 64 and matches '64 KB' (a letter may
                  abbreviate a unit: '64B' for 64 bytes; see _magnitude), while '128k' is not stated by '128'
      dates       one fact, year-month-day: '2023-03-15', '15.03.2023' (day first), 'March 15, 2023', '15 March
                  2023', '2023年3月15日' are '2023-03-15'; '03/04/2023' (day or month first) is either date; the year,
                  day and month written in digits are also stated ('in 2023' is)
      signs       a Unicode minus ('−3') is '-'; invisible characters (zero-width space, soft hyphen) are dropped
    Digits touching a CJK character are a number ('约占2 GB' states 2)."""
    return {k for k in stated(text, words=words) if not k[-1].isalpha()}


def stated(text: str, *, words: bool = True) -> set[str]:
    """Everything a claim's number is matched against (number_missing, key_facts.Stated): numbers() and the written
    forms of numbers before a magnitude or unit letter ('64k' of '64 KB', see _magnitude)."""
    facts, inside = _read(text, words)
    return inside.union(*(f.readings for f in facts))


def number_missing(claim: str, evidence: str) -> float:
    """Share of the claim's numbers that the evidence does not state (0 when the claim has none)."""
    c = number_facts(claim)
    if not c:
        return 0.0
    given = stated(evidence)
    return sum(1 for f in c if not f.readings & given) / len(c)


def names(text: str) -> set[str]:
    """Name-like words (lower-cased): capitalised words other than a sentence's first word, acronyms and mixed-case
    terms anywhere ('GPTQ', 'vLLM', 'H100'), minus function words."""
    out: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", visible(text)):
        for k, m in enumerate(_CAP.finditer(sentence)):
            word = m.group(0)
            first = m.start() == len(sentence) - len(sentence.lstrip())
            mixed = any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() for ch in word)
            if (first and not mixed) or word.lower() in _FUNCTION:
                continue
            out.add(word.lower())
    return out


def entity_missing(claim: str, evidence: str) -> float:
    """Share of the claim's names that occur nowhere in the evidence, case-insensitively (0 when it has none)."""
    c = names(claim)
    if not c:
        return 0.0
    low = visible(evidence).lower()
    return sum(1 for n in c if n not in low) / len(c)


def negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def negation_flip(claim: str, premise: str) -> float:
    return float(negated(claim) != negated(premise))


def lexical_doc(claim: str, evidence: str) -> float:
    """Share of the claim's content words found anywhere in the evidence: the lexical baseline's unigram precision."""
    return unigram_precision(evidence, claim)


def _bigrams(tokens: list[str]) -> list[tuple[str, str]]:
    return list(zip(tokens, tokens[1:]))


def bigram_doc(claim: str, evidence: str) -> float:
    """Share of the claim's content-word bigrams that occur in the evidence; a claim of fewer than two content words
    has no pairs and falls back to its unigram share (lexical_doc)."""
    c = _bigrams(content_tokens(claim))
    if not c:
        return lexical_doc(claim, evidence)
    e = set(_bigrams(content_tokens(evidence)))
    return sum(1 for b in c if b in e) / len(c)


def idf_weights(documents: Iterable[str], min_df: int = 3) -> dict[str, float]:
    """Smoothed IDF, log((1 + N) / (1 + df)) + 1, of every content word in at least ``min_df`` documents."""
    df: dict[str, int] = {}
    n = 0
    for doc in documents:
        n += 1
        for t in set(content_tokens(doc)):
            df[t] = df.get(t, 0) + 1
    return {t: round(math.log((1 + n) / (1 + d)) + 1, 3) for t, d in df.items() if d >= min_df}


def idf_doc(claim: str, evidence: str, idf: Mapping[str, float], unseen: float) -> float:
    """IDF-weighted share of the claim's content words found in the evidence; a word the table lacks is rare
    (weight ``unseen``, the table's largest)."""
    c = content_tokens(claim)
    if not c:
        return 0.0
    e = set(content_tokens(evidence))
    weights = [idf.get(t, unseen) for t in c]
    return sum(w for t, w in zip(c, weights) if t in e) / sum(weights)
