"""A claim that repeats its evidence with one word turned to its opposite: "Paged attention should be disabled" against
"Paged attention should be enabled", "FP8 is supported on the A100" against "FP8 is not supported on the A100",
"quantise before fine-tuning" against "quantise after fine-tuning". A learned judge and word overlap both read such a
pair as a near copy (every other word is shared), which is how an answer copied from a stale document, or a yes/no
question's answer flipped without a yes or no, passes for grounded. Read like key_facts' numbers: exactly, and only
where the claim is otherwise the evidence's own statement.

``flipped`` fires only when one clause of the evidence holds every other content word of the claim (the same statement)
and either (a) its polarity is the opposite (one is negated: "not", "never", "without", "no longer"; "not only",
"whether or not", "may or may not" are no negation; a verb that denies the next is one: "fails to", "refused to",
"unable to"; a claim's opening "No" is its negation, "No, ..." an answer word) and the negation denies a word the other
side says (a bare "The bridge" is no opposite of "The bridge was never completed"), or (b) the claim has one word of an
antonym pair where that clause has the other, and not the claim's own word, or (c) one all-capital acronym of the claim
stands where the clause has another ("CPU memory" for "GPU memory"), or (d) the two sides of a comparison or an order
are exchanged ("TGI is faster than vLLM" for "vLLM is faster than TGI"). A clause of the evidence is split at ",;:()", a
spaced dash and at "but", "while", "whereas", "although", "though", "however", "yet", "except"; a question ("Should it
be enabled?") and a condition ("if it is not warm", "unless ...") assert nothing and are never read; a negation about a
statement the text reports ("It is not widely known that X", "This does not mean that X", "We cannot guarantee that X")
is not X's opposite and is never read either ("It is not true that X" is); no rule fires where some clause of the
evidence, however long, says what the claim says. A claim of several clauses is left to the judge. English only: a claim
or evidence in another language (letters outside plain Latin) is never overruled here."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cached_property

from eval.judges.features import negated
from eval.tokens import content_tokens
from eval.yes_no import after_answer_word

# opposites, read by their stems (_stem: "enable", "enabled", "enables", "enabling" are one)
_PAIRS = (
    "enable disable", "increase decrease", "increase reduce", "higher lower", "larger smaller", "bigger smaller",
    "faster slower", "more less", "more fewer", "before after", "above below", "maximum minimum", "max min",
    "include exclude", "required optional", "mandatory optional", "synchronous asynchronous", "sync async",
    "add remove", "allow forbid", "allow prohibit", "accept reject", "success failure", "succeed fail",
    "supported unsupported", "compatible incompatible", "available unavailable", "possible impossible",
    "valid invalid", "correct incorrect", "public private", "static dynamic", "lossless lossy", "always never",
    "earlier later", "older newer", "upper lower", "inside outside", "internal external", "local remote",
    "positive negative", "true false", "improve degrade", "improve worsen", "gain loss", "raise lower",
    "encrypt decrypt", "lock unlock", "safe unsafe", "stable unstable", "deterministic nondeterministic",
    "first last", "minor major", "weak strong", "cheaper costlier",
    "highest lowest", "largest smallest", "fastest slowest", "best worst", "better worse", "ascending descending",
    "sparse dense", "explicit implicit", "manual automatic", "manually automatically", "online offline",
    "blocking nonblocking", "mutable immutable", "start stop", "single multiple", "deprecated recommended",
)


def _stem(word: str) -> str:
    """A crude stem: 'enabled', 'enables', 'enabling' -> 'enabl'; 'GPUs' -> 'gpu'; 'synchronously' -> 'synchronou';
    short words as they are."""
    w = word.lower()
    if w.endswith("ly") and len(w) >= 7:
        w = w[:-2]
    for suffix in ("ing", "ed", "es", "s", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


OPPOSITES: dict[str, frozenset[str]] = {}
for _a, _b in (tuple(_stem(w) for w in pair.split()) for pair in _PAIRS):
    OPPOSITES[_a] = OPPOSITES.get(_a, frozenset()) | {_b}
    OPPOSITES[_b] = OPPOSITES.get(_b, frozenset()) | {_a}

_WORD = re.compile(r"[a-z]+")
_CLAUSES = re.compile(r"\s*[;:,()]\s*|\s+-+\s+|\s+(?:but|while|whereas|although|though|however|yet|except)\b\s*"
                      r"|(?<=[.!?])\s+", re.IGNORECASE)
_CONDITION = re.compile(r"^\W*(?:if|unless|whether|when|whenever|in case|provided)\b", re.IGNORECASE)
# "not only", "whether or not", "may or may not", "could or couldn't": no denial
_NOT_ONLY = re.compile(r"\bnot\s+(?:only|just|merely|simply)\b|\bor\s+not\b|\b(\w+)\s+or\s+\1(?:\s+not\b|n't\b)",
                       re.IGNORECASE)
# a capitalised negation inside a sentence is part of a title ("To Be or Not to Be"), not a denial
_TITLE_NEGATION = re.compile(r"(?<!^)(?<![.!?:;]\s)(?<![.!?:;])\b(?:Not|No|Never|None|Nothing|Without|Cannot)\b")
_LEADING = re.compile(r"^(?:but|and|or|so|then|while|whereas|although|though|however|yet)\b\s*", re.IGNORECASE)
_NEGATION_WORDS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "without"})
# a verb that denies the one after it: "fails to converge" is "does not converge", "refused to start", "unable to load"
_DENYING_VERB = re.compile(r"\b(?:fail(?:s|ed|ing)?|refus(?:e|es|ed|ing)|unable)\s+to\s+(?=\w)", re.IGNORECASE)


_PLAIN = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": " - ",
                        "\u00a0": " ", "\u202f": " ", "\u2009": " "})


def _english(text: str) -> str | None:
    """``text`` with typographic quotes, dashes and spaces made plain ("isn\u2019t" reads as "isn't"), or None when more
    than a few of its letters are outside plain Latin: the rule reads English only."""
    plain = text.translate(_PLAIN)
    letters = [c for c in plain if c.isalpha()]
    if sum(not c.isascii() for c in letters) > max(2, 0.03 * len(letters)):  # "café", "naïve" are English too
        return None
    return plain


def _counts(text: str) -> Counter[str]:
    return Counter(_stem(w) for w in _WORD.findall(text.lower()))


def _content(text: str) -> set[str]:
    """Stems of the content words ``text`` says, without its negations (nor a verb that denies: "fails to")."""
    return {_stem(w) for w in content_tokens(_DENYING_VERB.sub(" not ", text)) if w not in _NEGATION_WORDS}


# a negation before a verb of knowing or saying with a "that" after it is about the statement, not its opposite: "It
# is not widely known that X" presupposes X, "This does not mean that X" and "We cannot guarantee that X" leave X open.
# Only "not true / not the case / not correct that X" deny X.
_ABOUT_A_STATEMENT = re.compile(
    r"(?:\b(?:not|no|never|nobody|cannot)\b|n't\b)(?:\s+\w+){0,3}?\s+(?:know|known|knew|think|thought|believe|believed|say|"
    r"said|says|mean|means|meant|recogni[sz]ed|clear|obvious|evident|surprising|expect|expected|guarantee|imply|"
    r"implies|suggest|suggests|show|shows|shown|prove|proven|proved|claim|claims|claimed|state|states|stated|mention|"
    r"mentions|mentioned|aware|sure|certain|doubt|deny|denied|realise|realize|realised|realized|notice|noticed|"
    r"assume|assumed|confirm|confirmed)\s+that\b", re.IGNORECASE)


_EVERYTHING = ""  # what a negation at the end denies ("I am not.": the whole statement)


def _denied(text: str) -> frozenset[str]:
    """Stems of the (up to two) words after each negation of ``text``: what it denies ("never completed": 'complet';
    "no longer supported": 'longer', 'support'; "I am not": _EVERYTHING)."""
    words = content_tokens(_DENYING_VERB.sub(" not ", text))
    denied: set[str] = set()
    for i, n in enumerate(words):
        if n in _NEGATION_WORDS:
            after = [_stem(w) for w in words[i + 1:i + 3] if w not in _NEGATION_WORDS]
            denied.update(after or [_EVERYTHING])
    return frozenset(denied)


def _denies(denied: frozenset[str], said: frozenset[str] | set[str]) -> bool:
    """Whether a negation that denies ``denied`` denies something of a statement whose words are ``said``."""
    return _EVERYTHING in denied or bool(denied & said)


def _negated(text: str) -> bool | None:
    """Whether ``text`` denies what it says; None when its negation is about a statement it reports ("It is not
    widely known that X"): then which way X goes is not read here."""
    text = _NOT_ONLY.sub(" ", _TITLE_NEGATION.sub(" ", text.strip()))
    if _ABOUT_A_STATEMENT.search(text):
        return None
    return negated(text) != bool(_DENYING_VERB.search(text))  # "did not fail to start" started


def clauses(text: str) -> list[str]:
    """The statements of ``text``: split at clause joints, without questions and conditions."""
    parts = [_LEADING.sub("", p.strip()) for p in _CLAUSES.split(text) if p and p.strip()]
    parts = [p for p in parts if p]
    return [p for p in parts if not p.endswith("?") and not _CONDITION.match(p)]


@dataclass
class _Clause:
    text: str
    words: frozenset[str]  # stems of every word and of the content words
    content: frozenset[str]  # stems of the content words
    negative: bool | None  # None: its negation is about a statement it reports (_negated)
    counts: Counter[str]  # stems of every word, counted

    @classmethod
    def of(cls, text: str) -> _Clause:
        content, counts = _content(text), _counts(text)
        return cls(text, frozenset(content | counts.keys()), frozenset(content), _negated(text), counts)

    @cached_property
    def denied(self) -> frozenset[str]:
        """Stems of what its negations deny (_denied), read once, when a claim of the other polarity holds its words."""
        return _denied(self.text)

    @cached_property
    def sides(self) -> tuple[str, set[str], set[str]] | None:
        """Its comparison's or order's pivot and the two sides (_sides), read once, when a claim has a pivot."""
        return _sides(self.text)


class Said:
    """The clauses of an evidence text, read once for all the claims checked against it (none when it is not English:
    then no claim is overruled)."""

    def __init__(self, evidence: str):
        plain = _english(evidence)
        self.clauses = [_Clause.of(k) for k in clauses(plain)] if plain is not None else []

    def flipped(self, claim: str) -> str | None:
        """Why ``claim`` states the opposite of this evidence (a note), or None: some clause holds every other content
        word of the claim with the opposite polarity or the other word of an antonym pair, and no clause holds the
        claim as it is."""
        plain = _english(claim)
        if not self.clauses or plain is None:
            return None
        claim = plain
        own = clauses(after_answer_word(claim.strip()))  # "No, it is not." (not "No GPU supports it.")
        if len(own) != 1 or claim.rstrip().endswith("?"):
            return None
        body = own[0]
        content = _content(body)
        if len(content) < 2:
            return None
        negative = _negated(body)
        if negative is None:
            return None  # "It is not widely known that X" neither says X nor denies it in a way read here
        # the claim's own statement: a clause with every content word of the claim and few others ("Two men jumping
        # on the freeway" is not "Two men in Germany jumping over a rail on the freeway ... without shirts" negated)
        close = [k for k in self.clauses if len(k.content - content) <= max(2, len(content) // 2)]
        # ... and any clause, however long, that holds every content word of the claim in its polarity says it
        stated = any(content <= k.words and k.negative == negative for k in self.clauses)
        # ... and the negation of one side denies a word the other side says: "The section around the crossing" is
        # no opposite of "The section around the crossing was never completed", which denies only 'completed'
        denied = _denied(body) if negative else frozenset()
        same = [k for k in close if content <= k.words and k.negative is not None
                and (_denies(denied, k.words) if negative else _denies(k.denied, content))]
        if same and not stated:
            return f"its evidence says the opposite: \"{same[0].text}\""
        # by counts: "Increasing the batch size decreases throughput" holds "increase" once, as its subject, and the
        # evidence's "Increasing the batch size increases throughput" twice
        claim_counts = _counts(body)
        for word in sorted(claim_counts.keys() & OPPOSITES.keys()):
            rest = content - {word}
            # a qualifier more is usual here ("... increases throughput until memory runs out"): an antonym pair is
            # a rarer accident than a "no" or "without" that belongs to some other phrase of a long clause
            aligned = [k for k in self.clauses if k.negative == negative and rest <= k.words
                       and len(k.content - content) <= max(4, len(content))]
            if any(k.counts[word] >= claim_counts[word] for k in aligned):
                continue  # some clause says it as the claim does
            for k in aligned:
                opposite = sorted(o for o in OPPOSITES[word] if k.counts[o] > claim_counts[o])
                if opposite:
                    return (f"it says '{_written(body, word)}' where its evidence says "
                            f"'{_written(k.text, opposite[0])}': \"{k.text}\"")
        return (None if stated else self._swapped(body, content, negative, close)) \
            or self._reversed(body, content, negative, self.clauses)

    @staticmethod
    def _reversed(body: str, content: set[str], negative: bool, clauses: list[_Clause]) -> str | None:
        """The same words around the same pivot, its two sides exchanged ("vLLM is faster than TGI" against "TGI is
        faster than vLLM", "quantise before fine-tuning" against "fine-tune before quantising")."""
        mine = _sides(body)
        if mine is None:
            return None
        pivot, left, right = mine
        turned = None
        for k in clauses:
            theirs = k.sides
            if k.negative != negative or theirs is None or theirs[0] != pivot:
                continue
            if left <= theirs[1] and right <= theirs[2]:
                return None  # some clause says it in the claim's order
            moved, back = left - theirs[1], right - theirs[2]  # what left one side, and what left the other
            if content == k.content and moved and back and moved <= theirs[2] and back <= theirs[1]:
                turned = turned or k
        return None if turned is None else \
            f"its evidence says it the other way round around '{pivot}': \"{turned.text}\""

    @staticmethod
    def _swapped(body: str, content: set[str], negative: bool, close: list[_Clause]) -> str | None:
        """One acronym of the claim in place of another of the evidence's, every other content word shared ("stored in
        CPU memory" against "stored in GPU memory", "over UDP" against "over TCP"): the same statement about another
        thing. Acronyms only: a name may be a more specific true one ("in Paris" for "in France")."""
        mine = _acronyms(body)
        if not mine:
            return None
        for k in close:
            if k.negative != negative:
                continue
            gone, new = content - k.content, k.content - content
            if len(gone) == 1 and len(new) == 1 and (a := mine.get(next(iter(gone)))) \
                    and (b := _acronyms(k.text).get(next(iter(new)))):
                return f"it says '{a}' where its evidence says '{b}': \"{k.text}\""
        return None


_PIVOT = re.compile(r"\b(than|before|after|over|into|from|to)\b", re.IGNORECASE)


def _sides(text: str) -> tuple[str, set[str], set[str]] | None:
    """The pivot word of a comparison or an order ("faster than", "before", "prefer X over Y", "converts X into Y",
    "from X to Y") and the content words on each side of it; None without exactly one."""
    found = _PIVOT.findall(text)
    if len(found) != 1:
        return None
    left, right = _PIVOT.split(text, maxsplit=1)[0::2]
    return found[0].lower(), _content(left), _content(right)


_ACRONYM = re.compile(r"\b(?![IVXLCDM]+\b)[A-Z]{2,6}s?\b")  # not a Roman numeral ("George III")


def _acronyms(text: str) -> dict[str, str]:
    """The all-capital words of ``text`` ('GPU', 'TCP', 'CPUs'), by stem."""
    return {_stem(w): w for w in _ACRONYM.findall(text)}


def _written(text: str, stem: str) -> str:
    return next((w for w in _WORD.findall(text.lower()) if _stem(w) == stem), stem)


def flipped(claim: str, evidence: str) -> str | None:
    """Why ``claim`` states the opposite of ``evidence`` (see Said.flipped), or None."""
    return Said(evidence).flipped(claim)
