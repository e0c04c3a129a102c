"""The training pool for the compact judges: claim-level examples, hard negatives, balance and the held-out split
(the sources and their readers are in ``sources.py``, the data manifest in ``manifest.py``).

``build_examples`` turns records into what a cross-encoder sees at inference. Claim sources (answers, dialogue
turns, long-answer claims): the text split into claims with ``eval.claims.decompose``, each claim paired with its
best-matching sentence window of the evidence, so a premise is one or two sentences, not a whole document. A
supported record gives one example per claim; an unsupported one gives only its least-supported claim (its other
claims may well be true). Hard negatives are made from supported claims by changing one number, one named entity
(to one the premise does not mention) or the polarity of the verb, or by cutting the premise to a heading-like
fragment (a title, a name) that shares all its words with the claim but cannot support it. NLI sources: the pair as
it is. Relevance sources (``relevance_examples``): the question against the passage window a cheap ranker puts
first, as the relevance judge sees it. Each source is balanced to 1:1 and capped, so that no source's construction
artefacts (HaluEval's short right answers against long hallucinated sentences) dominate.

The dev files (ares, wice, halueval/qa_dev) are never trained on. They are read only when present, for one thing:
dropping any training record whose text or question also occurs there (the count goes into the manifest,
``manifest.py``).
"""
from __future__ import annotations

import hashlib
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from eval.claims import decompose, sentence_windows, split_sentences
from judge_train.sources import (CLAIM_SOURCES, NLI_SOURCES, RELEVANCE_SOURCES, SOURCES, PoolRecord, read_nomiracl_sets,
                                      _jsonl, norm_text, read_source)
from eval.tokens import content_tokens

DEV_FILES = ("ares/dev.jsonl", "wice/dev.jsonl", "halueval/qa_dev.jsonl")
_norm = norm_text


@dataclass(frozen=True)
class Example:
    """One (premise, hypothesis) -> label pair as the cross-encoder sees it."""

    premise: str
    hypothesis: str
    label: int
    source: str
    kind: str  # claim | claim-min | claim-extractive | nli | question | relevance | pair:negation | hardneg:number |
    #            hardneg:entity | hardneg:negation | hardneg:negation-premise | hardneg:thin-premise
    group: str


# ------------------------------------------------------------------------------------------------ configuration


# Per source, examples of each label kept after balancing. The claim-level pool, the attribution set and general NLI
# (the standard first stage of every judge that transfers: MiniCheck, AlignScore, HHEM).
CLAIM_CAPS = {"halueval_qa": 1500, "halueval_dialogue": 400, "factcheck_gpt": 900, "begin": 500, "faithdial": 700,
              "dialfact": 150, "attributionbench": 900}
NLI_CAPS = {"mnli": 6000, "snli": 3000, "cad_snli": 3500, "scitail": 800}
SUPPORT_CAPS = {**CLAIM_CAPS, **NLI_CAPS}
RELEVANCE_CAPS = {"qnli": 2600, "nomiracl": 2200, "halueval_qa": 2000, "factcheck_gpt": 900}


class DataConfig(BaseModel):
    """What goes into the training set; saved with the weights (config.json) so a run can be repeated."""

    model_config = ConfigDict(extra="forbid")

    data_dir: str = "../shared/data/train"
    # per source: how many examples of each label to keep after balancing (0 drops the source)
    cap_per_label: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=lambda: dict(SUPPORT_CAPS))
    hard_negative_share: float = Field(0.35, ge=0, le=1)  # at most this share of a source's negatives is synthetic
    heldout_percent: int = Field(15, ge=0, le=50)  # groups hashed into the held-out slice (combiner fit, choices)
    max_premise_words: int = Field(80, ge=1)
    max_claims_per_record: int = Field(3, ge=1)
    factcheck_partial_as: int | None = None  # None drops partially-supported claims; 0 counts them as unsupported
    # (knowledge, question) -> does the passage answer it: HaluEval QA questions against their own knowledge (1) and
    # against the most word-overlapping other row's knowledge (0); teaches the relevance signal. 0 turns it off.
    question_examples_per_label: int = Field(500, ge=0)
    negation_pair_rate: float = Field(0.2, ge=0, le=1)  # share of supported claims given a mirrored-negation pair
    negation_pairs: bool = True  # mirrored-negation pairs at all (off: 'not' in a claim becomes a cue for 'unsupported')
    halueval_extractive: bool = True  # add the knowledge sentence stating a HaluEval right answer as a positive
    drop_dev_overlap: bool = True
    # two-part claims ("A, and b") per source and label: supported when the premise holds both parts' evidence, not
    # when one part's evidence is swapped for an unrelated passage (partial support, WiCE's commonest failure).
    # 0 (the default, and every recipe before it) makes none.
    conjunction_per_label: int = Field(0, ge=0)
    # NoMIRACL gives its positives only per set (some of the 10 retrieved passages answers the question, which one is
    # not said), so without this every NoMIRACL passage the judge trains on is a negative and "a Wikipedia passage
    # of this style" becomes a cue for "irrelevant". A CrossEncoder folder here (an earlier relevance stage) scores
    # each passage of the training side's answer-bearing sets; its best ``nomiracl_mil_per_set`` become positives
    # (multiple-instance learning: the set's label, the teacher's choice of passage). None (the default, and every
    # recipe before it) adds none. The held-out side's sets are never relabelled: they measure.
    nomiracl_mil_teacher: str | None = None
    nomiracl_mil_per_set: int = Field(1, ge=1, le=3)
    # task 'rerank' only (judge_train/rerank_data.py): cap_per_label then counts groups per source, each the query's
    # relevant passage and this many negatives, every passage cut to a window of this many words
    rerank_negatives: int = Field(4, ge=1, le=15)
    rerank_window_words: int = Field(100, ge=20, le=400)

    @field_validator("cap_per_label")
    @classmethod
    def _known_sources(cls, caps: dict[str, int]) -> dict[str, int]:
        """A misspelled source would train on nothing from it, in silence: refused, naming it."""
        unknown = [name for name in caps if name not in SOURCES]
        if unknown:
            raise ValueError(f"'{unknown[0]}' is not a training source (known: {', '.join(SOURCES)})")
        return caps


