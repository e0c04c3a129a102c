"""Key facts a comparison with a reference must not lose: the numbers a claim states and its identifiers (words with
digits or inner capitals: 'E4M3', 'H100', 'vLLM', 'GPT-4'), and the polarity of a leading yes/no.

A learned judge reads "use E5M2 for the forward pass" as close to "E4M3 for the forward pass, E5M2 for gradients":
most words are shared and the formats differ by two characters. Against a reference that is a wrong answer, so
answer correctness checks these facts exactly: a claim whose number or identifier the other side never states (nor
the question) is not supported, whatever the judge's score, and says which fact was missing."""
from __future__ import annotations

import re
from dataclasses import dataclass

import regex

from eval.judges.features import negated
from eval.judges.numbers import SCIENTIFIC, is_unit, number_facts, stated
from eval.tokens import NUMBER_NEIGHBOURS, content_tokens, ungrouped, visible
from eval.yes_no import leading_polarity

_TOKEN = re.compile(r"[^\W_][\w.-]*[^\W_]|[^\W_]", re.UNICODE)
_CJK = regex.compile(rf"[{NUMBER_NEIGHBOURS}]\p{{M}}*")  # CJK text is words, not identifiers: '约占2' states 2
# a number with a magnitude ('128k', '1.5M', '7B') or an ordinal ('15th'): numbers() reads it, normalised
_NUMBER_LIKE = re.compile(r"\d+(?:\.\d+)?(?:[kKMBTb]|bn|Bn|BN|st|nd|rd|th|s|[xX\u00d7])")  # '3x' is a multiple
# a number glued to a unit ('16GB', '1,024MB', '90min'): an identifier that a quantity in another writing also states
# a number glued to its unit, or a duration glued in parts ('1h30', '1m30s')
_GLUED_UNIT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[A-Za-z\u00b5\u03bc]+(?:\d+[A-Za-z]*)*(?![\w/])")
_DIGIT = re.compile(r"\d")
_VERSION_WORD = re.compile(r"\bversion\s*(?=\d)")
# a contrast after the statement ("supported on the H100, not the A100"; "rather than X") does not negate it
_CONTRAST_TAIL = re.compile(r"(?:,\s*(?:(?:but|and|yet)\s+)?|\s+(?:but|yet)\s+)not\b(?!\s+(?:only|just|merely)\b).*$"
                            r"|\b(?:rather than|instead of|unlike|as opposed to)\b.*$", re.IGNORECASE | re.S)


def identifiers(text: str) -> set[str]:
    """Lower-cased words carrying a digit next to letters ('E4M3', 'H100', 'GPT-4'), or mixed case ('vLLM'); plain
    acronyms ('GPU') and capitalised words are names a paraphrase may spell out, so they are not counted. Numbers are
    read by numbers() and are no identifiers: a bare or grouped number ('1,024MB' is '1024mb'), one with a magnitude
    ('128k', '7B'), a multiple ('3x'), a decade or seconds ('1990s', '30s') or an ordinal ('15th'); CJK characters are
    words, never part of one ('H100显卡' holds 'h100'), and invisible characters inside a word do not split it
    ('f\u200bp16' is 'fp16')."""
    out = set()
    for m in _TOKEN.finditer(SCIENTIFIC.sub(" ", _CJK.sub(" ", ungrouped(visible(text))))):  # '3e-4' is a number
        for word in m.group(0).split("-"):  # '4-bit' is a number and a unit; 'GPT-4' a name and a number
            if not any(ch.isalpha() for ch in word) or _NUMBER_LIKE.fullmatch(word) or is_unit(word):
                continue  # a number: numbers() reads it, normalised; a unit ('GiB') reads with its number
            mixed = any(ch.isupper() for ch in word[1:]) and not word.isupper()  # 'vLLM', not the acronym 'GPU'
            if mixed or any(ch.isdigit() for ch in word):
                out.add(word.lower())
    return out


def _compact(text: str) -> str:
    """Lower case without spaces and hyphens: '16 GB' and '16GB', 'E4M3' and 'e4m3' read the same; between two digits
    they leave a '|', so '1 16GB' does not read as '116gb' (see _states); a number grouped in thousands is written
    whole ('1,024MB' reads as '1024mb'), invisible characters are dropped."""
    text = _VERSION_WORD.sub("v", ungrouped(visible(text)).lower())  # 'version 2' states 'v2'
    return re.sub(r"[\s-]+", "", re.sub(r"(?<=\d)[\s-]+(?=\d)", "|", text))


