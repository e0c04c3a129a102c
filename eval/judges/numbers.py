"""The numbers a text states, each read in its common writings, so that a claim's number can be checked exactly against
evidence (eval/judges/features.number_missing, eval/metrics/key_facts): thousands groupings, number words, magnitudes,
data sizes and durations as quantities, clock times, dates and versions (``numbers`` says how each is read). Pure
functions, no models."""
from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

import regex

from eval.tokens import NUMBER_NEIGHBOURS, ungrouped, visible

_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                      "ninety": "90", "hundred": "100", "thousand": "1000", "million": "1000000",
                      "billion": "1000000000", "half": "0.5", "twice": "2", "double": "2", "once": "1",
                      # the way English often says a count ('on a single node' is 'on one node')
                      "a single": "1", "one single": "1", "a dozen": "12", "half a dozen": "6",
                      # a fraction or a multiple said as a verb or a noun ('halves the memory' is 'cuts it by 50%')
                      "halve": "0.5", "halves": "0.5", "halved": "0.5", "halving": "0.5", "a quarter": "0.25",
                      "doubles": "2", "doubled": "2", "doubling": "2", "triple": "3", "triples": "3", "tripled": "3"})


def _word_value(raw: str) -> Decimal:
    """The value of a number word as written ('Twenty', 'a  single')."""
    return Decimal(_NUMBER_WORDS[" ".join(raw.lower().split())])


def _alternatives(words: Iterable[str]) -> str:
    """A regex alternation of number words, longest first, a phrase's words apart by any white space."""
    return "|".join(w.replace(" ", r"\s+") for w in sorted(words, key=len, reverse=True))

# multipliers: a letter glued to a number ('1.5k', '128K', '$1.5M', '7B', '2bn', '1.2T'; 'm' only after a currency sign:
# '5m' is metres or minutes) or words after it ('1.5 million', 'two hundred'); a unit ('16GB', '128KB') is none
_SUFFIXES = {"k": 3, "K": 3, "m": 6, "M": 6, "b": 9, "B": 9, "bn": 9, "T": 12}
# ... and the unit such a letter may abbreviate ('64K' for 64 KB, '7B' for 7 bytes, '1.5M' for 1.5 MB): its bytes
_SUFFIX_BYTES = {"k": 1, "K": 1, "M": 2, "B": 0, "T": 4}


def _unit_table() -> dict[str, tuple[str, tuple[Decimal, ...]]]:
    """Units a number is compared in (see numbers()): a written unit -> its dimension and its factors to the base
    unit (bytes 'B', bits 'bit', seconds 's'); a decimal prefix (KB, MB, GB) has two factors, 1000**n and 1024**n,
    as both are written."""
    table: dict[str, tuple[str, tuple[Decimal, ...]]] = {}
    for n, (p, word, binary) in enumerate((("k", "kilo", "kibi"), ("m", "mega", "mebi"), ("g", "giga", "gibi"),
                                          ("t", "tera", "tebi"), ("p", "peta", "pebi")), start=1):
        both, bin_ = (Decimal(1000) ** n, Decimal(1024) ** n), (Decimal(1024) ** n,)
        P = p.upper()
        for key in (f"{P}B", f"{word}byte", f"{word}bytes"):
            table[key] = ("B", both)
        for key in (f"{P}iB", f"{binary}byte", f"{binary}bytes"):
            table[key] = ("B", bin_)
        for key in (f"{P}byte", f"{P}bytes", f"{P}Bs"):  # 'Mbytes', 'KByte', 'kbyte' (any case: a word), 'GBs'
            table[key] = ("B", both)
        for key in (f"{P}bit", f"{p}bit", f"{P}bits", f"{p}bits", f"{word}bit", f"{word}bits"):
            table[key] = ("bit", both)
        table[f"{p}b"] = table[f"{P}b"] = ("B|bit", both)  # 'kb', 'Gb': bits by the standard, bytes as often
    table["kB"] = table["KB"]  # the SI symbol
    # informal and French writings of a decimal prefix's bytes, read both ways as KB, MB, GB are: 'megs', 'gigs'
    # ('64 Megs', '2 gigs', '1 gig'; only about data, see _about_data: 'played 2 gigs' is none), French octets
    # ('64 Mo' = 64 MB, '2 Go', '1 To', '512 ko', 'kilooctets'); only
    # right after a number (see _NUM): the word 'To' or the language 'Go' elsewhere is no unit; not 'mo' (months),
    # 'go', 'to', 'Mio' (German for millions)
    for key, P in (("meg", "M"), ("megs", "M"), ("Meg", "M"), ("MEG", "M"), ("gig", "G"), ("gigs", "G"),
                   ("Gig", "G"), ("GIG", "G"), ("Ko", "K"), ("ko", "K"), ("Mo", "M"), ("Go", "G"), ("To", "T"),
                   ("kilooctets", "K"), ("megaoctets", "M"), ("m\u00e9gaoctets", "M"), ("gigaoctets", "G"),
                   ("teraoctets", "T"), ("t\u00e9raoctets", "T")):
        table[key] = table[f"{P}B"]
    table.update({"B": ("B", (Decimal(1),)), "byte": ("B", (Decimal(1),)), "bytes": ("B", (Decimal(1),)),
                  "bit": ("bit", (Decimal(1),)), "bits": ("bit", (Decimal(1),)), "octet": ("B", (Decimal(1),)),
                  "octets": ("B", (Decimal(1),))})
    seconds = {"ns": "1e-9", "\u00b5s": "1e-6", "\u03bcs": "1e-6", "ms": "1e-3", "msec": "1e-3", "s": "1", "sec": "1",
               "secs": "1", "second": "1", "seconds": "1", "min": "60", "mins": "60", "minute": "60", "minutes": "60",
               "millisecond": "1e-3", "milliseconds": "1e-3", "microsecond": "1e-6", "microseconds": "1e-6",
               "nanosecond": "1e-9", "nanoseconds": "1e-9", "h": "3600", "hr": "3600", "hrs": "3600", "hour": "3600",
               "hours": "3600", "day": "86400",
               "days": "86400", "week": "604800", "weeks": "604800"}
    table.update({k: ("s", (Decimal(v),)) for k, v in seconds.items()})
    # frequencies and compute rates, with a decimal prefix ('1.5 GHz' = '1500 MHz', '989 TFLOPS' = '0.989 PFLOPS')
    for n, (P, word) in enumerate((("", ""), ("k", "kilo"), ("M", "mega"), ("G", "giga"), ("T", "tera"), ("P", "peta"),
                                   ("E", "exa"))):
        factor = (Decimal(1000) ** n,)
        for key in (f"{P}Hz", f"{word}hertz"):
            table[key] = ("Hz", factor)
        for key in (f"{P.upper()}FLOPS", f"{P.upper()}FLOPs", f"{P.upper()}flops"):
            table[key] = ("FLOPS", factor)
    # short duration words capitalised or in capitals ('90 Min', '1.5 HRS'; longer words are read in any case); not
    # 'SEC', 'HR', 'MS', 'H' or 'S', which name other things as often
    table.update({k: table[k.lower()] for k in ("Min", "MIN", "Sec", "Hr", "Hrs", "HRS", "Day")})
    return table


_UNITS = _unit_table()
_UNIT_WORDS = {k.lower(): v for k, v in _UNITS.items() if len(k) > 3}  # 'Seconds', 'MEGABYTES': words in any case