# ------------------------------------------------------------------------------------------ premise construction


def _precision(premise_tokens: set[str], claim_tokens: list[str]) -> float:
    return sum(t in premise_tokens for t in claim_tokens) / len(claim_tokens) if claim_tokens else 0.0


def _clip_words(text: str, n: int) -> str:
    words = text.split()
    return text if len(words) <= n else " ".join(words[:n])


def best_premise(claim: str, evidence: str, max_words: int = 80) -> tuple[str, float]:
    """The premise the judge would see for this claim: the whole evidence when it is short, else the sentence
    window (one or two sentences) with the highest unigram precision for the claim. Returns (premise, precision)."""
    c = content_tokens(claim)
    if len(evidence.split()) <= max_words:
        return evidence, _precision(set(content_tokens(evidence)), c)
    windows = sentence_windows(evidence) or [evidence]
    scored = [(_precision(set(content_tokens(w)), c), -len(w), i) for i, w in enumerate(windows)]
    p, _, i = max(scored)
    return _clip_words(windows[i], max_words), p


# ----------------------------------------------------------------------------------------------- hard negatives

_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_ENTITY = re.compile(r"\b[A-Z][\w'’.&-]*(?:\s+(?:of|de|del|la|van|von|the|and|&)?\s*[A-Z][\w'’.&-]*)*")
_ENTITY_STOP = frozenset("The A An In On At It He She They We I You This That These Those There Its His Her Their "
                         "But And Or If When While As After Before Yes No Not My Our Your Also However So".split())
_AUX = re.compile(r"\b(is|are|was|were|has|have|had|can|could|will|would|should|does|did|do|may|must)\b(?!\s+not\b)")
_NEGATED = re.compile(r"\b(is|are|was|were|has|have|had|can|could|will|would|should|does|did|do|may|must)\s+not\b")
_CONTRACTED = {"isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were", "doesn't": "does", "don't": "do",
               "didn't": "did", "can't": "can", "couldn't": "could", "won't": "will", "wouldn't": "would",
               "hasn't": "has", "haven't": "have", "hadn't": "had", "shouldn't": "should"}


def entities(text: str) -> list[str]:
    """Capitalised spans (names, titles, places), minus sentence-initial function words."""
    out = []
    for m in _ENTITY.finditer(text):
        for span in re.split(r"[.]\s+", m.group(0)):  # "Americans. In" is two spans, not one name
            span = span.strip(" .'’")
            words = span.split()
            while words and words[0] in _ENTITY_STOP:
                words = words[1:]
            span = " ".join(words)
            if len(span) > 1 and span[0].isupper():
                out.append(span)
    return out


