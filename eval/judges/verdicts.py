"""Reading a verdict from a judge model's reply (eval/judges/llm_claims.py asks the questions below).

A reply gives a verdict only when it says one plainly; anything else is *undecided* (None), and the judge asks once
more, then leaves the sample unmeasured. What is read, in order:

- reasoning: ``<think>...</think>`` blocks are dropped (and everything before a lone ``</think>``); a ``<think>`` that
  is never closed (a reply cut off mid-reasoning) is undecided.
- JSON (bare, in a code fence, or inside the text): read by key and value, never by the words of a "reason". Verdict
  keys (``verdict``, ``answer``, ``label``, ``score`` ...) take a boolean, 0/1 or a word read as below; polar keys say
  what true means: ``supported``/``is_supported``/``entailed`` (true: supported, false: not) against
  ``not_supported``/``unsupported``/``hallucinated`` (true: not supported), ``contradicted`` (true: contradicted),
  ``relevant``/``helpful`` against ``irrelevant``/``not_relevant``. A reply that is exactly 0 or 1 is that answer.
- refusals and non-answers ("I'm sorry", "I cannot ...", "as an AI", "I don't know") are undecided, never a NO.
- echoes of the prompt are not verdicts: its option lists ("YES or NO", "SUPPORTED, CONTRADICTED or NOT_SUPPORTED"),
  a question that starts a sentence ("Is the statement true according to the premise?"), and the texts it quoted.
- words, whole words only ("eyes" holds no "yes", "cannot" no "no"), within a clause: "not"/"n't"/"never" before a
  positive word up to eight words on makes it negative ("does not entail", "is not fully supported"); a negated negative
  word ("not false", "no contradiction") says nothing. A hedged positive ("partially supported") is not supported; for
  relevance ("partly relevant") it is undecided. Idioms are read as meant: "no doubt" / "without a doubt" affirm,
  "absolutely not", "of course not", "not at all" deny.
- a reply that is only a yes or no in another language ("Oui.", "Nein", "是", "いいえ") is that answer; such words
  inside a longer reply are not read.

Verdicts that conflict (a positive and a negative word) are undecided, except a negative with a contradiction, which
is a contradiction ("No, the statement is false.")."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from eval.judges.base import Support

# the questions the judge asks (llm_claims.py builds its prompts from them, and a reply that repeats one is an echo)
SUPPORT_QUESTION = "Is the statement true according to the premise?"
THREE_WAY_QUESTION = "Does the premise support the statement?"
RELEVANCE_QUESTION = "Does the passage contain information that helps answer the question?"

YES, NO, CONTRA, HEDGED = "yes", "no", "contradicted", "hedged"

# terms, after normalisation (lower case, "_" and "-" read as spaces, phrases below joined into one token)
_SUPPORT_TERMS = {
    **dict.fromkeys(("yes", "true", "supported", "supports", "support", "entailed", "entails", "entail",
                     "entailment", "correct"), YES),
    **dict.fromkeys(("no", "nope", "unsupported", "not_supported", "not_enough", "not_mentioned", "not_stated",
                     "not_specified", "not_given", "not_provided", "not_determinable", "insufficient", "neutral",
                     "unclear", "unknown", "undetermined", "unverifiable"), NO),
    **dict.fromkeys(("contradicted", "contradicts", "contradict", "contradiction", "contradictory", "refuted",
                     "refutes", "false", "incorrect"), CONTRA),
}
_RELEVANCE_TERMS = {
    **dict.fromkeys(("yes", "true", "relevant", "helpful", "helps", "help", "useful", "pertinent"), YES),
    **dict.fromkeys(("no", "nope", "false", "irrelevant", "not_relevant", "unrelated", "unhelpful", "useless"), NO),
}
# phrases that are one verdict word: a negation that is part of the verdict ("not mentioned"), not of a positive word
_PHRASES = [(re.compile(p), t) for p, t in (
    (r"\bnot supported\b", "not_supported"), (r"\bnot relevant\b", "not_relevant"),
    (r"\bnot enough\b", "not_enough"), (r"\bnot (?:explicitly |directly )?(?:mentioned|addressed)\b", "not_mentioned"),
    (r"\bnot (?:explicitly |directly )?stated\b", "not_stated"), (r"\bnot specified\b", "not_specified"),
    (r"\bnot given\b", "not_given"), (r"\bnot provided\b", "not_provided"),
    (r"\b(?:cannot|can't|can not) be (?:determined|verified|confirmed|inferred|concluded|deduced)\b",
     "not_determinable"),
    # idioms: "no doubt" / "without a doubt" affirm (no "no" vote); an emphatic "not" that ends its clause denies
    # ("Absolutely not.", "Certainly not, ...") as "not at all" and "by no means" do
    (r"\b(?:no|without(?: a| any)?) doubts?\b|\bno question\b", "surely"),
    (r"\b(?:absolutely|certainly|definitely|surely|clearly|obviously|of course|really) not\b(?=\s*(?:[.,;:!?)\n]|$))",
     "no"),
    (r"\bnot at all\b|\bby no means\b|\bin no way\b", "no"),
)]
_NEGATORS = frozenset(("not", "never", "cannot", "non", "neither", "nor", "without", "hardly"))
_PARTLY = frozenset(("partially", "partly", "partial", "somewhat", "mostly", "largely", "slightly", "marginally",
                     "half", "loosely", "indirectly"))  # a part of the statement: not supported
_UNSURE = frozenset(("arguably", "possibly", "probably", "likely", "maybe", "perhaps", "seemingly"))  # undecided
_NOT_ONLY = frozenset(("only", "just", "merely", "simply"))  # after a negator: "not only ... but also" is no negation
_NEGATION_SPAN = 8  # words after a negator that it reaches, within its clause ("does not contain anything that helps")

_REFUSAL = re.compile(
    r"\bi(?:'m| am) sorry\b|\bsorry\b[^.!?\n]*\b(?:cannot|can't|can not|unable)\b"
    r"|\bi (?:cannot|can't|can not|could not|couldn't|won't|will not|am unable|'m unable|am not able|'m not able)\b"
    r"|\bas an ai\b|\bas a (?:large )?language model\b|\bi (?:don't|do not) know\b|\bno idea\b"
    r"|\b(?:cannot|can't|unable to) (?:help|assist) (?:you|with)\b|\b(?:cannot|can't|unable to) comply\b"
    r"|\bi (?:don't|do not) have (?:enough |sufficient )?(?:information|access|context|knowledge)\b")
_OPTION = (r"\b(?:not supported|not relevant|not helpful|supported|contradicted|irrelevant|relevant|helpful|yes|no"
           r"|true|false)\b")
_OPTION_LIST = re.compile(rf"{_OPTION}(?:\s*(?:,\s*or\b|,|/|\||\bor\b)\s*{_OPTION})+")
_OPTION_WORD = re.compile(_OPTION)
_QUESTION = re.compile(r"(?:^|(?<=[.!?\n:]))\s*(?:is|are|does|do|did|was|were|can|could|would|should|has|have)\b"
                       r"[^.!?\n]*\?")
_CLAUSE = re.compile(r"[.,;:!?\n()\[\]{}\"*|]+|\s[-\u2013\u2014]\s|\bbut\b|\bhowever\b|\bactually\b")
_TOKEN = re.compile(r"[a-z_]+(?:'[a-z]+)*")
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.I)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_FENCE = re.compile(r"```[a-zA-Z]*")
_MIN_ECHO_WORDS = 4  # a quoted text shorter than this may be a verdict itself ("Yes.")

# JSON keys (lower case, "-" and spaces as "_"): the verdict they carry when true, and when false
_SUPPORT_KEYS: dict[str, tuple[str | None, str | None]] = {
    **dict.fromkeys(("supported", "is_supported", "entailed", "is_entailed", "entails", "is_true", "correct",
                     "is_correct", "grounded", "is_grounded", "faithful", "is_faithful"), (YES, NO)),
    **dict.fromkeys(("not_supported", "unsupported", "is_unsupported", "hallucinated", "is_hallucinated",
                     "hallucination", "is_hallucination"), (NO, YES)),
    **dict.fromkeys(("contradicted", "is_contradicted", "contradiction", "contradicts", "is_contradiction",
                     "refuted", "is_refuted"), (CONTRA, None)),
}
_RELEVANCE_KEYS: dict[str, tuple[str | None, str | None]] = {
    **dict.fromkeys(("relevant", "is_relevant", "helpful", "is_helpful", "helps", "useful", "is_useful"), (YES, NO)),
    **dict.fromkeys(("irrelevant", "is_irrelevant", "not_relevant", "unrelated", "not_helpful"), (NO, YES)),
}
_VERDICT_KEYS = frozenset(("verdict", "answer", "label", "result", "decision", "judgement", "judgment", "output",
                           "response", "prediction", "classification", "conclusion", "score", "final_answer",
                           "final_verdict", "rating", "relevance", "support", "supports", "evaluation", "assessment"))


class _Vocabulary:
    def __init__(self, terms: dict[str, str], keys: dict[str, tuple[str | None, str | None]], hedge: str):
        self.terms, self.keys, self.hedge = terms, keys, hedge


_SUPPORT = _Vocabulary(_SUPPORT_TERMS, _SUPPORT_KEYS, hedge=NO)  # "partially supported" is not supported
_RELEVANCE = _Vocabulary(_RELEVANCE_TERMS, _RELEVANCE_KEYS, hedge=HEDGED)  # "partly relevant": ask again


def parse_support(text: str, echoes: Sequence[str] = ()) -> Support | None:
    """The verdict of a reply to a support question (yes/no or 3-way), as a Support; None when undecided.
    ``echoes``: the texts the prompt quoted (premise, statement), which a reply repeating them does not assert."""
    verdict = read_verdict(text, _SUPPORT, echoes)
    if verdict is None:
        return None
    return Support(1.0, 0.0) if verdict == YES else Support(0.0, 1.0) if verdict == CONTRA else Support(0.0, 0.0)


def parse_relevance(text: str, echoes: Sequence[str] = ()) -> float | None:
    """The verdict of a reply to the relevance question: 1.0 (relevant), 0.0 (not), None (undecided)."""
    verdict = read_verdict(text, _RELEVANCE, echoes)
    return None if verdict is None else 1.0 if verdict == YES else 0.0


def without_reasoning(text: str) -> str | None:
    """``text`` without its reasoning blocks; None when a reasoning block is never closed (a reply cut off while the
    model was still thinking: its words are not a verdict)."""
    text = _THINK_BLOCK.sub(" ", text)
    if _THINK_OPEN.search(text):
        return None
    closes = list(_THINK_CLOSE.finditer(text))  # a template that opened the block in the prompt: the reply's tail
    return text[closes[-1].end():] if closes else text


def _lowered(text: str) -> str:
    """Lower case, with the apostrophes models write as the plain one."""
    return text.lower().replace("\u2019", "'").replace("`", "'")


def _refuses(low: str) -> bool:
    """``low`` (lowered) refuses or says it cannot tell."""
    return bool(_REFUSAL.search(" ".join(low.split())))


def declined(text: str) -> bool:
    """The reply refuses or says it cannot tell ("I'm sorry, I cannot help with that.", "I don't know."): why a
    verdict is undecided, said as such rather than as unparseable output."""
    return _refuses(_lowered(without_reasoning(text) or ""))


_WHITESPACE_RUN = re.compile(r"\s{2,}")


# a whole reply of one yes or no in another language ("Oui.", "Nein", "是", "いいえ"): a judge model may answer in the
# language of the texts it read. Only a reply that is nothing else: inside English prose these words mean other things
_FOREIGN_ONLY = {
    **dict.fromkeys(("oui", "ja", "sí", "si", "sim", "да", "так", "tak", "evet", "是", "是的", "对", "對", "はい",
                     "네", "예", "có", "ya", "ναι", "igen", "ano", "kyllä", "jah"), YES),
    **dict.fromkeys(("non", "nein", "nee", "não", "nao", "нет", "ні", "nie", "hayır", "否", "不", "不是", "不对",
                     "いいえ", "아니요", "아니오", "không", "tidak", "όχι", "nem", "ne", "ei", "nej"), NO),
}


def _foreign_only(text: str) -> str | None:
    word = text.strip().strip(".!。！ \"'").lower()
    return _FOREIGN_ONLY.get(word)


def read_verdict(text: str, vocab: _Vocabulary, echoes: Sequence[str] = ()) -> str | None:
    # a run of white space is one space, or one line end where it holds one (the patterns below would rescan a long
    # run from each of its positions: 20,000 line ends took seconds)
    text = _WHITESPACE_RUN.sub(lambda m: "\n" if "\n" in m.group() else " ", text)
    body = without_reasoning(text)
    if body is None:
        return None
    foreign = _foreign_only(body)
    if foreign is not None:
        return foreign
    found, verdict, rest = _json_verdict(body, vocab)
    if found:
        return verdict
    return _text_verdict(rest, vocab, echoes)


# --- JSON -----------------------------------------------------------------------------------------------------------
def _json_verdict(text: str, vocab: _Vocabulary) -> tuple[bool, str | None, str]:
    """(whether the reply's JSON carried a verdict key, the verdict it gives, the text outside its JSON values)."""
    plain = _FENCE.sub(" ", text).strip()
    if re.fullmatch(r"[01](?:\.0+)?", plain):  # a bare 0 or 1
        return True, YES if float(plain) == 1 else NO, ""
    decoder = json.JSONDecoder()
    votes: list[str | None] = []
    outside, pos, found = [], 0, False
    for m in re.finditer(r"[{\[]", plain):
        if m.start() < pos:
            continue  # inside a value already read
        try:
            obj, end = decoder.raw_decode(plain, m.start())
        except (ValueError, RecursionError):  # not JSON, or nested past the decoder's depth ("[[[[..."): text
            continue
        if not isinstance(obj, dict | list):
            continue
        found = True
        votes.extend(_key_votes(obj, vocab))
        outside.append(plain[pos : m.start()])
        pos = end
    if not found:
        return False, None, text
    rest = " ".join([*outside, plain[pos:]])
    if not votes:
        return False, None, rest  # JSON without a verdict key: the words around it may hold one
    decided = [v for v in votes if v is not None]
    return True, _decide(decided) if decided else None, rest


def _key_votes(obj: Any, vocab: _Vocabulary, depth: int = 0) -> Iterable[str | None]:
    """One vote per verdict key of a JSON object (None: the key is there but its value says nothing)."""
    if depth > 3:
        return
    items = obj.items() if isinstance(obj, dict) else ((None, v) for v in obj)
    for key, value in items:
        if isinstance(value, dict | list):
            yield from _key_votes(value, vocab, depth + 1)
            continue
        name = re.sub(r"[\s-]+", "_", key.strip().lower()) if isinstance(key, str) else None
        if name in vocab.keys:
            when_true, when_false = vocab.keys[name]
            truth = _truth(value)
            if truth is None:
                yield _text_verdict(value, vocab) if isinstance(value, str) else None
            else:
                yield when_true if truth else when_false
        elif name in _VERDICT_KEYS:  # a boolean or 0/1; a word is read as words ("false": contradicted)
            numeric = isinstance(value, str) and re.fullmatch(r"\s*[01](?:\.0+)?\s*", value)
            truth = _truth(value) if not isinstance(value, str) or numeric else None
            if truth is not None:
                yield YES if truth else NO
            else:
                yield _text_verdict(value, vocab) if isinstance(value, str) else None


def _truth(value: Any) -> bool | None:
    """A JSON value read as true or false: booleans, 0 and 1, and the words yes/no/true/false/y/n."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return True if value == 1 else False if value == 0 else None
    if isinstance(value, str):
        word = value.strip().strip(".!").lower()
        if re.fullmatch(r"[01]\.0+", word):
            word = word[0]
        return True if word in ("yes", "true", "y", "1") else False if word in ("no", "false", "n", "0") else None
    return None


# --- words ----------------------------------------------------------------------------------------------------------
def _text_verdict(text: str, vocab: _Vocabulary, echoes: Sequence[str] = ()) -> str | None:
    low = _lowered(text)
    if _refuses(low):
        return None
    for echo in echoes:  # the premise, statement, question or passage quoted back
        words = echo.lower().replace("\u2019", "'").split()
        if len(words) >= _MIN_ECHO_WORDS:
            low = re.sub(r"\s+".join(map(re.escape, words)), " ", low)
    low = re.sub(r"[ \t\r\f\v]+", " ", low)
    low = re.sub(r"(?<=[a-z])[_-](?=[a-z])", " ", low)
    low = _QUESTION.sub(" ", low)  # "Is the statement true according to the premise?": asked, not answered
    low = _OPTION_LIST.sub(lambda m: " " if _is_option_list(m.group(0), vocab) else m.group(0), low)
    for pattern, token in _PHRASES:
        low = pattern.sub(f" {token} ", low)
    votes: list[str] = []
    for clause in _CLAUSE.split(low):
        votes.extend(_clause_votes(_TOKEN.findall(clause), vocab))
    return _decide(votes)


def _is_option_list(text: str, vocab: _Vocabulary) -> bool:
    """An option list the prompt gave ("yes or no"): a positive and a negative option offered side by side."""
    kinds = {vocab.terms.get(w.replace(" ", "_")) for w in _OPTION_WORD.findall(text)}
    return YES in kinds and bool(kinds - {YES, None})


def _clause_votes(words: list[str], vocab: _Vocabulary) -> Iterable[str]:
    i = 0
    while i < len(words):
        word = words[i]
        negator = word in _NEGATORS or word.endswith("n't")
        if negator and i + 1 < len(words) and words[i + 1] in _NOT_ONLY:
            i += 2  # "not only supported", "doesn't just support": more than, not less
            continue
        if negator:
            ahead = [(k, vocab.terms.get(w)) for k, w in enumerate(words[i + 1 : i + 1 + _NEGATION_SPAN], i + 1)]
            hit = next(((k, t) for k, t in ahead if t is not None), None)
            if hit is not None:
                if hit[1] == YES:  # "not supported", "does not entail", "isn't relevant"
                    yield NO
                i = hit[0] + 1  # a negated negative ("not false") says nothing
                continue
        elif word in _PARTLY | _UNSURE and i + 1 < len(words) and vocab.terms.get(words[i + 1]) == YES:
            yield vocab.hedge if word in _PARTLY else HEDGED  # "partially supported"; "probably relevant"
            i += 2
            continue
        elif word == "no" and i + 1 < len(words) and vocab.terms.get(words[i + 1]) is not None:
            if vocab.terms[words[i + 1]] == YES:  # "no support"-like: a negated positive
                yield NO
            i += 2  # "no contradiction": says nothing
            continue
        term = vocab.terms.get(word)
        if term is not None:
            yield term
        i += 1


def _decide(votes: Iterable[str]) -> str | None:
    """One verdict from a reply's votes: they agree, or a negative comes with a contradiction; otherwise None."""
    kinds = set(votes)
    if not kinds or HEDGED in kinds:
        return None
    if kinds == {YES}:
        return YES
    if YES in kinds:
        return None  # a positive and a negative: undecided
    return CONTRA if CONTRA in kinds else NO