def is_unit(word: str) -> bool:
    """``word`` is a unit numbers are compared in ('GiB', 'kB', 'ms', 'Megabytes'): no name of its own."""
    return word in _UNITS or word.lower() in _UNIT_WORDS

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
      | (?<!\d,)(?P<euro>[1-9]\d{{0,2}}\.\d{{3}},\d+)(?!\d|[.,]\d)  # '1.234,56': 1234.56, or 1234 and 56
      | (?<!\d,)(?P<comma>\d+,\d+)(?!\d|,\d)           # '0,5': the decimal 0.5, or 0 and 5 ('1,024' was written whole)
      | (?P<plain>\d+(?:\.\d+)*)
    )
    (?: (?P<suffix>(?i:bn)|[kKmMbBT])(?!{_GLUED})
      | {_GAP}(?P<gap_suffix>(?i:bn)|[kKMBmT])(?!{_GLUED})  # '128 K tokens', '$1.5 M': see _spaced_magnitude
      | (?P<words>(?:(?:{_GAP}+|-)(?i:{_MAG})s?\b)+)  # '1.5 million', 'a 7-billion-parameter model'
      | (?:{_GAP}*|-)(?P<unit>[A-Za-z\u00b5\u03bc\u00e9]{{1,12}})(?![\w/]) )?  # a unit if _UNITS knows it ('64 KB', '5-min')
    """, regex.VERBOSE)
_SIGNS = str.maketrans({"\u2212": "-", "\uff0d": "-", "\uff0e": "."} | {chr(0xFF10 + i): str(i) for i in range(10)})
_HAS_DIGIT = regex.compile(r"\d")
# dates: year, month and day in a common form, read as one fact 'YYYY-MM-DD'
_MONTHS = {name: i + 1 for i, names in enumerate(
    "jan january|feb february|mar march|apr april|may|jun june|jul july|aug august|sep sept september|oct october|"
    "nov november|dec december".split("|")) for name in names.split()}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH_NAME = regex.compile(rf"(?i:{_MONTH})")
_MAG_WORD = regex.compile(rf"(?i:{_MAG})")
_TH = "(?i:st|nd|rd|th)?"
_YY_MM_DD = regex.compile(r"\d\d-\d\d-\d\d")  # hyphens, every part of two digits: also read year first
_DATE = regex.compile(rf"""
      (?<!{_GLUED}|[.,/-])(?P<ymd>\d{{4}}(?P<s1>[-/.])\d{{1,2}}(?P=s1)\d{{1,2}})(?!\d|[-/.]\d)     # 2023-03-15
    | (?<!{_GLUED}|[.,/-])(?P<dmy>\d{{1,2}}(?P<s2>[-/.])\d{{1,2}}(?P=s2)\d{{4}})(?!\d|[-/.]\d)     # 15.03.2023, 3/15/2023
    | (?<!{_GLUED}|[.,/-])(?P<dmyy>\d{{1,2}}(?P<s3>[-/.])\d{{1,2}}(?P=s3)\d\d)(?!\d|[-/.]\d)       # 15.03.23, 3/15/23
    | (?<![\w'\u2019])(?P<yy>['\u2019]\d\d)(?=s?(?![\w'\u2019]))                                # '23, the '90s
    | (?<!{_GLUED})(?P<mdy>(?i:{_MONTH})\.?{_GAP}+\d{{1,2}}{_TH},?{_GAP}+\d{{4}})(?!\d)            # March 15, 2023
    | (?<!{_GLUED}|[.,])(?P<dm_y>\d{{1,2}}{_TH}{_GAP}+(?i:of{_GAP}+)?(?i:{_MONTH})\.?,?{_GAP}+\d{{4}})(?!\d)  # 15 March 2023
    | (?<!\d)(?P<cjk>\d{{4}}\s*[年년]\s*\d{{1,2}}\s*[月월]\s*\d{{1,2}}\s*[日일])                  # 2023年3月15日
    | (?<!{_GLUED})(?P<my>(?i:{_MONTH})\.?,?{_GAP}+(?:(?i:of){_GAP}+)?\d{{4}})(?![\d.,]\d|\d)          # March 2023
    | (?<!{_GLUED}|[.,/-])(?P<ym>\d{{4}}-(?:0[1-9]|1[0-2]))(?!\d|[-/.]\d)                         # 2023-03
    | (?<!{_GLUED}|[.,/-])(?P<m_y>(?:0?[1-9]|1[0-2])/\d{{4}})(?!\d|[-/.]\d)                        # 03/2023
    | (?<![\w.,'\u2019])(?P<decade>1[5-9]\d0|20\d0)s(?![\w'\u2019])                                 # the 1990s
    | (?<=\b(?i:the|early|mid|late)[ \t-]{{1,3}})(?P<decade2>\d0)s(?![\w'\u2019])                   # the 90s
    """, regex.VERBOSE)
# a duration in parts, larger units first, is one quantity (see numbers()): '1 h 30 min', '1h30m', '2 hours 15
# minutes', '2 hours and 15 minutes', '1 hr 30 mins', '3 min 20 s', '1d 12h', '1 min 30 s 500 ms'; hours glued to
# two-digit minutes ('1h30', '2h05'); a colon before an hour or minute unit ('1:30 h' = 1 h 30 min, '1:30:15 hours',
# '2:30 min' = 2 min 30 s). 'm' and 's' are minutes and seconds only here, inside such a chain
_DURATION_PARTS = (("w", r"(?i:weeks?|wks?)", "604800"), ("d", r"d|(?i:days?)", "86400"),
                   ("h", r"h|hrs?|Hrs?|HRS|(?i:hours?)", "3600"), ("m", r"m|mins?|Mins?|MIN|(?i:minutes?)", "60"),
                   ("s", r"s|secs?|Secs?|(?i:seconds?)", "1"), ("ms", r"ms|msecs?|(?i:milliseconds?)", "0.001"))
_DURATION_SECONDS = {name: Decimal(factor) for name, _, factor in _DURATION_PARTS}
# between parts: a space, 'and', a comma ('1 hour, 30 minutes', '2 hours, and 15 minutes'; not in a list, see
# _duration_fact), or nothing after a unit glued to its number ('1h30m'; not '8 h100s': an H100); nothing before the
# first part
_PART_GAP = rf"(?:,?{_GAP}+(?i:and){_GAP}+|,?{_GAP}+|(?<=\d[A-Za-z]{{1,7}})|(?<![A-Za-z]))"
_PART_LIMIT = {"d": 7, "h": 24, "m": 60, "s": 60, "ms": 1000}  # a part after a larger one ('1 h 90 min' reads apart)
_DURATION = regex.compile(
    rf"(?<!{_GLUED}|[.,:])(?:"
    rf"(?<!\d[-\u2013])(?P<hms>\d{{1,3}}:[0-5]\d(?::[0-5]\d)?){_GAP}*(?:{_DURATION_PARTS[2][1]})(?![\w/])"
    rf"|(?<!\d[-\u2013])(?P<mss>\d{{1,3}}:[0-5]\d){_GAP}*(?:mins?|Mins?|MIN|(?i:minutes?))(?![\w/])"
    rf"|(?=\d+(?:\.\d+)?{_GAP}*[A-Za-z])"  # a number and a letter: a cheap look first
    + "".join(rf"(?:{_PART_GAP}(?P<{name}>\d+(?:\.\d+)?){_GAP}*(?:{units})(?![^\W\d_])"
              + (r"|(?<=\dh)(?P<mbare>[0-5]\d)(?!\d)" if name == "m" else "") + ")?"
              for name, units, _ in _DURATION_PARTS)
    + r"(?![\w/]))")
_BETWEEN = re.compile(r"(?i:between)[ \t]*$")  # 'between 1 hour and 30 minutes': two durations
# parts joined by a comma in a list of numbers ('1 hour, 30 minutes and 2 hours', '2 hours, 1 hour, 30 minutes'): apart
_LIST_AFTER = regex.compile(rf"{_GAP}*(?:[,&/]|(?i:and|or)(?![^\W\d_])){_GAP}*[-+]?\d")
_LIST_BEFORE = regex.compile(rf"\d{_GAP}*(?:[^\W\d_]+\.?)?{_GAP}*,{_GAP}*$")
# a clock time of day after a time preposition (see _time_fact): '10:30 h', '10:30 hours', '10h30', '10 h 30' after
# 'at', 'by', 'until', 'from', 'before', 'after' or their German and French forms ('um', 'bis', 'ab', 'vor', 'nach',
# 'gegen'; '\u00e0', 'vers', 'd\u00e8s', "jusqu'\u00e0", '\u00e0 partir de', 'avant', 'apr\u00e8s'), or after 'to',
# 'and', a dash right after such a time ('from 9:00 h to 17:00 h'); an hour alone ('\u00e0 10h', 'um 10 h') after a
# French or German one only ('after 2 h' is a duration as often); none before 'of' ('after 1:30 h of training') or a
# minutes or seconds unit ('at 10 h 30 min')
_TIME_PREPS = (rf"at|by|until|till|til|from|before|after|um|gegen|bis|ab|vor|nach|\u00e0{_GAP}+partir{_GAP}+de|"
               r"\u00e0|vers|d\u00e8s|jusqu['\u2019]\u00e0|avant|apr\u00e8s")
_HOUR_ALONE_PREPS = frozenset(["um", "gegen", "\u00e0", "vers", "d\u00e8s", "jusqu'\u00e0", "jusqu\u2019\u00e0",
                               "\u00e0 partir de"])
_CLOCK = regex.compile(rf"""
    (?: (?<![^\W\d_])(?: (?P<prep>(?i:{_TIME_PREPS})) | (?P<joint>(?i:to|and|und|et)) ){_GAP}+
      | (?P<dash>[-\u2013]){_GAP}* )
    (?:(?i:around|about|approximately|approx\.|ca\.|circa|etwa|gegen|vers|environ){_GAP}+)?
    (?P<clock>
        (?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?{_GAP}*(?:h|hrs?|Hrs?|HRS|(?i:hours?))
      | (?P<hh>[01]?\d|2[0-3]){_GAP}?h(?:{_GAP}?(?P<mm>[0-5]\d))? )
    (?![\w/])
    (?!{_GAP}*(?:m|mn|mins?|Mins?|MIN|(?i:minutes?)|s|secs?|(?i:seconds?))(?![^\W\d_]))
    (?!{_GAP}+(?i:of)(?![^\W\d_]))
    """, regex.VERBOSE)
# a change ('reduced by 1:30 h', 'cut from 2:00 h to 1:30 h', 'um 1:30 h verk\u00fcrzt' is not caught): a duration
_CHANGE_BEFORE = regex.compile(
    rf"(?<![^\W\d_])(?i:(?:reduc|increas|decreas|shorten|lengthen|extend|improv|slow|sav|drop|cut|fell|fall|rose|rise|"
    rf"grew|grow|sped|speed|faster|slower|longer|shorter|more|less)[^\W\d_]*){_GAP}*$")
# a clock time as written anywhere ('10:30', '10:30 am', '10h30', '1:30 h'): the time of day it may name is stated
# ('10:30 pm' is 22:30); not minutes and seconds ('2:30 min')
_CLOCK_WRITTEN = regex.compile(
    rf"(?<![\d:.,])(?P<h>[01]?\d|2[0-3])(?::(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?(?![\d:])"
    rf"(?!{_GAP}*(?:mins?|Mins?|MIN|(?i:minutes?)|s|secs?|Secs?|(?i:seconds?))(?![^\W\d_]))|h(?P<mm>[0-5]\d)(?!\d))"
    rf"(?:{_GAP}*(?P<ap>(?i:[ap]\.?m\.?))(?![^\W\d_]))?")
# a word before a number that makes "3.10" a version (not the decimal 3.1): a version word, a product whose versions
# are written so, or a name (an acronym or mixed case anywhere, a capitalised word inside a sentence)
_VERSION_WORDS = frozenset("version versions release releases ver rev revision python cuda cudnn node java ubuntu "
                           "debian fedora kernel linux macos ios android windows gcc clang llvm torch pytorch numpy"
                           .split())
_NUMBER_WORD_RUN = regex.compile(
    rf"(?<![^\W\d_])(?P<n>(?i:{_alternatives(_NUMBER_WORDS)}))(?![^\W\d_])"
    rf"(?P<mags>(?:{_GAP}+(?i:{_MAG})(?![^\W\d_]))*)")
# a number word with a unit after it ('two hours', 'a two-hour run', 'twenty-five minutes', 'one hundred
# milliseconds', 'two gigabytes'): written in digits before it is read (see _number_words_with_units)
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_COUNTING = _alternatives(w for w, v in _NUMBER_WORDS.items() if "." not in v and w not in {"twice", "once"}
                          and not w.startswith(("doubl", "tripl")))
_WORD_QUANTITY = regex.compile(
    rf"(?<![^\W\d_])(?:(?P<tens>(?i:{_TENS}))(?:-|{_GAP})(?P<ones>(?i:one|two|three|four|five|six|seven|eight|nine))"
    rf"|(?P<n>(?i:{_COUNTING})))"
    rf"(?![^\W\d_])(?P<mags>(?:{_GAP}+(?i:{_MAG})(?![^\W\d_]))*)"
    rf"(?=(?:{_GAP}+|-)(?P<unit>[A-Za-z\u00b5\u03bc\u00e9]{{2,12}})(?![\w/-]))")
_FRENCH_SHORT = frozenset("Ko ko Mo Go To".split())  # 'one To', 'two Go': the words, after a number word
_WORD_BEFORE = re.compile(r"([A-Za-z][\w+]*)[ \t]*$")
# a magnitude letter after a space ('128 K tokens') needs a count noun after it (or one word and a count noun: '1.5 M
# training examples', '2 M GPU hours'), or money, and no label before its number (see _spaced_magnitude)
_NOUN_AFTER = re.compile(rf"{_GAP}+([A-Za-z][A-Za-z-]*)(?:{_GAP}+([A-Za-z]+)\b)?")
_COUNT_NOUNS = frozenset(
    "token parameter param weight neuron user customer subscriber member player visitor follower employee developer "
    "student people person citizen resident row record entry entries item download install view click impression star "
    "like vote example sample instance document doc page file image photo word sentence line character char query "
    "queries request call question pair conversation dialogue dialog turn message email tweet post comment review "
    "article paper book transaction order event step iteration update instruction prompt completion vector embedding "
    "chunk passage node edge triple entity entities category categories label hour context ctx vocabulary vocab "
    "sequence seq model checkpoint dollar euro pound yen yuan rupee usd eur gbp".split())
# an informal size ('2 gigs', '64 megs', '1 gig') is one only about data (see _about_data): a data word in its clause
# before it ('The file is 2 gigs', 'RAM: 2 gigs'), right after it ('2 gigs of RAM', 'a 2 gig download', '64 megs of
# video memory', '2 gigs worth of data'), or a data unit in its clause ('2 gigs (2048 MB)'); else 'played 2 gigs' is a
# plain 2
_INFORMAL = frozenset("meg megs gig gigs".split())
_DATA = ("ram|vram|ddr\\d?|memory|mem|storage|disks?|drives?|ssds?|hdds?|flash|usb|data|datasets?|files?|filesize|"
         "downloads?|downloaded|downloading|uploads?|uploaded|uploading|bandwidth|cache|heap|swap|partitions?|iso|zip|"
         "archives?|databases?|db|weights|checkpoints?|attachments?|images?|index|logs?|binary|binaries|installer|"
         "gpus?|graphics|laptops?|phones?|computers?|servers?|machines?|instances?|size|capacity|quota|space")
_DATA_UNIT = r"[kKMGTP]i?B|[KMGTP]Bs|(?i:(?:kilo|mega|giga|tera|peta|kibi|mebi|gibi|tebi)?bytes?)"
_DATA_BEFORE = regex.compile(rf"(?<![^\W\d_])(?:(?i:{_DATA})|{_DATA_UNIT})(?![^\W\d_])")
_DATA_AFTER = regex.compile(
    rf"(?:{_GAP}+(?i:of|in|on|for))?(?:{_GAP}+(?!\d)[\w-]+){{0,2}}(?:{_GAP}+|-)(?i:{_DATA})(?![^\W\d_])"
    rf"|(?:(?![.!?;](?:\s|$)|\n).)*?(?<![^\W\d_])(?:{_DATA_UNIT})(?![^\W\d_])")
_CLAUSE_END = regex.compile(r"[.!?;](?:\s|$)|\n")
# 'K' after a temperature word is kelvin, whatever follows ('cooled to 77K', 'a temperature of 300 K samples')
_TEMPERATURE_BEFORE = regex.compile(
    rf"(?<![^\W\d_])(?i:temperatures?|temps?|cooled|cooling|chilled|heated|heating|warmed|annealed|annealing|held|"
    rf"kept|maintained)"
    rf"(?:{_GAP}+(?i:of|to|at|from|down|up|near|around|about|approximately|below|above|is|was|were)){{0,2}}"
    rf"{_GAP}*[=:~\u2248]?{_GAP}*$")
_DIGIT_AFTER = re.compile(rf"{_GAP}+[-+]?\d")
_CURRENCY_CODES = frozenset("USD EUR GBP JPY CNY CHF INR CAD AUD".split())
_LABEL_BEFORE = re.compile(r"([A-Za-z]+)\.?[ \t]*$")
_LABELS = frozenset("grade grades class year step steps stage phase option options choice answer question exercise "
                    "item items section sec figure fig table tab chapter ch part appendix panel page p row column col "
                    "level tier round room floor gate seat platform lane line track route bus unit block form type "
                    "plan case lot exhibit annex article art paragraph para clause rule note box vitamin".split())
# function words: never a name (features.names), never the noun a magnitude counts
FUNCTION_WORDS = frozenset("the a an in on at it he she they we i you this that these those there its his her their but "
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
    elif kind in ("dmy", "dmyy"):
        a, b, y = nums
        y = _century(y) if kind == "dmyy" else y
        dotted = "." in raw  # 15.03.2023 is day first; only a day that cannot be one reads month first
        candidates = [(y, b, a), (y, a, b)]
        if dotted:
            candidates = [c for c in candidates if _valid(c)][:1]
        elif kind == "dmyy" and _YY_MM_DD.fullmatch(raw):  # '23-05-01': ISO's order with the century dropped too
            candidates.append((_century(a), b, nums[2]))
    else:
        month = _MONTHS[_MONTH_NAME.search(raw).group(0).lower()]  # type: ignore[union-attr]
        day, year = nums
        candidates = [(year, month, day)]
    found = []
    for c in candidates:
        if _valid(c) and date(*c) not in found:
            found.append(date(*c))
    return found, [str(n) for n in nums]


def _century(yy: int) -> int:
    """The year a two-digit year names: 00-68 are 2000-2068, 69-99 are 1969-1999 (POSIX strptime's %y)."""
    return yy + (2000 if yy <= 68 else 1900)


def _date_facts(kind: str, raw: str) -> tuple[list[NumberFact], list[str]] | None:
    """The facts of one date match and the numbers it also states (its parts, the year in four digits); None when it
    names no day (read as numbers then).

    A date with a two-digit year is read beside its numbers, never instead of them: '4/8/16' may be batch sizes as
    well as 2016-04-08 (or 2016-08-04), so each part is a fact stated by its own number or by the date (hyphenated
    with two digits each, by the year-first date too: '23-05-01' may be 2023-05-01), with the year of each reading
    also stated; dotted, only zero-padded ('15.03.23', day first), one fact stated as written (a version '15.03.23')
    or by the date. "'23" is the year 2023 or the number 23."""
    if kind == "yy":
        yy = int(raw[1:])
        year = str(_century(yy))
        return [NumberFact(raw, frozenset([str(yy), year]))], [year]
    if kind in ("decade", "decade2"):  # 'the 1990s', 'the 90s' (not 90 seconds)
        year = str(_century(int(raw)) if kind == "decade2" else int(raw))
        return [NumberFact(f"{year}s", frozenset([f"{year}s", year]))], [year]  # stated by "the '90s" too
    if kind in ("my", "ym", "m_y"):  # a month of a year: 'March 2023' is '2023-03' and states the year 2023
        nums = [int(x) for x in regex.findall(r"\d+", raw)]
        y, m = (nums[0], nums[1]) if kind == "ym" else (nums[-1], nums[0]) if kind == "m_y" else \
            (nums[0], _MONTHS[_MONTH_NAME.search(raw).group(0).lower()])  # type: ignore[union-attr]
        key = f"{y:04d}-{m:02d}"
        return [NumberFact(key, frozenset([key]))], [str(y)]
    if kind == "dmyy" and "." in raw and not regex.fullmatch(r"\d\d\.\d\d\.\d\d", raw):
        return None  # '1.2.10': a version, read as written
    found, written = _date_readings(kind, raw)
    if not found:
        return None  # no such day: read as numbers ('31.02.2023' as written, like a version)
    keys = frozenset(d.isoformat() for d in found)
    written += [d.isoformat()[:7] for d in found]  # a day of a month states the month ('March 15, 2023': March 2023)
    if kind != "dmyy":
        return [NumberFact(found[0].isoformat() if len(found) == 1 else raw, keys)], written
    written += [str(d.year) for d in found]
    if "." in raw:
        return [NumberFact(raw, keys | {raw})], written
    return [NumberFact(raw, keys | {part}) for part in written[:3]], written


def _valid(ymd: tuple[int, int, int]) -> bool:
    try:
        date(*ymd)
    except ValueError:
        return False
    return True


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (in order, apart) blanked out, every other character in its place: what one reading
    took is not read again by the next."""
    pieces, at = [], 0
    for start, end in spans:
        pieces += [text[at:start], " " * (end - start)]
        at = end
    return "".join(pieces) + text[at:]


def _read(text: str, words: bool) -> tuple[dict[NumberFact, None], set[str]]:
    """The numbers ``text`` states, in order (see numbers), and the numbers written inside its dates (the year, and
    the day and month written in digits: stated, not facts of their own)."""
    facts: dict[NumberFact, None] = {}
    inside: set[str] = set()
    consumed: list[tuple[int, float]] = []  # spans of magnitude words read with their number, in order
    text = ungrouped(visible(text)).translate(_SIGNS)
    if words:
        text = _number_words_with_units(text)
    if _HAS_DIGIT.search(text):
        spans = []
        for m in SCIENTIFIC.finditer(text):
            mantissa, exp = (m.group("m"), m.group("e")) if m.group("e") else (m.group("m2") or "1", m.group("e2"))
            key = _canonical(Decimal(mantissa).scaleb(int(exp)))
            facts[NumberFact(key, frozenset([key]))] = None
            spans.append(m.span())
        text = _blanked(text, spans)
        spans = []
        for m in _DATE.finditer(text):
            kind = m.lastgroup or ""
            read = _date_facts(kind, m.group(kind))
            if read is None:
                continue
            facts.update(dict.fromkeys(read[0]))
            inside.update(read[1])
            spans.append(m.span())
        text = _blanked(text, spans)
        for m in _CLOCK_WRITTEN.finditer(text):  # the time of day a clock writing may name: stated
            hour = int(m.group("h"))
            ap = (m.group("ap") or "").lower()[:1]
            if ap and 1 <= hour <= 12:
                hour = hour % 12 + (12 if ap == "p" else 0)
            inside.add(_clock_key(hour, m.group("m") or m.group("mm"), m.group("s")))
        spans, last = [], -1
        for m in _CLOCK.finditer(text):
            time = _time_fact(text, m, last)
            if time is None:
                continue
            facts[time[0]] = None
            inside.update(time[1])
            spans.append((m.start("clock"), m.end()))
            last = m.end()
        text = _blanked(text, spans)
        spans = []
        for m in _DURATION.finditer(text):
            fact = _duration_fact(text, m)
            if fact is None:
                continue
            facts[fact] = None
            spans.append(m.span())
        text = _blanked(text, spans)
        for m in _NUM.finditer(text):
            found, also = _number(text, m)
            percent = _PERCENT.match(text, m.start("unit") if m.group("unit") else m.end())  # '50 %', '50 per cent'
            for fact in found:
                facts[_percent(fact) if percent else fact] = None
            inside.update(also)
            if m.group("words"):
                consumed.append(m.span("words"))
    if words:
        for m in _NUMBER_WORD_RUN.finditer(text):
            k = bisect_right(consumed, (m.start(), math.inf)) - 1
            if k >= 0 and consumed[k][0] <= m.start() < consumed[k][1]:
                continue  # a magnitude read with the number before it ('1.5 million')
            word = m.group("n").lower()
            if word == "halves" and _HALVES_NOUN.search(text, max(0, m.start() - 12), m.start()) \
                    or word.startswith(("doubl", "tripl")) and _DOUBLE_NAME.match(text, m.end()):
                continue  # 'the two halves of the model', 'double precision', 'it doubles as a cache': no number
            value = _word_value(m.group("n"))
            exponent = sum(_MAGNITUDES[w.lower()] for w in _MAG_WORD.findall(m.group("mags")))
            key = _canonical(Decimal(value).scaleb(exponent))
            fact = NumberFact(key, frozenset([key]))
            facts[_percent(fact) if _PERCENT.match(text, m.end()) else fact] = None
    return facts, inside


# a number in scientific notation ('3e-4', '1.5E+3', '1 × 10^-5', '10^-5'): one number, 0.0003, not 3, 4 and '3e'
SCIENTIFIC = regex.compile(
    r"(?<![\w.])(?:(?P<m>\d+(?:\.\d+)?)[eE](?P<e>[-+]?\d{1,3})|(?:(?P<m2>\d+(?:\.\d+)?)[ \t]*[×xX*][ \t]*)?"
    r"10[ \t]*(?:\^|\*\*)[ \t]*\(?(?P<e2>[-+]?\d{1,3})\)?)(?!\w|[.-]\d)")
_HALVES_NOUN = regex.compile(r"(?i:\b(?:two|both|the|into|in|its|their|these|those)\s+)\Z")
_DOUBLE_NAME = regex.compile(r"(?i:[\s-]+(?:as|precision|quotes?|check\w*|click\w*|buffer\w*|free|spaced?|"
                             r"dipping|counting|descent|edged)\b)")
_PERCENT = regex.compile(r"\s*(?:%|(?i:percent|per\s*cent|pct)\b)")


def _percent(fact: NumberFact) -> NumberFact:
    """A percentage, read like a number with a unit ('50%': '50~' and '50%', so a bare 50 states it, and it states no
    bare 50: '50 layers' is no percentage), and also the fraction it names ('0.5': stated by 'half' and by '0.5');
    '0.5%' is then not '50%', whose fraction is 0.5."""
    readings = set()
    for r in fact.readings:
        try:
            value = Decimal(r)
        except InvalidOperation:
            readings.add(r)
            continue
        readings |= {f"{r}~", f"{r}%", _canonical(value / 100)}
    return NumberFact(f"{fact.shown}%", frozenset(readings))


# a half of a unit said in words: 'one and a half hours', '2 and a half days', 'an hour and a half', 'half a minute'
_HALF_UNIT = regex.compile(
    rf"(?<![\w.,])(?i:(?:(?P<n>{_COUNTING}|\d+){_GAP}+and{_GAP}+a{_GAP}+half{_GAP}+(?P<u1>[a-z]{{2,12}})"
    rf"|an?{_GAP}+(?P<u2>[a-z]{{2,12}}){_GAP}+and{_GAP}+a{_GAP}+half|half{_GAP}+an?{_GAP}+(?P<u3>[a-z]{{2,12}})))"
    rf"(?![^\W\d_])")


def _half_units(text: str) -> str:
    """``text`` with each half of a unit said in words written in digits, right-aligned in its place ('an hour and a
    half' -> '        1.5 hour'): 5400 s, as '90 minutes' is."""
    def digits(m: regex.Match[str]) -> str:
        unit = m.group("u1") or m.group("u2") or m.group("u3")
        if unit in _FRENCH_SHORT or not is_unit(unit):
            return m.group(0)
        n = m.group("n")
        whole = Decimal(0) if m.group("u3") else Decimal(1) if not n else \
            Decimal(n) if n.isdigit() else _word_value(n)
        return f"{_canonical(whole + Decimal('0.5'))} {unit}".rjust(m.end() - m.start())
    return _HALF_UNIT.sub(digits, text)


def _number_words_with_units(text: str) -> str:
    """``text`` with each number word before a unit written in digits, right-aligned in its place ('two hours' ->
    '  2 hours', 'twenty-five minutes' -> '         25 minutes'), so a number word with a unit is read as the same
    number in digits ('2 hours': 7200 s), and in a duration in parts ('two hours and thirty minutes'). A unit of two
    letters or more only ('one B' is no byte, 'one To' no terabyte); 'half', 'twice', 'double' and 'once' are left,
    except in a half of a unit ('an hour and a half': _half_units)."""
    text = _half_units(text)
    pieces, at = [], 0
    for m in _WORD_QUANTITY.finditer(text):
        unit = m.group("unit")
        if unit in _FRENCH_SHORT or not is_unit(unit):
            continue
        if m.group("tens"):
            value = _word_value(m.group("tens")) + _word_value(m.group("ones"))
        else:
            value = _word_value(m.group("n"))
        exponent = sum(_MAGNITUDES[w.lower()] for w in _MAG_WORD.findall(m.group("mags")))
        digits = _canonical(value.scaleb(exponent))
        if len(digits) > m.end() - m.start():
            continue
        pieces += [text[at : m.start()], digits.rjust(m.end() - m.start())]
        at = m.end()
    return "".join(pieces) + text[at:] if pieces else text


def _clock_key(hour: int, minute: str | None, second: str | None) -> str:
    """The key of a time of day ('10:30 o'clock'): no number, nor a quantity (see numbers)."""
    return f"{hour}:{minute or '00'}" + (f":{second}" if second and second != "00" else "") + " o'clock"


def _time_fact(text: str, m: regex.Match[str], last: int) -> tuple[NumberFact, list[str]] | None:
    """A clock time after a time preposition (see _CLOCK) as a time of day ('at 10:30 h': 10:30, not 10.5 hours), and
    its numbers as written (stated, as a date's are); None where it reads as before: an hour alone after an English
    preposition ('after 2 h'), a joint or dash not right after a time of day, a change ('reduced by 1:30 h')."""
    prep = " ".join((m.group("prep") or "").lower().split())
    if (m.group("joint") or m.group("dash")) and (last < 0 or text[last : m.start()].strip()):
        return None
    if prep and _CHANGE_BEFORE.search(text, max(0, m.start() - 24), m.start()):
        return None
    hour, minute, second = m.group("h") or m.group("hh"), m.group("m") or m.group("mm"), m.group("s")
    if minute is None and prep and prep not in _HOUR_ALONE_PREPS:
        return None
    key = _clock_key(int(hour), minute, second)
    written = [str(int(p)) for p in (hour, minute or "0", second) if p is not None]  # '10h' is 10:00
    return NumberFact(" ".join(m.group("clock").split()), frozenset([key])), written


def _duration_fact(text: str, m: regex.Match[str]) -> NumberFact | None:
    """One duration in parts ('1 h 30 min', '1h30', '1:30 h'; see _DURATION) as its quantity in seconds, stated only
    by the same quantity ('90 minutes', '1.5 h', '5400 s'), never by a part ('1 h', a bare 30); None for a single part
    ('90 min': read by _NUM), a later part out of its range ('1 h 90 min'), two joined by 'and' after 'between'
    ('between 1 hour and 30 minutes') or parts joined by a comma in a list ('1 hour, 30 minutes and 2 hours'): read
    apart then, as before."""
    if m.group("hms") or m.group("mss"):
        clock = [Decimal(p) for p in m.group("hms" if m.group("hms") else "mss").split(":")]
        factors = [Decimal(3600), Decimal(60), Decimal(1)] if m.group("hms") else [Decimal(60), Decimal(1)]
        total = sum((p * f for p, f in zip(clock, factors)), Decimal(0))
    else:
        parts = [(name, Decimal(m.group(name))) for name in _DURATION_SECONDS if m.group(name)]
        if m.group("mbare"):  # '1h30': right after the hours
            parts.insert([name for name, _ in parts].index("h") + 1, ("m", Decimal(m.group("mbare"))))
        found = [(v, _DURATION_SECONDS[name]) for name, v in parts]
        if len(found) < 2 or any(v >= _PART_LIMIT[name] for name, v in parts[1:]):
            return None
        if regex.search(r"(?i:\band\b)", m.group(0)) and _BETWEEN.search(text, max(0, m.start() - 24), m.start()):
            return None
        if "," in m.group(0) and (_LIST_AFTER.match(text, m.end())
                                  or _LIST_BEFORE.search(text, max(0, m.start() - 24), m.start())):
            return None  # a list of numbers ('1 hour, 30 minutes and 2 hours'): read apart
        total = sum((v * f for v, f in found), Decimal(0))
    shown = " ".join(m.group(0).split())
    return NumberFact(shown, frozenset(_quantities(total, "s", (Decimal(1),))))


def _spaced_magnitude(text: str, m: regex.Match[str]) -> bool:
    """A magnitude letter after a space multiplies its number (see numbers()) after a currency sign or code ('$1.5 M',
    '€2 bn', '$5 m', '$1.2 T', 'USD 3 M'); 'bn' (no unit's symbol) wherever no label precedes ('revenue of 2 bn');
    K, k, M, B, Bn and BN before a count noun, or one word and a count noun ('128 K tokens', '1.5 M rows', '7 B parameters',
    '2 M monthly users', '1.5 M USD'), and not after a label ('grade 7 B students', 'Figure 3 B shows', 'step 2 K'):
    else the letter may be a unit, a grade, a panel or a list's item ('cooled to 77 K under vacuum' is kelvin, '0.5 M
    NaCl' molar; '300 K', 'a 7 B.', 'option 3 B or 4 C'); a K after a temperature word is kelvin whatever follows ('a
    temperature of 300 K samples')."""
    if text[max(0, m.start() - 1) : m.start()] in tuple(_CURRENCY):
        return True
    gap = m.group("gap_suffix")
    if gap == "K" and _kelvin(text, m):
        return False
    if gap in ("m", "T"):
        return False
    before = _LABEL_BEFORE.search(text, max(0, m.start() - 24), m.start())
    if before and before.group(1) in _CURRENCY_CODES:
        return True
    if before and before.group(1).lower() in _LABELS:
        return False
    if gap == "bn":
        return True
    after = _NOUN_AFTER.match(text, m.end())
    if not after:
        return False
    first, second = after.group(1), after.group(2)
    return (_count_noun(first) or first in _CURRENCY_CODES
            or bool(second) and first.lower() not in FUNCTION_WORDS and _count_noun(second))


def _kelvin(text: str, m: regex.Match[str]) -> bool:
    """The number follows a temperature word ('cooled to 77', 'a temperature of 300', 'kept at 4'): its K is kelvin."""
    return bool(_TEMPERATURE_BEFORE.search(text, max(0, m.start() - 48), m.start()))


def _about_data(text: str, m: regex.Match[str]) -> bool:
    """An informal size ('2 gigs', '64 megs') is about data (see _INFORMAL): a data word or unit in its clause before
    it, a data word right after it, or a data unit after it in its clause."""
    start = max(0, m.start() - 60)
    for end in _CLAUSE_END.finditer(text, start, m.start()):
        start = end.end()
    return bool(_DATA_BEFORE.search(text, start, m.start())
                or _DATA_AFTER.match(text, m.end(), min(len(text), m.end() + 60)))


def _count_noun(word: str) -> bool:
    """``word`` names things counted in thousands, millions or billions ('tokens', 'users', 'rows'; see _COUNT_NOUNS)."""
    w = word.lower()
    return w in _COUNT_NOUNS or (w[-1:] == "s" and w[:-1] in _COUNT_NOUNS)


def _number(text: str, m: regex.Match[str]) -> tuple[list[NumberFact], list[str]]:
    """The facts of one number match, and what else it states (see _magnitude)."""
    sign = "-" if m.group("sign") == "-" else ""
    exponent = 0
    suffix, unit, gap_suffix = m.group("suffix"), m.group("unit"), m.group("gap_suffix")
    if gap_suffix:
        if _spaced_magnitude(text, m):
            suffix = gap_suffix
        elif gap_suffix in _UNITS:
            unit = gap_suffix  # 'grade 7 B': the unit B, as before
    if unit == "To" and _DIGIT_AFTER.match(text, m.end()):
        unit = None  # 'from 1 To 10' (title case): the word, not terabytes
    if unit and unit.lower() in _INFORMAL and not _about_data(text, m):
        unit = None  # 'played 2 gigs': no data size
    if suffix == "K" and _kelvin(text, m):
        suffix = None  # 'cooled to 77K': kelvin
    if suffix and (suffix != "m" or text[max(0, m.start() - 1) : m.start()] in tuple(_CURRENCY)):
        exponent = _SUFFIXES.get(suffix, 9)  # 'bn' in any case
        if text[max(0, m.start() - 1) : m.start()] in tuple(_CURRENCY):
            suffix = None  # '$1.5M' is money, never 1.5 MB
    if m.group("words"):
        exponent += sum(_MAGNITUDES[w.lower()] for w in _MAG_WORD.findall(m.group("words")))
    known = unit if unit and not exponent and is_unit(unit) else None
    plain = m.group("plain")
    if plain is not None:
        if plain.count(".") >= 2 or (not exponent and re.search(r"\.\d+0$", plain)
                                     and _version_before(text, m.start())):
            return [NumberFact(sign + plain, frozenset([sign + plain]))], []
        if known:
            return _with_unit(sign + plain, known)
        return _magnitude(sign + plain, exponent, suffix)
    spaced, euro = m.group("spaced"), m.group("euro")
    written = spaced or euro or m.group("comma")
    parts = euro.replace(".", "").split(",") if euro else written.replace(",", " ").split(" ")
    if spaced and exponent:  # '3 175B' (GPT-3 175B): two numbers, not the group 3175 billion
        facts, also = _magnitude(parts[-1], exponent, suffix)
        return [_magnitude(sign + p, 0, None)[0][0] for p in parts[:-1]] + facts, also
    whole = Decimal(sign + ("".join(parts) if spaced else ".".join(parts)))
    values = [Decimal(p) for p in parts]
    values[0] = -values[0] if sign else values[0]
    if known:  # '2 048 MB', '1,5 h': the whole quantity, or the numbers apart with the unit said once after the last
        dimension, factors = _UNITS.get(known) or _UNIT_WORDS[known.lower()]
        shown = f"{sign}{written} {known}"
        whole_keys = [*_quantities(whole, dimension, factors), _canonical(whole) + "~"]
        last = values[-1]  # by itself with the unit, unless written with a leading 0 ('128 000 MB': not 0 MB = 0 KB)
        alone = [] if parts[-1][:1] == "0" and len(parts[-1]) > 1 else [*_quantities(last, dimension, factors),
                                                                         _canonical(last) + "~"]
        return ([NumberFact(shown, frozenset([_canonical(v), *whole_keys])) for v in values[:-1]]
                + [NumberFact(shown, frozenset([*alone, *whole_keys]))], [_canonical(whole), *map(_canonical, values)])
    values[-1] = values[-1].scaleb(exponent)
    alternative = _canonical(whole.scaleb(exponent))
    shown = m.group(0).strip()
    cut = m.start("unit") if m.group("unit") else m.start("gap_suffix") if gap_suffix and not exponent else -1
    if cut >= 0:
        shown = shown[: cut - m.start()].rstrip(" \t\u00a0\u202f\u2009-")  # a unit is not read here
    return [NumberFact(shown, frozenset([_canonical(v), alternative])) for v in values], []


def _quantities(value: Decimal, dimension: str, factors: tuple[Decimal, ...]) -> list[str]:
    """The keys of ``value`` in a unit: its value in the base unit by each factor ('64 KB': '64000 B', '65536 B')."""
    return [f"{_canonical(value * f)} {d}" for d in dimension.split("|") for f in factors]


def _with_unit(raw: str, unit: str) -> tuple[list[NumberFact], list[str]]:
    """A number with a unit ('64 KB', '1.5 hours'): stated by the same quantity in any writing of a unit of its
    dimension ('64 kB', '64KB', '65,536 bytes'; '90 minutes'), or by the bare number written without a unit (its key
    with '~': a table's 'Memory (MB) | 64', the 16 of '16 or 32 GB'), never by the number with another unit ('64 MB'
    is not '64 KB'). It also states its bare number ('64': a claim's unitless 64 is stated by it)."""
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return [], []
    dimension, factors = _UNITS.get(unit) or _UNIT_WORDS[unit.lower()]
    bare = _canonical(value)
    return [NumberFact(f"{bare} {unit}", frozenset([*_quantities(value, dimension, factors), bare + "~"]))], [bare]


def _magnitude(raw: str, exponent: int, suffix: str | None) -> tuple[list[NumberFact], list[str]]:
    """A number times 10**``exponent``. One with a magnitude also states its value without it ('64K' states 64); a
    magnitude letter that may abbreviate a unit ('64K' for 64 KB, '7B' for 7 bytes, '1.5M' for 1.5 MB; see
    _SUFFIX_BYTES) is also stated by that quantity ('64 KB', '65,536 bytes'), which '128k' in '128 tokens' is not."""
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return [], []
    bare = _canonical(value)
    if not exponent:
        return [NumberFact(bare, frozenset([bare]))], []
    key = _canonical(value.scaleb(exponent))
    n = _SUFFIX_BYTES.get(suffix or "")
    as_bytes = [] if n is None else _quantities(value, "B", (Decimal(1000) ** n, Decimal(1024) ** n))
    # '4K tokens' and '128K context' are as often 4,096 and 131,072 (powers of two) as 4,000 and 128,000
    binary = [_canonical(value * Decimal(1024) ** n)] if suffix in ("k", "K", "M") and n else []
    return [NumberFact(key, frozenset([key, *as_bytes, *binary]))], [bare]


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
      thousands   grouped by commas, by a no-break, narrow no-break, thin or figure space, by an apostrophe ("1'000",
                  '1\u2019000') or an underscore ('1_000'), in strict groups of three ('1,024', '128\u00a0000' = '128000';
                  '1,2,4,8' and '10,20,30' are lists, see eval.tokens.GROUPED); by dots only with two or more groups
                  ('1.234.567' = 1234567; '1.234' is the decimal, '1.2.3' a version, '192.168.100.200' an address); by
                  a plain space ('128 000') both ways: the whole 128000, or 128 and 0 (it may be two numbers: 'rank 5
                  100 tokens'); only a 1-3 digit first group with 3-digit groups after it, so '2023 100' is 2023 and 100
      a comma     between digits that is no thousands group ('0,5', '2,25', '0,125'): both ways, the decimal 0.5 or the
                  numbers 0 and 5 (without a space '3,5' may still be a list); after one dot group, a European decimal
                  ('1.234,56', '12.345,6'; '1.234.567,89' as well) is the decimal 1234.56 or the numbers 1234 and 56
                  (never 1.234: an English list would not group a decimal so), only where nothing but the comma
                  follows the dot group ('1.500,2.000' is a list of two decimals); '1,234' is one thousand two hundred
                  and thirty-four, as before. With a unit ('3,5 GB', '1,5 h', '2 048 MB') its quantity is the whole's
                  ('1,5 h' = '90 min'; '3,5 GB' is not '3,5 MB') or the last number's, with the numbers before it bare
      magnitudes  '1.5k' = '1,500', '128K' = '128000', '$1.5M' = '1.5 million' = '1500000', '7B' = '7 billion',
                  '2bn', '1.2T', 'two hundred' = 200 ('m' is a million only after a currency sign, '$5m': '5m' is 5);
                  '64K' also states 64, and as K may abbreviate KB it is also stated by 64 KB ('64 KB', '65,536
                  bytes'; '7B' by 7 bytes, '1.5M' by 1.5 MB; see _magnitude), while '128k' is not stated by '128'.
                  After a space a letter is a magnitude only where it cannot be a unit, a label or a list's item
                  (see _spaced_magnitude): after a currency sign or code ('$1.5 M', '€2 bn', '$5 m', 'USD 3 M');
                  'bn' ('revenue of 2 bn'); K, k, M, B, BN before a count noun, or one word and a count noun ('128 K
                  tokens' = '128K tokens', '1.5 M rows', '7 B parameters' = '7B parameters', '2 BN users', '2 M
                  monthly users', '1.5 M USD'), after no label word ('grade 7 B students', 'Figure 3 B shows');
                  'cooled to 77 K under vacuum' (kelvin), '0.5 M NaCl' (molar), 'a 7 B.', 'option 3 B or 4 C', '300
                  K', '128 K-token' keep the number alone (a spaced 'B' is then the unit bytes, as before); 'm' and
                  'T' after a space only follow a currency sign ('3 T', '5 m' may be tesla, tonnes, metres), 'b' never.
                  After a temperature word a K is kelvin, spaced or glued, whatever follows ('cooled to 77K', 'a
                  temperature of 300 K samples'); elsewhere '128K' is 128000 as before ('at 300K steps')
      units       of data size and duration only: a number with one ('64 KB', '64KB', '64 kB', '64 kilobytes';
                  '64 Mbytes', '64 MBs'; '90 min', '90 Min', '1.5 hours', '1.5 HRS', '5-second') is its quantity,
                  spaced or not, compared across units of its kind: '2 GB' = '2048 MB' = '2000 MB' (a decimal prefix
                  is read both ways, 1000 or 1024: both are written; 'KiB', 'MiB' are 1024 only), '1.5 hours' = '90
                  minutes' = '5400 s'; bits ('Mbit') and bytes ('MB') are not converted ('Mb', 'kb' may be either).
                  Informal and French sizes are bytes too: '64 Megs' = '64 megs' = '64 MB', '2 gigs' = '2 GB' where
                  the text is about data (a data word or unit in the clause before it, a data word right after it:
                  '2 gigs of RAM', 'The file is 2 gigs', 'a 2 gig download'; 'played 2 gigs' is a plain 2, see
                  _about_data), '64 Mo' = '64 MB', '2 Go', '1 To', '512 ko', '8 octets' (only right after a number:
                  'Go 1.21', 'To' as a word, and 'from 1 To 10' are none). A number word with a unit is its
                  quantity as digits are ('two hours' = '2 hours' = '120 minutes', 'a two-hour run', 'twenty-five
                  minutes', 'two gigabytes'; ``words`` only). '64 MB' is not stated by '64 KB', while the bare number
                  stated without a unit states it (a table's 'Memory (MB) | 64', the 16 of '16 or 32 GB'). Every
                  other unit ('5 km', '10 GB/s', '5m') is read as its plain number, as a rate is: its number is all
                  compared. Not read: months and years as durations
      durations   in parts, larger units first, are one quantity (see _DURATION): '1 h 30 min' = '1h30' = '1h30m' =
                  '1 hr 30 mins' = '1 hour and 30 minutes' = '1:30 h' = '90 minutes' = '1.5 h' = '5400 s'; '3 min 20
                  s', '2:30 min', '1d 12h', '1m30s'. Such a duration states neither its parts ('1 h' is not '1 h 30
                  min', nor is a bare 30) nor a bare number, and numbers() gives its quantity ('5400 s'); parts
                  joined by a comma are one too ('1 hour, 30 minutes', '2 days, 3 hours'), but not in a list of
                  numbers ('1 hour, 30 minutes and 2 hours', '2 hours, 1 hour, 30 minutes'), and 'between 1 hour and
                  30 minutes' is two durations; number words too ('two hours and thirty minutes' = 150 minutes)
      times       a clock time after a time preposition is a time of day, one fact (key '10:30 o'clock'), not a
                  duration (see _CLOCK): 'at 10:30 h' = 'um 10:30 h' = '\u00e0 10h30' = '\u00e0 10 h 30' = 'by/until/
                  from/before/after 10:30 h' = 10:30, stated by '10:30', '10:30 a.m.', '10h30' or '10:30 h' anywhere
                  (not by '10:30 pm', nor by 630 minutes); its hour and minute are stated as a date's parts are; 'from
                  9:00 h to 17:00 h' is two times; an hour alone after a French or German one ('\u00e0 10h', 'um 10 h');
                  'took 1:30 h', 'after 1:30 h of training', 'reduced by 1:30 h' and 'after 2 h' stay durations
      dates       one fact, year-month-day: '2023-03-15', '15.03.2023' (day first), 'March 15, 2023', '15 March
                  2023', '2023年3月15日' are '2023-03-15'; '03/04/2023' (day or month first) is either date; the year,
                  day and month written in digits are also stated ('in 2023' is). A two-digit year (00-68: 2000s,
                  69-99: 1900s, as POSIX reads it) reads beside the numbers: '03/15/23' is stated by 2023-03-15 or by
                  its numbers (it may be a list, '4/8/16'), '15.03.23' (zero-padded, day first) by the date or as
                  written (a version), "'23" by 2023 or 23. Hyphenated and zero-padded, two digits each, it is also
                  read year first ('23-05-01': 2023-05-01, as well as 2001-05-23): ISO's order with the century
                  dropped; as its numbers are facts too, a phone number's or a range's digit groups ('555-12-34',
                  '10-20-30') lose nothing, and groups of other widths ('1-2-3', '555-123-4567') are never a date
      signs       a Unicode minus ('−3') is '-'; invisible characters (zero-width space, soft hyphen) are dropped
    Digits touching a CJK character are a number ('约占2 GB' states 2)."""
    facts, inside = _read(text, words)
    return ({k for k in _stated(facts, inside) if k[-1].isdigit()}
            | {k for f in facts if all(" " in r for r in f.readings) for k in f.readings})  # a duration in parts


_ORDINALS = {w: str(i) for i, w in enumerate(  # not 'second', a unit of time far more often than 'the 2nd'
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split(), start=1)
    if w != "second"}
_ORDINAL = regex.compile(rf"(?<![^\W\d_])(?i:{'|'.join(_ORDINALS)})(?![^\W\d_])")
# a version written 'v2' or 'v2.1' states the number 'version 2' gives
_V_NUMBER = regex.compile(r"(?<![^\W\d_])v(?=\d)")  # not 'V100', a GPU


def stated(text: str, *, words: bool = True) -> set[str]:
    """Everything a claim's number is matched against (number_missing, key_facts.Stated): numbers(), each number
    stated without a unit also as its key with '~', and quantities with a unit in their base unit ('64000 B',
    '5400 s'; see _with_unit); with ``words``, an ordinal word states its number ('the first stage' states '1st
    stage'; it is no fact of its own: 'First, install it' claims no number); a version 'v2' states 'version 2'."""
    out = _stated(*_read(_V_NUMBER.sub("version ", text), words))
    if words:
        out.update(_ORDINALS[m.group(0).lower()] for m in _ORDINAL.finditer(text))
    return out


def _stated(facts: Iterable[NumberFact], inside: set[str]) -> set[str]:
    out = set(inside)
    for f in facts:
        if any(k[-1] == "~" for k in f.readings):  # a number with a unit: its quantities, never its bare key
            out.update(k for k in f.readings if k[-1] != "~")
        else:
            out.update(f.readings)
            out.update(k + "~" for k in f.readings if k[-1].isdigit())
    return out
