"""The kind of answer a question asks for, read from its wording, and whether a short fragment gives that kind.

A question asks for one of these kinds (the first row that matches; None: any other question, who/where/what/which
with another noun, how/why):

  yes/no  it opens with an auxiliary ("Is ...", "Does ...", "Can ...", "Won't ..."), and offers no alternatives
          (no "or" but "or not": "Is it FP8 or FP16?" asks for one of them)
  date    "When was/were/did ..." (a past event; "When should I ..." asks for a condition), or what/which + a date noun
          (year, date, month, day, decade, century) read as the question's subject ("Which year was X published?")
  number  "How many/much/long/big/large/old/far ...", or what/which + a quantity noun (size, number, count, limit,
          length, amount, version, capacity, percentage, ratio, dimension) read as the question's subject ("What is the
          default block size in vLLM?", "Which CUDA version is required?"; not "What limits the batch size?")

A fragment gives the kind: a yes/no when it opens with one (eval.yes_no.leading_polarity: "Yes.", "No, it
isn't.", "Correct."; English only); a number when eval.judges.numbers.number_facts reads one ("16 tokens", "sixteen",
"1.5k", "0.6.3") or it names a version ("v0.6.3"); a date when it states a year or a date (a number fact read as a year
1000-2999 or as a day: "2023", "March 15, 2023", "'23") or names a month or a weekday.

A fragment that gives no number or date may still answer a number or date question in words ("Several.", "Unlimited.",
"Recently.", "Last spring."): ``vague``. One that says it does not know ("No idea.", "Not sure.", "Unknown.") is
``unsure``: not a refusal the project reads (rag.prompt.is_refusal), and no answer either. One with an auxiliary or
a form of be/have/do ("It is there.") is a short ``sentence``, not a fragment."""
from __future__ import annotations

import calendar
import re

from eval.judges.numbers import number_facts
from eval.tokens import content_tokens
from eval.yes_no import AUX as _AUX
from eval.yes_no import asks_yes_no, leading_polarity

YES_NO, NUMBER, DATE = "yes/no", "number", "date"

# an auxiliary or a form of be/have/do, or a contraction of one: a short sentence ("It is there.", "Kwon did.")
_VERB = re.compile(rf"\b(?:{_AUX}|be|been|being)\b|[’'](?:re|ve|ll|m)\b|\b(?:it|that|there|he|she|this)[’']s\b",
                   re.IGNORECASE)
# a subject pronoun opening the fragment and a word after it: a short sentence whatever its verb ("It stores optimizer
# momentum.", "They freeze them.")
_PRONOUN_SUBJECT = re.compile(r"^\W*(?:it|they|he|she|we|you|i|this|that|these|those|there)\s+\w", re.IGNORECASE)
_WHEN_PAST = re.compile(r"^\W*when\s+(?:was|were|did)\b", re.IGNORECASE)
_HOW_MUCH = re.compile(r"^\W*how\s+(?:many|much|long|big|large|old|far)\b", re.IGNORECASE)
# what/which, an optional "is the", up to three modifiers (no article: "What limits the ..." has a verb), then the
# noun, followed by the end, a preposition or the question's verb: the noun is what is asked for ("What is the default
# block size in vLLM?"), not an object of another verb ("What limits the batch size?", "What is it limited by?")
_SUBJECT = (r"^\W*(?:what|which)(?:[’']s|\s+(?:is|are|was|were))?\s+(?:(?:the|a|an)\s+)?"
            r"(?:(?!(?:the|a|an)\b)[\w.-]+\s+){{0,3}}?"
            r"(?:{nouns})s?(?=\s*(?:[?,]|$)|\s+(?:of|in|for|on|per|at|with|by|is|are|was|were|does|do|did|can|"
            r"should|will|would|has|have|used|allowed|supported|required|needed|published|released)\b)")
_DATE_Q = re.compile(_SUBJECT.format(nouns="year|date|month|day|decade|century"), re.IGNORECASE)
_NUMBER_Q = re.compile(_SUBJECT.format(nouns="size|number|count|limit|length|amount|version|capacity|percentage|"
                                             "ratio|dimension"), re.IGNORECASE)