def swap_number(claim: str, premise: str, rng: random.Random) -> str | None:
    """Change one number of the claim to a nearby one the premise does not contain."""
    nums = [m for m in _NUMBER.finditer(claim)]
    rng.shuffle(nums)
    for m in nums:
        raw = m.group(0)
        try:
            value = float(raw.replace(",", ""))
        except ValueError:
            continue
        for _ in range(8):
            if raw.isdigit() and 1000 <= value <= 2100:  # a year
                new = str(int(value) + rng.choice([-1, 1]) * rng.randint(1, 12))
            elif "." in raw:
                new = f"{value * rng.choice([0.5, 0.8, 1.25, 1.5, 2.0]):.{len(raw.split('.')[1])}f}"
            else:
                v = int(value)
                new = str(max(0, v + rng.choice([-1, 1]) * rng.randint(1, max(2, v // 3 + 1))))
                if v >= 1000 and "," in raw:
                    new = f"{int(new):,}"
            if new != raw and new not in premise:
                return claim[: m.start()] + new + claim[m.end():]
    return None


def swap_entity(claim: str, premise: str, pool: list[str], rng: random.Random) -> str | None:
    """Replace one named entity of the claim (one the premise mentions) with another from ``pool`` that the
    premise does not mention: the claim now says something the premise does not support."""
    ents = [e for e in dict.fromkeys(entities(claim)) if e.lower() in premise.lower()]
    if not ents or not pool:
        return None
    target = rng.choice(ents)
    low = premise.lower()
    n_words = len(target.split())
    for _ in range(20):
        cand = rng.choice(pool)
        if cand.lower() in low or cand.lower() == target.lower() or cand.lower() in claim.lower():
            continue
        if abs(len(cand.split()) - n_words) > 1:
            continue
        return re.sub(re.escape(target), cand, claim, count=1)
    return None


def flip_negation(claim: str, rng: random.Random) -> str | None:
    """Remove the claim's negation, or negate its first auxiliary verb."""
    m = _NEGATED.search(claim)
    if m:
        return claim[: m.start()] + m.group(1) + claim[m.end():]
    for short, full in _CONTRACTED.items():
        m = re.search(rf"\b{re.escape(short)}\b", claim, flags=re.IGNORECASE)
        if m:
            return claim[: m.start()] + full + claim[m.end():]
    m = re.search(r"\bnever\b", claim)
    if m:
        return claim[: m.start()] + "always" + claim[m.end():]
    m = _AUX.search(claim)
    if m:
        return claim[: m.end()] + " not" + claim[m.end():]
    return None


def negate_premise_like(claim: str, new_claim: str, premise: str) -> str | None:
    """The premise with the same polarity change that turned ``claim`` into ``new_claim`` (an auxiliary gaining or
    losing 'not' before the same word), or None when the premise has no such spot. With it, 'not' in a claim stops
    being a cue by itself: a negated claim over a negated premise is supported."""
    m = _NEGATED.search(claim)
    if m and _NEGATED.sub(lambda k: k.group(1), claim, count=1) == new_claim:  # 'not' was removed
        nxt = claim[m.end():].split()[:1]
        if not nxt:
            return None
        pm = re.search(rf"\b({m.group(1)})\s+not\s+(?={re.escape(nxt[0])})", premise, flags=re.IGNORECASE)
        return premise[: pm.start()] + pm.group(1) + " " + premise[pm.end():] if pm else None
    m = _AUX.search(claim)
    if m and claim[: m.end()] + " not" + claim[m.end():] == new_claim:  # 'not' was inserted
        nxt = claim[m.end():].split()[:1]
        if not nxt:
            return None
        pm = re.search(rf"\b{m.group(1)}\b(?=\s+{re.escape(nxt[0])})", premise, flags=re.IGNORECASE)
        return premise[: pm.end()] + " not" + premise[pm.end():] if pm else None
    return None


def thin_premise(claim: str, premise: str, rng: random.Random) -> str | None:
    """A premise too thin to support a claim of several facts: a heading-like fragment (one of the claim's names, or
    the first few words of its premise, sometimes as a markdown heading). Windows like that are everywhere in real
    chunks (titles, headings, bylines) and share all their words with the claim."""
    claim_tokens = content_tokens(claim)
    if len(claim_tokens) < 5:
        return None
    names = [e for e in entities(claim) if len(e.split()) <= 4]
    words = premise.split()
    options = names + ([" ".join(words[: rng.randint(2, 5)])] if len(words) > 6 else [])
    rng.shuffle(options)
    for text in options:
        if _precision(set(content_tokens(text)), claim_tokens) <= 0.5 and content_tokens(text):
            return rng.choice(["", "", "# ", "## "]) + text
    return None


def hard_negative(claim: str, premise: str, pool: list[str], rng: random.Random) -> tuple[str, str, str] | None:
    """One unsupported variant of a supported (premise, claim): the claim with a number, a named entity or the
    polarity changed, or the premise cut to a heading-like fragment. Returns (premise, claim, kind) or None."""
    makers = [("number", lambda: (premise, swap_number(claim, premise, rng))),
              ("entity", lambda: (premise, swap_entity(claim, premise, pool, rng))),
              ("negation", lambda: (premise, flip_negation(claim, rng))),
              ("thin-premise", lambda: (thin_premise(claim, premise, rng), claim))]
    rng.shuffle(makers)
    for kind, make in makers:
        new_premise, new_claim = make()
        if new_premise and new_claim and (kind == "thin-premise" or _norm(new_claim) != _norm(claim)):
            return new_premise, new_claim, f"hardneg:{kind}"
    return None


def swap_records(records: Iterable[PoolRecord], per_label: int, seed: int) -> list[PoolRecord]:
    """A synthetic source, 'synthetic_swaps', for measuring and calibrating (never for training): supported claims of
    the claim sources against their whole evidence (1), and the same claims with one number, one name or the
    polarity changed so that the evidence no longer supports them (0): the edits that make a stale or conflicting
    answer wrong while its words still match."""
    rng = random.Random(seed)
    pos = [r for r in records if r.label == 1 and r.source in CLAIM_SOURCES]
    rng.shuffle(pos)
    pool = sorted({e for r in pos[: per_label * 4] for e in entities(r.evidence)})
    out: list[PoolRecord] = []
    for r in pos:
        if len(out) >= 2 * per_label:
            break
        claims = [r.text.strip()] if r.source in ATOMIC_SOURCES else (decompose(r.text) or [r.text.strip()])
        claim = claims[0]
        makers = [("number", lambda: swap_number(claim, r.evidence, rng)),
                  ("entity", lambda: swap_entity(claim, r.evidence, pool, rng)),
                  ("negation", lambda: flip_negation(claim, rng))]
        rng.shuffle(makers)
        for kind, make in makers:
            new = make()
            if new and _norm(new) != _norm(claim):
                out.append(PoolRecord("synthetic_swaps", f"{r.group}:orig", r.evidence, claim, 1, "original claim"))
                out.append(PoolRecord("synthetic_swaps", f"{r.group}:swap", r.evidence, new, 0, f"{kind} changed"))
                break
    return out


_LOWER_START = frozenset("the a an it he she they this that these those there in on at his her their its we our "
                         "one some many most each".split())
CONJUNCTION_MAX_PREMISE_WORDS = 35  # two premises and the joined claim must fit the 160 tokens the model reads
CONJUNCTION_MAX_CLAIM_WORDS = 20


def _conjoinable(claim: str) -> bool:
    """A statement of 4 to CONJUNCTION_MAX_CLAIM_WORDS words (not a question, not a fragment)."""
    return 4 <= len(claim.split()) <= CONJUNCTION_MAX_CLAIM_WORDS and not claim.rstrip().endswith("?")


def conjoin(first: str, second: str) -> str:
    """Two claims as one sentence, "A, and b." (the second's first word lower-cased when it is a function word, so
    names keep their capital). Not a clause boundary eval.claims.decompose splits at: the judge sees one claim."""
    a = first.strip().rstrip(".!?").rstrip()
    b = second.strip()
    head = b.split(" ", 1)[0]
    if head.lower() in _LOWER_START and head[:1].isupper():
        b = b[0].lower() + b[1:]
    return f"{a}, and {b}" if b.endswith((".", "!", "?")) else f"{a}, and {b}."


def _conjunction_triples(n: int, items: list, group_of: Callable, rng: random.Random) -> list[tuple]:
    """Up to ``n`` (first, second, distractor) triples of ``items`` from three different groups (seeded)."""
    order = list(items)
    rng.shuffle(order)
    out = []
    for k in range(0, len(order) - 2, 3):
        if len(out) >= n:
            break
        t = tuple(order[k : k + 3])
        if len({group_of(x) for x in t}) == 3:
            out.append(t)
    return out


def _two_evidences(first: str, second: str, distractor: str, rng: random.Random, sep: str = " ") -> tuple[str, str]:
    """Joined evidence for a two-part claim: both parts' (order random), and one part's (which, random) with the
    distractor's in its other part's place (order random)."""
    both, kept = [first, second], [rng.choice([first, second]), distractor]
    rng.shuffle(both)
    rng.shuffle(kept)
    return sep.join(both), sep.join(kept)


def conjunction_examples(pos: list[Example], n_per_label: int, rng: random.Random) -> list[Example]:
    """Two-part claims from supported (premise, claim) examples of one source: (P1 + P2, "C1, and c2") -> 1 and
    (P1 + P3, the same claim) -> 0, where P3 is another example's premise (so the negative's premise is as long and as
    fluent, and what is missing is exactly one part's support); which part loses its evidence and the premises' order
    are random. Only short premises and claims, so both parts fit the model's window."""
    short = [e for e in pos if len(e.premise.split()) <= CONJUNCTION_MAX_PREMISE_WORDS and _conjoinable(e.hypothesis)]
    out: list[Example] = []
    for e1, e2, e3 in _conjunction_triples(n_per_label, short, lambda e: e.group, rng):
        if rng.random() < 0.5:
            e1, e2 = e2, e1
        claim = conjoin(e1.hypothesis, e2.hypothesis)
        both, kept = _two_evidences(e1.premise, e2.premise, e3.premise, rng)
        out.append(Example(both, claim, 1, e1.source, "conj:both", e1.group))
        out.append(Example(kept, claim, 0, e1.source, "conj:one-missing", e1.group))
    return out


def conjunction_records(records: Iterable[PoolRecord], per_label: int, seed: int) -> list[PoolRecord]:
    """A synthetic source, 'synthetic_conjunctions', for measuring and calibrating: supported single claims of the
    claim sources joined in pairs ("C1, and c2") against both records' evidence (1), or against one record's evidence
    and an unrelated record's (0): one part of the claim has no support anywhere, the partial support of WiCE and of
    long answers."""
    rng = random.Random(seed)
    pos = []
    for r in records:
        if r.label != 1 or r.source not in CLAIM_SOURCES:
            continue
        claims = [r.text.strip()] if r.source in ATOMIC_SOURCES else (decompose(r.text) or [r.text.strip()])
        if len(claims) == 1 and _conjoinable(claims[0]):
            pos.append((r, claims[0]))
    out: list[PoolRecord] = []
    for (r1, c1), (r2, c2), (r3, _) in _conjunction_triples(per_label, pos, lambda x: x[0].group, rng):
        claim = conjoin(c1, c2)
        both, kept = _two_evidences(r1.evidence, r2.evidence, r3.evidence, rng, sep="\n\n")
        group = f"{r1.group}+{r2.group}"
        out.append(PoolRecord("synthetic_conjunctions", group, both, claim, 1, "both parts supported"))
        out.append(PoolRecord("synthetic_conjunctions", group, kept, claim, 0, "one part unsupported"))
    return out


def long_evidence_records(records: Iterable[PoolRecord], per_label: int, seed: int, words: int = 900
                          ) -> list[PoolRecord]:
    """A synthetic source, 'synthetic_long_evidence', for measuring and calibrating (never for training): records of
    the claim sources whose evidence is buried, as one block at a random place, among about ``words`` words of
    sentences from other records' evidence of the same source: support has to be found in a long document, as it is
    in retrieved contexts and cited articles, where every word-overlap signal is inflated by the rest of the page."""
    rng = random.Random(seed)
    recs = [r for r in records if r.source in CLAIM_SOURCES]
    sents: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for r in recs:
        sents[r.source] += [(r.group, s) for s in split_sentences(r.evidence)]
    out: list[PoolRecord] = []
    for label in (0, 1):
        side = [r for r in recs if r.label == label]
        rng.shuffle(side)
        for r in side[:per_label]:
            others = [s for g, s in sents[r.source] if g != r.group]
            if len(others) < 10:
                continue
            filler: list[str] = []
            while sum(len(s.split()) for s in filler) < words:
                filler.append(rng.choice(others))
            at = rng.randint(0, len(filler))
            evidence = " ".join(filler[:at] + [r.evidence] + filler[at:])
            out.append(PoolRecord("synthetic_long_evidence", r.group, evidence, r.text, label,
                                  f"{r.source}: {r.detail}", r.question))
    return out


# ------------------------------------------------------------------------------------------------------ examples


def heldout(group: str, percent: int) -> bool:
    """Deterministic split on the group key: the same evidence or claim always lands on the same side."""
    return int(hashlib.sha256(group.encode("utf-8")).hexdigest()[:8], 16) % 100 < percent


def heldout_half(group: str) -> str:
    """Which half of the held-out slice a group is in: 'calibrate' (the combiners are fit there) or 'report'
    (``meta-eval --dataset pool`` measures there), by a second hash independent of ``heldout``."""
    return "calibrate" if int(hashlib.sha256(f"half:{group}".encode()).hexdigest()[:8], 16) % 2 == 0 else "report"


ATOMIC_SOURCES = frozenset({"factcheck_gpt"})  # texts that are one claim already: not decomposed again
MIN_POSITIVE_PRECISION = 0.25  # a supported claim whose best window shares less than this is likely the wrong window


def record_examples(rec: PoolRecord, max_words: int, max_claims: int, extractive: bool = True) -> list[Example]:
    """Claim-level examples of one record (see the module docstring); an NLI pair as it is."""
    if rec.source in NLI_SOURCES:
        return [Example(rec.evidence, rec.text, rec.label, rec.source, "nli", rec.group)]
    claims = [rec.text.strip()] if rec.source in ATOMIC_SOURCES else (decompose(rec.text) or [rec.text.strip()])
    if rec.label == 1:
        out = []
        if extractive and rec.source == "halueval_qa":  # the right answers are a word or two: add the sentence that states them,
            out += extractive_positive(rec, max_words)  # so a long claim is not a cue for 'hallucinated'
        whole = len(rec.evidence.split()) <= max_words
        for claim in claims[:max_claims]:
            premise, precision = best_premise(claim, rec.evidence, max_words)
            if whole or precision >= MIN_POSITIVE_PRECISION:
                out.append(Example(premise, claim, 1, rec.source, "claim", rec.group))
        return out
    if len(claims) == 1:
        premise, _ = best_premise(claims[0], rec.evidence, max_words)
        return [Example(premise, claims[0], 0, rec.source, "claim", rec.group)]
    scored = [(best_premise(c, rec.evidence, max_words), c) for c in claims]
    (premise, _), claim = min(scored, key=lambda x: x[0][1])
    return [Example(premise, claim, 0, rec.source, "claim-min", rec.group)]


def extractive_positive(rec: PoolRecord, max_words: int) -> list[Example]:
    """The evidence sentence that contains the (short) right answer, as a supported claim of ordinary length."""
    answer = rec.text.strip().rstrip(".").lower()
    if len(answer) < 3:
        return []
    for sent in split_sentences(rec.evidence.replace(".", ". ").replace(".  ", ". ")):
        if answer in sent.lower() and 6 <= len(sent.split()) <= 40:
            premise, _ = best_premise(sent, rec.evidence, max_words)
            return [Example(premise, sent.strip(), 1, rec.source, "claim-extractive", rec.group)]
    return []


def _unverifiable_short_negative(ex: Example) -> bool:
    """HaluEval QA answers of a word or two that the premise mentions verbatim: wrong only given the question,
    which the groundedness judge never sees. Kept out: they teach nothing but noise."""
    toks = content_tokens(ex.hypothesis)
    return ex.label == 0 and len(toks) <= 3 and _precision(set(content_tokens(ex.premise)), toks) == 1.0


def build_examples(records: Iterable[PoolRecord], cfg: DataConfig, seed: int) -> tuple[list[Example], list[Example], dict]:
    """(train, held-out, stats). Per source: examples from every record, hard negatives from supported claims,
    then each label capped at ``cap_per_label`` with at most ``hard_negative_share`` synthetic negatives."""
    rng = random.Random(seed)
    by_source: dict[str, list[PoolRecord]] = defaultdict(list)
    for r in records:
        by_source[r.source].append(r)
    train: list[Example] = []
    held: list[Example] = []
    stats: dict = {"examples": {}, "dropped_unverifiable_short_negatives": {}}
    for source in sorted(by_source):
        cap = cfg.cap_per_label.get(source, 0)
        if cap <= 0:
            continue
        recs = by_source[source]
        synthetic = source not in NLI_SOURCES  # NLI sets carry real contradictions: no made-up negatives
        pool = sorted({e for r in recs for e in entities(r.evidence)}) if synthetic else []
        for side, keep in (("train", False), ("heldout", True)):
            side_recs = [r for r in recs if heldout(r.group, cfg.heldout_percent) == keep]
            side_cap = cap if side == "train" else max(20, cap * cfg.heldout_percent // (100 - cfg.heldout_percent))
            exs = [e for r in side_recs
                   for e in record_examples(r, cfg.max_premise_words, cfg.max_claims_per_record, cfg.halueval_extractive)]
            n_before = len(exs)
            exs = [e for e in exs if not (source == "halueval_qa" and _unverifiable_short_negative(e))]
            stats["dropped_unverifiable_short_negatives"][f"{source}/{side}"] = n_before - len(exs)
            pos = [e for e in exs if e.label == 1]
            neg = [e for e in exs if e.label == 0]
            rng.shuffle(pos)
            rng.shuffle(neg)
            pos = pos[:cap if side == "train" else side_cap]
            n_hard = int(round(len(pos) * cfg.hard_negative_share)) if synthetic else 0
            hard: list[Example] = []
            paired: list[Example] = []  # balanced by construction: one supported, one not
            for e in pos:
                if len(hard) >= n_hard:
                    break
                made = hard_negative(e.hypothesis, e.premise, pool, rng)
                if not made:
                    continue
                hard.append(Example(made[0], made[1], 0, source, made[2], e.group))
                pairable = cfg.negation_pairs and made[2] == "hardneg:negation"
                flipped = negate_premise_like(e.hypothesis, made[1], e.premise) if pairable else None
                if flipped:  # the mirror pair: same flip in the premise -> supported; original claim -> not
                    paired.append(Example(flipped, made[1], 1, source, "pair:negation", e.group))
                    paired.append(Example(flipped, e.hypothesis, 0, source, "hardneg:negation-premise", e.group))
            for e in pos if cfg.negation_pairs and synthetic else []:  # more mirror pairs: 'not' as common in supported claims
                if rng.random() >= cfg.negation_pair_rate:
                    continue
                flipped_claim = flip_negation(e.hypothesis, rng)
                flipped = negate_premise_like(e.hypothesis, flipped_claim, e.premise) if flipped_claim else None
                if flipped:
                    paired.append(Example(flipped, flipped_claim, 1, source, "pair:negation", e.group))
                    paired.append(Example(flipped, e.hypothesis, 0, source, "hardneg:negation-premise", e.group))
            neg = neg[: max(0, len(pos) - len(hard))]
            if len(neg) + len(hard) < len(pos):  # too few negatives: keep the sides equal
                pos = pos[: len(neg) + len(hard)]
            conj = conjunction_examples(pos, cfg.conjunction_per_label if side == "train" else max(
                10, cfg.conjunction_per_label * cfg.heldout_percent // (100 - cfg.heldout_percent)), rng
            ) if cfg.conjunction_per_label > 0 else []
            chosen = pos + neg + hard + paired + conj
            (held if keep else train).extend(chosen)
            stats["examples"][f"{source}/{side}"] = dict(sorted(Counter(f"{e.kind}={e.label}" for e in chosen).items()))
    if cfg.question_examples_per_label > 0:
        qa = [r for r in by_source.get("halueval_qa", []) if not heldout(r.group, cfg.heldout_percent)]
        q_ex = question_examples(qa, cfg.question_examples_per_label, cfg.max_premise_words, rng)
        train.extend(q_ex)
        stats["examples"]["halueval_qa_questions/train"] = dict(sorted(Counter(f"{e.kind}={e.label}" for e in q_ex).items()))
    rng.shuffle(train)
    rng.shuffle(held)
    return train, held, stats


def question_examples(records: list[PoolRecord], n_per_label: int, max_words: int, rng: random.Random,
                      candidates: int = 300) -> list[Example]:
    """(knowledge, question) pairs: 1 for the row's own knowledge, 0 for the knowledge of the other row (among a
    random ``candidates``) that shares most content words with the question: on topic, but not the answer."""
    rows = [r for r in records if r.label == 1 and r.question]
    rng.shuffle(rows)
    rows = rows[:n_per_label]
    if len(rows) < 2:
        return []
    toks = [set(content_tokens(r.evidence)) for r in rows]
    out = []
    for i, r in enumerate(rows):
        q = r.question or ""
        premise, _ = best_premise(q, r.evidence, max_words)
        out.append(Example(premise, q, 1, "halueval_qa", "question", r.group))
        qt = set(content_tokens(q))
        pick = rng.sample([k for k in range(len(rows)) if k != i], min(candidates, len(rows) - 1))
        j = max(pick, key=lambda k: len(qt & toks[k]))
        other, _ = best_premise(q, rows[j].evidence, max_words)
        out.append(Example(other, q, 0, "halueval_qa", "question", r.group))
    return out


# -------------------------------------------------------------------------------------------------- the pool


def dev_keys(data_dir: Path) -> set[str] | None:
    """Normalised texts of the dev files (answers, claims, questions), or None when they are not there."""
    root = data_dir.parent
    if not all((root / f).exists() for f in DEV_FILES):
        return None
    keys: set[str] = set()
    for r in _jsonl(root / "ares/dev.jsonl"):
        keys.update({_norm(r["question"]), _norm(r["answer"])})
    for r in _jsonl(root / "wice/dev.jsonl"):
        keys.add(_norm(r["claim"]))
    for r in _jsonl(root / "halueval/qa_dev.jsonl"):
        keys.update({_norm(r["question"]), _norm(r["right_answer"]), _norm(r["hallucinated_answer"])})
    return {k for k in keys if len(k.split()) >= 4}  # a two-word answer is not evidence of overlap


def read_pool(cfg: DataConfig) -> tuple[list[PoolRecord], dict]:
    """Every record of the sources in use, deduplicated across sources and against the dev files."""
    data_dir = Path(cfg.data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"training pool not found: {data_dir} (see shared/data/README.md, 'Training pool')")
    records: list[PoolRecord] = []
    first_source: dict[str, str] = {}  # BEGIN and FaithDial audit some of the same model responses
    stats: dict = {"records": {}, "dropped_cross_source_duplicates": 0, "dropped_dev_overlap": 0}
    keys = dev_keys(data_dir) if cfg.drop_dev_overlap else None
    stats["dev_overlap_check"] = "ran" if keys is not None else "skipped (dev files absent or disabled)"
    for name in SOURCES:  # fixed order: begin before faithdial, so BEGIN keeps the responses both carry
        if cfg.cap_per_label.get(name, 0) <= 0:
            continue
        for r in read_source(name, data_dir, partial_as=cfg.factcheck_partial_as):
            key = _norm(r.text)
            if name in ("begin", "faithdial"):
                if first_source.setdefault(key, name) != name:
                    stats["dropped_cross_source_duplicates"] += 1
                    continue
            if keys is not None and (key in keys or (r.question and _norm(r.question) in keys)):
                stats["dropped_dev_overlap"] += 1
                continue
            records.append(r)
    for name in SOURCES:
        c = Counter(f"{r.label}:{r.detail.split(' (')[0]}" for r in records if r.source == name)
        if c:
            stats["records"][name] = dict(sorted(c.items()))
    return records, stats


# ---------------------------------------------------------------------------------- relevance (question, passage)


def _question_pairs(records: list[PoolRecord], rng: random.Random, n_per_label: int,
                    candidates: int = 300) -> list[PoolRecord]:
    """HaluEval QA questions against their own knowledge (1) and against the knowledge of the other row (among a
    random ``candidates``) sharing most content words with the question (0): on topic, but not the answer."""
    rows = list({r.group: r for r in records if r.source == "halueval_qa" and r.label == 1 and r.question}.values())
    rng.shuffle(rows)
    rows = rows[:n_per_label]
    toks = [set(content_tokens(r.evidence)) for r in rows]
    out = []
    for i, r in enumerate(rows):
        q = r.question or ""
        out.append(PoolRecord("halueval_qa", r.group, r.evidence, q, 1, "own knowledge", q))
        if len(rows) < 2:
            continue
        qt = set(content_tokens(q))
        pick = rng.sample([k for k in range(len(rows)) if k != i], min(candidates, len(rows) - 1))
        j = max(pick, key=lambda k: len(qt & toks[k]))
        out.append(PoolRecord("halueval_qa", r.group, rows[j].evidence, q, 0, "other row's knowledge", q))
    return out


def _factcheck_relevance(data_dir: Path) -> list[PoolRecord]:
    """Factcheck-GPT claims against the passages a search engine returned for them: a person judged each passage
    irrelevant (0) or as supporting, partly supporting or refuting the claim (1: it bears on it)."""
    out = []
    for r in read_source("factcheck_gpt", data_dir, partial_as=1):
        out.append(PoolRecord("factcheck_gpt", r.group, r.evidence, r.text, int(r.detail != "irrelevant"), r.detail,
                              r.text))
    return out


def mil_positives(data_dir: Path, teacher: str, per_set: int, heldout_percent: int) -> list[PoolRecord]:
    """The ``per_set`` passages a teacher cross-encoder ranks highest in each training-side NoMIRACL set that a
    person judged to hold an answer, as (passage, question) positives; the teacher reads each passage's best window
    (``relevance_windows``), as the judge does."""
    from eval.judges.cross_encoder import CrossEncoderScorer
    from eval.judges.nli import relevance_windows

    sets = [s for s in read_nomiracl_sets(data_dir / SOURCES["nomiracl"].paths[0])
            if s.label == 1 and not heldout(s.group, heldout_percent)]
    scorer = CrossEncoderScorer(teacher, name="teacher", max_length=160)
    out = []
    for s in sets:
        wins = [(relevance_windows(p, s.question, keep=1) or [p])[0] for p in s.passages]
        scores = scorer.relevance([(s.question, w) for w in wins])  # (question, passage) pairs
        best = sorted(range(len(wins)), key=lambda i: -scores[i])[:per_set]
        out += [PoolRecord("nomiracl", s.group, s.passages[i], s.question, 1, "teacher's pick in an answer-bearing set",
                           s.question) for i in best]
    return out


def read_relevance_pool(cfg: DataConfig, seed: int) -> tuple[list[PoolRecord], dict]:
    """(passage, question) records of the relevance sources in ``cfg.cap_per_label``: QNLI, NoMIRACL's judged
    non-relevant passages, HaluEval questions vs knowledge, Factcheck-GPT claims vs retrieved passages."""
    data_dir = Path(cfg.data_dir)
    rng = random.Random(seed)
    records: list[PoolRecord] = []
    for name, cap in cfg.cap_per_label.items():
        if cap <= 0:
            continue
        if name in RELEVANCE_SOURCES:
            records += read_source(name, data_dir)
            if name == "nomiracl" and cfg.nomiracl_mil_teacher:
                records += mil_positives(data_dir, cfg.nomiracl_mil_teacher, cfg.nomiracl_mil_per_set,
                                         cfg.heldout_percent)
        elif name == "halueval_qa":
            records += _question_pairs(read_source(name, data_dir), rng, cap * 2)
        elif name == "factcheck_gpt":
            records += _factcheck_relevance(data_dir)
        else:
            raise ValueError(f"'{name}' is not a relevance source")
    keys = dev_keys(data_dir) if cfg.drop_dev_overlap else None
    n = len(records)
    if keys is not None:
        records = [r for r in records if _norm(r.text) not in keys and _norm(r.question or "") not in keys]
    stats = {"records": {s: dict(sorted(Counter(str(r.label) for r in records if r.source == s).items()))
                         for s in sorted({r.source for r in records})},
             "dropped_dev_overlap": n - len(records),
             "dev_overlap_check": "ran" if keys is not None else "skipped (dev files absent or disabled)",
             "dropped_cross_source_duplicates": 0}
    return records, stats


def relevance_examples(records: list[PoolRecord], cfg: DataConfig, seed: int
                       ) -> tuple[list[Example], list[Example], dict]:
    """(train, held-out, stats): each (question, passage) as the relevance judge sees it: the passage window that
    shares most words with the question (eval.judges.nli.relevance_windows) as premise, the question as
    hypothesis. Balanced 1:1 per source where a source has both labels, capped per label."""
    from eval.judges.nli import relevance_windows

    rng = random.Random(seed)
    train: list[Example] = []
    held: list[Example] = []
    stats: dict = {"examples": {}}
    for source in sorted({r.source for r in records}):
        cap = cfg.cap_per_label.get(source, 0)
        for side, keep in (("train", False), ("heldout", True)):
            recs = [r for r in records if r.source == source and heldout(r.group, cfg.heldout_percent) == keep]
            side_cap = cap if side == "train" else max(30, cap * cfg.heldout_percent // (100 - cfg.heldout_percent))
            exs = []
            for r in recs:
                wins = relevance_windows(r.evidence, r.text, keep=1)
                if wins:
                    exs.append(Example(wins[0], r.text, r.label, source, "relevance", r.group))
            pos = [e for e in exs if e.label == 1]
            neg = [e for e in exs if e.label == 0]
            rng.shuffle(pos)
            rng.shuffle(neg)
            if pos and neg:
                n = min(side_cap, len(pos), len(neg))
                chosen = pos[:n] + neg[:n]
            else:
                chosen = (pos or neg)[:side_cap]
            (held if keep else train).extend(chosen)
            stats["examples"][f"{source}/{side}"] = dict(sorted(Counter(f"relevance={e.label}" for e in chosen).items()))
    rng.shuffle(train)
    rng.shuffle(held)
    return train, held, stats