def _states(compact: str, identifier: str) -> bool:
    """``compact`` holds ``identifier`` whole: not as the start of a longer number ('H100' is not stated by 'H1000',
    nor 'v2.1.0' by 'v2.1.05'), nor as the end of one ('16gb' by '116gb')."""
    c = _compact(identifier)
    pattern = ((r"(?<![\d.])" if c[0].isdigit() else "") + re.escape(c)
               + (r"(?![\d]|\.\d)" if c[-1].isdigit() else ""))
    return re.search(pattern, compact) is not None


def _glued_quantities(text: str) -> dict[str, frozenset[str]]:
    """The quantities of the numbers glued to a unit in ``text``, by identifier ('16GB' -> '16gb': 16 GB in bytes,
    see eval.judges.numbers.numbers): such an identifier is stated by the same quantity written another way ('16
    GB', '16384 MB'), never by the bare number alone (a '16' beside '32GB'). It is read in its sentence, the other
    numbers there blanked: 'at 10h30' is a time of day, '16gigs of RAM' a size, 'played 2gigs' none."""
    out: dict[str, frozenset[str]] = {}
    text = ungrouped(visible(text))
    for m in _GLUED_UNIT.finditer(text):
        before, after = text[max(0, m.start() - 60) : m.start()], text[m.end() : m.end() + 60]
        around = _DIGIT.sub(" ", before) + m.group(0) + _DIGIT.sub(" ", after)
        readings = [k for f in number_facts(around, words=False) for k in f.readings if " " in k]
        if readings:
            out[m.group(0).lower()] = frozenset(readings)
    return out


def states_negation(text: str, question: str = "") -> bool:
    """``text`` negates what ``question`` asks: a negation outside a trailing contrast ("FP8 is not supported." yes;
    "FP8 is supported on the H100, not the A100." no: the "not" names what the statement excludes), or a contrast that
    excludes what the question names and the statement does not ("..., not the A100." for "Is it supported on the
    A100?")."""
    text = text.strip()
    m = _CONTRAST_TAIL.search(text)
    if m is None or not text[: m.start()].strip():
        return negated(text)
    main, tail = text[: m.start()], m.group(0)
    asked = set(content_tokens(question)) - set(content_tokens(main))
    return negated(main) or bool(asked & set(content_tokens(tail)))


@dataclass(frozen=True)
class Stated:
    """The numbers and the compacted text of what the other side states, read once for all the claims checked
    against it (a 200,000-character context is not rescanned per claim)."""

    numbers: frozenset[str]
    compact: str

    @classmethod
    def of(cls, other: str, question: str = "") -> Stated:
        given = f"{other}\n{question}"
        return cls(frozenset(stated(given)), _compact(given))

    def missing(self, claim: str, *, words: bool = True) -> list[str]:
        """The claim's numbers and identifiers not stated here, sorted (see missing_facts): a number is stated when any
        of its readings is (numbers(): '128 000' is stated by '128,000' and by '128 ... 0'; '64 MB' by '65,536 KB'
        and by a bare 64, never by '64 KB'); a number glued to a unit ('16GB') is stated as written or as the same
        quantity ('16 GB', '16384 MB'), not by a bare 16 (see _glued_quantities)."""
        out = sorted({f.shown for f in number_facts(claim, words=words) if not f.readings & self.numbers})
        quantity = _glued_quantities(claim)
        said = {o.replace(" ", "").lower() for o in out}  # '64MB' missing as the number '64 MB': said once
        return out + sorted(i for i in identifiers(claim) if i not in said and not _states(self.compact, i)
                            and not quantity.get(i, frozenset()) & self.numbers)


def missing_facts(claim: str, other: str, question: str = "", *, words: bool = True) -> list[str]:
    """The claim's numbers and identifiers stated neither by ``other`` nor by the question, sorted. ``words``: number
    words ('one', 'twice') count as numbers (against a short reference); without, only numbers written in digits (prose
    against retrieved passages: 'one of the options' states no number; '1.5 million' is still 1500000). A number
    written another way is the same number ('128 000', '128,000', '128K'; '15.03.2023', 'March 15, 2023'; see
    eval.judges.numbers.numbers)."""
    return Stated.of(other, question).missing(claim, words=words)


def polarity_conflict(answer: str, reference: str) -> bool:
    """The answer opens with yes and the reference with no, or the other way round."""
    a, r = leading_polarity(answer), leading_polarity(reference)
    return a is not None and r is not None and a != r


def polarity_mismatch(claim: str, question: str, premise: str) -> bool:
    """A bare yes/no answer read after its question ("Is it exact? No.") asserts the question's proposition or its
    negation; a learned judge reads the question's words and not the one word after them. The claim mismatches its
    best premise when what it asserts is negated and the premise is not, or the other way round."""
    q = question.strip()
    if not q or not claim.startswith(q):
        return False
    polarity = leading_polarity(claim[len(q):])
    if polarity is None:
        return False
    asserts_negation = negated(q) != (polarity == "no")
    return asserts_negation != states_negation(premise, q)