_VERSION = re.compile(r"\bv\d+(?:\.\d+)+\b", re.IGNORECASE)
_YEAR_OR_DAY = re.compile(r"[12]\d{3}(?:-\d\d-\d\d)?")
# month and weekday names, full and abbreviated (the stdlib's, as the C locale writes them)
_CALENDAR = frozenset(n.lower() for names in (calendar.month_name, calendar.month_abbr, calendar.day_name,
                                               calendar.day_abbr) for n in names if n) | {"sept"}

# words that state an amount, a size or a time without a number
_VAGUE = frozenset(
    "few several many much some most all none nothing little lot lots plenty dozen dozens hundreds thousands millions "
    "billions unlimited infinite unbounded any varies vary variable depends depending dynamic dynamically "
    "configurable auto automatic adaptive small large big huge tiny long short high low free latest newest current "
    "default same recently recent soon later earlier early late ago yesterday today tomorrow last next past this "
    "never always sometimes often rarely forever until while before after since during spring summer autumn fall "
    "winter".split())
_UNSURE = re.compile(r"\b(?:no idea|no clue|not sure|unsure|unknown|dunno|uncertain|unclear|not specified|unspecified|"
                     r"not stated|not mentioned)\b", re.IGNORECASE)


# an alternative question: up to three words either side of "or" ("Is it FP8 or FP16?", "Should I use LoRA or full
# fine-tuning?"), not "or not" ("Is it supported or not?")
_ALTERNATIVES = re.compile(r"((?:[\w.+#-]+\s+){0,2}[\w.+#-]+)\s+or\s+(?!not\b)([\w.+#-]+(?:\s+[\w.+#-]+){0,2})",
                           re.IGNORECASE)


def picks_alternative(question: str, fragment: str) -> bool:
    """``question`` offers alternatives ("X or Y?") and ``fragment`` names one of them ("FP16."): a content word of the
    words either side of the question's "or" (content_tokens, as the judges read words)."""
    offered = {w for m in _ALTERNATIVES.finditer(question) for side in m.groups() for w in content_tokens(side)}
    return bool(offered & set(content_tokens(fragment)))


def asked_kind(question: str) -> str | None:
    """YES_NO, DATE or NUMBER when the question's wording asks for that kind of answer (see the module docstring);
    None for any other question."""
    q = question.strip()
    if asks_yes_no(q):
        return YES_NO
    if _WHEN_PAST.match(q) or _DATE_Q.match(q):
        return DATE
    if _HOW_MUCH.match(q) or _NUMBER_Q.match(q):
        return NUMBER
    return None


def gives(fragment: str, kind: str) -> bool:
    """``fragment`` gives an answer of ``kind`` (see the module docstring)."""
    if kind == YES_NO:
        return leading_polarity(fragment) is not None
    facts = number_facts(fragment)
    if kind == NUMBER:
        return bool(facts) or bool(_VERSION.search(fragment))
    return (any(_YEAR_OR_DAY.fullmatch(r) for f in facts for r in f.readings)
            or any(w in _CALENDAR for w in re.findall(r"[a-z]+", fragment.lower())))


def sentence(fragment: str) -> bool:
    """``fragment`` holds an auxiliary or a form of be/have/do ("It is there.", "Integer ids are fine."), or opens with
    a subject pronoun ("It stores optimizer momentum."): a short sentence, not a bare answer. Other finite verbs after
    a noun are not told apart ("LoRA freezes them." is a fragment here)."""
    return bool(_VERB.search(fragment) or _PRONOUN_SUBJECT.match(fragment))


def vague(fragment: str) -> bool:
    """``fragment`` states an amount, a size or a time in words, without a number ("Several.", "Recently.")."""
    return any(w in _VAGUE for w in re.findall(r"[a-z]+", fragment.lower()))


def unsure(fragment: str) -> bool:
    """``fragment`` says that its writer does not know ("No idea.", "Not sure.", "Unknown.")."""
    return bool(_UNSURE.search(fragment))
