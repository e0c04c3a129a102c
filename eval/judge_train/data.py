"""The training pool for the compact groundedness judge: readers, claim-level examples, hard negatives, balance,
the held-out split and the data manifest.

Every training file of ``shared/data/train`` (see its README) is read into ``PoolRecord``s: one (evidence, text,
0/1 label) with the source's own label kept as ``detail``. ``build_examples`` turns records into what the
cross-encoder sees at inference (``ScorerJudge.verify``): the text split into claims with ``eval.claims.decompose``,
each claim paired with its best-matching sentence window of the evidence (``sentence_windows`` + unigram precision),
so a premise is one or two sentences, not a whole document. A supported record gives one example per claim; an
unsupported one gives only its least-supported claim (its other claims may well be true). Hard negatives are made
from supported claims by changing one number, one named entity (to one the premise does not mention) or the
polarity of the verb, or by cutting the premise to a heading-like fragment (a title, a name) that shares all its
words with the claim but cannot support it. Each source is balanced to 1:1 and capped, so that no source's construction artefacts
(HaluEval's short right answers against long hallucinated sentences) dominate.

The dev files (ares, wice, halueval/qa_dev) are never trained on. They are read only when present, for one thing:
dropping any training record whose text or question also occurs there (the count goes into the manifest).
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from eval.claims import decompose, sentence_windows, split_sentences
from eval.metrics import content_tokens

# --------------------------------------------------------------------------------------------------- the sources


@dataclass(frozen=True)
class SourceInfo:
    name: str
    paths: tuple[str, ...]  # relative to the data dir; folders are read whole
    licence: str
    origin: str
    labels: str  # how the source's labels map to supported (1) / not supported (0)


SOURCES: dict[str, SourceInfo] = {
    "halueval_qa": SourceInfo(
        "halueval_qa", ("halueval_qa_train.jsonl",), "MIT", "RUCAIBox/HaluEval (QA, rows not in the dev file)",
        "right_answer -> 1, hallucinated_answer -> 0 (by construction)"),
    "halueval_dialogue": SourceInfo(
        "halueval_dialogue", ("halueval_dialogue.jsonl",), "MIT", "RUCAIBox/HaluEval (dialogue)",
        "right_response -> 1, hallucinated_response -> 0 (by construction)"),
    "factcheck_gpt": SourceInfo(
        "factcheck_gpt", ("factcheck_gpt_stance.jsonl",), "Apache-2.0", "yuxiaw/Factcheck-GPT (claim-evidence stance)",
        "completely-support -> 1; refute, irrelevant -> 0; partially-support dropped (configurable)"),
    "begin": SourceInfo(
        "begin", ("begin",), "CC BY 4.0 (WoW, CMU-DoG), CDLA-Sharing-1.0 (TopicalChat)",
        "google/BEGIN-dataset (dev)", "Fully attributable -> 1; Not fully attributable -> 0; Generic dropped"),
    "faithdial": SourceInfo(
        "faithdial", ("faithdial_audit",), "MIT", "McGill-NLP/FaithDial (BEGIN-taxonomy audit)",
        "Entailment (also with Uncooperative) -> 1; Hallucination, Partial Hallucination, entailment+hallucination -> 0; "
        "Generic and Uncooperative-only dropped"),
    "dialfact": SourceInfo(
        "dialfact", ("dialfact_small.jsonl",), "BSD-3-Clause", "salesforce/DialFact (small)",
        "SUPPORTS -> 1; REFUTES, NOT ENOUGH INFO -> 0"),
}
DEV_FILES = ("ares/dev.jsonl", "wice/dev.jsonl", "halueval/qa_dev.jsonl")


@dataclass(frozen=True)
class PoolRecord:
    """One labelled (evidence, text) pair from a training file."""

    source: str
    group: str  # split key: records that share evidence or a claim share a group, so never straddle the split
    evidence: str
    text: str
    label: int  # 1 supported by the evidence, 0 not
    detail: str  # the source's own label
    question: str | None = None


@dataclass(frozen=True)
class Example:
    """One (premise, hypothesis) -> label pair as the cross-encoder sees it."""

    premise: str
    hypothesis: str
    label: int
    source: str
    kind: str  # claim | claim-min | claim-extractive | question | pair:negation | hardneg:number | hardneg:entity |
    #            hardneg:negation | hardneg:negation-premise | hardneg:thin-premise
    group: str


def _h(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_halueval_qa(path: Path) -> Iterator[PoolRecord]:
    for i, r in enumerate(_jsonl(path)):
        g = f"hqa:{_h(r['knowledge'])}"
        yield PoolRecord("halueval_qa", g, r["knowledge"].strip(), r["right_answer"], 1, "right", r["question"])
        yield PoolRecord("halueval_qa", g, r["knowledge"].strip(), r["hallucinated_answer"], 0, "hallucinated", r["question"])


def read_halueval_dialogue(path: Path) -> Iterator[PoolRecord]:
    for r in _jsonl(path):
        g = f"hdl:{_h(r['knowledge'])}"
        yield PoolRecord("halueval_dialogue", g, r["knowledge"].strip(), r["right_response"], 1, "right")
        yield PoolRecord("halueval_dialogue", g, r["knowledge"].strip(), r["hallucinated_response"], 0, "hallucinated")


FACTCHECK_LABELS = {"completely-support": 1, "refute": 0, "irrelevant": 0, "partially-support": None}


def read_factcheck(path: Path, *, partial_as: int | None = None) -> Iterator[PoolRecord]:
    for r in _jsonl(path):
        stance = r["stance"]
        label = FACTCHECK_LABELS.get(stance, None)
        if stance == "partially-support":
            label = partial_as
        if label is None or not r["evidence"].strip():
            continue
        yield PoolRecord("factcheck_gpt", f"fc:{_h(_norm(r['claim']))}", r["evidence"].strip(), r["claim"], label, stance)


BEGIN_LABELS = {"fully attributable": 1, "not fully attributable": 0}


def read_begin(folder: Path) -> Iterator[PoolRecord]:
    import pandas as pd

    for path in sorted(folder.glob("*.tsv")):
        df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
        for r in df.itertuples(index=False):
            label = BEGIN_LABELS.get(str(r.begin_label).strip().lower())
            if label is None or not r.knowledge.strip() or not r.response.strip():
                continue
            yield PoolRecord("begin", f"begin:{_h(_norm(r.knowledge))}", r.knowledge.strip(), r.response.strip(),
                             label, f"{r.begin_label} ({r.model_name}/{r.data_source})")


def faithdial_label(raw: str) -> int | None:
    """Map FaithDial's BEGIN-taxonomy label text (gold and model audit spellings) to 1 / 0 / None (dropped)."""
    tags = {t.strip() for t in re.split(r"[,.]", raw.lower().replace("entailmentt", "entailment")) if t.strip()}
    tags = {"hallucination" if t in ("hallucinated", "partial hallucination") else t for t in tags}
    if "hallucination" in tags:
        return 0
    if "entailment" in tags:
        return 1
    return None  # generic, uncooperative alone, empty


def read_faithdial(folder: Path) -> Iterator[PoolRecord]:
    import pandas as pd

    for path in sorted(folder.glob("*/*.csv")):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        cols = list(df.columns)
        if "BEGIN" in cols:  # gold: evidence, history, response, BEGIN, VRM
            ev_col, resp_col, lab_col = "evidence", "response", "BEGIN"
        else:  # model audit: knowledge, history, <model>, begin_label, vrm_label
            ev_col, resp_col, lab_col = "knowledge", cols[2], "begin_label"
        for r in df.to_dict("records"):
            label = faithdial_label(r[lab_col])
            ev, resp = r[ev_col].strip(), r[resp_col].strip()
            if label is None or not ev or not resp:
                continue
            yield PoolRecord("faithdial", f"fd:{_h(_norm(ev)[:300])}", ev, resp, label,
                             f"{r[lab_col]} ({path.parent.name}/{path.stem})")


DIALFACT_LABELS = {"SUPPORTS": 1, "REFUTES": 0, "NOT ENOUGH INFO": 0}


def _dialfact_evidence(text: str) -> str:
    return re.sub(r"\s*title:\s*(.*?)\s*content:\s*", lambda m: f" {m.group(1)}: ", text).strip()


def read_dialfact(path: Path) -> Iterator[PoolRecord]:
    for r in _jsonl(path):
        label = DIALFACT_LABELS.get(r.get("response_label", ""))
        ev = _dialfact_evidence(r.get("evidence_touse") or " ".join(e[2] for e in r.get("evidence_list", [])))
        if label is None or not ev or not r["response"].strip():
            continue
        yield PoolRecord("dialfact", f"df:{r.get('context_id') or _h(ev)}", ev, r["response"].strip(), label,
                         r["response_label"])


def read_source(name: str, data_dir: Path, *, partial_as: int | None = None) -> list[PoolRecord]:
    path = data_dir / SOURCES[name].paths[0]
    if name == "halueval_qa":
        return list(read_halueval_qa(path))
    if name == "halueval_dialogue":
        return list(read_halueval_dialogue(path))
    if name == "factcheck_gpt":
        return list(read_factcheck(path, partial_as=partial_as))
    if name == "begin":
        return list(read_begin(path))
    if name == "faithdial":
        return list(read_faithdial(path))
    if name == "dialfact":
        return list(read_dialfact(path))
    raise ValueError(f"unknown training source '{name}' (known: {', '.join(SOURCES)})")


def source_files(name: str, data_dir: Path) -> list[Path]:
    out: list[Path] = []
    for rel in SOURCES[name].paths:
        p = data_dir / rel
        out.extend(sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p])
    return out


# ------------------------------------------------------------------------------------------------ configuration


class DataConfig(BaseModel):
    """What goes into the training set; saved with the weights (config.json) so a run can be repeated."""

    model_config = ConfigDict(extra="forbid")

    data_dir: str = "../shared/data/train"
    # per source: how many examples of each label to keep after balancing (0 drops the source)
    cap_per_label: dict[str, int] = Field(default_factory=lambda: {
        "halueval_qa": 1500, "halueval_dialogue": 300, "factcheck_gpt": 900, "begin": 500, "faithdial": 700,
        "dialfact": 150})
    hard_negative_share: float = Field(0.35, ge=0, le=1)  # at most this share of a source's negatives is synthetic
    heldout_percent: int = Field(15, ge=0, le=50)  # groups hashed into the held-out slice (combiner fit, choices)
    max_premise_words: int = 80
    max_claims_per_record: int = 3
    factcheck_partial_as: int | None = None  # None drops partially-supported claims; 0 counts them as unsupported
    # (knowledge, question) -> does the passage answer it: HaluEval QA questions against their own knowledge (1) and
    # against the most word-overlapping other row's knowledge (0); teaches the relevance signal. 0 turns it off.
    question_examples_per_label: int = 500
    negation_pair_rate: float = Field(0.2, ge=0, le=1)  # share of supported claims given a mirrored-negation pair
    negation_pairs: bool = True  # mirrored-negation pairs at all (off: 'not' in a claim becomes a cue for 'unsupported')
    halueval_extractive: bool = True  # add the knowledge sentence stating a HaluEval right answer as a positive
    drop_dev_overlap: bool = True


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


# ------------------------------------------------------------------------------------------------------ examples


def heldout(group: str, percent: int) -> bool:
    """Deterministic split on the group key: the same evidence or claim always lands on the same side."""
    return int(hashlib.sha256(group.encode("utf-8")).hexdigest()[:8], 16) % 100 < percent


ATOMIC_SOURCES = frozenset({"factcheck_gpt"})  # texts that are one claim already: not decomposed again
MIN_POSITIVE_PRECISION = 0.25  # a supported claim whose best window shares less than this is likely the wrong window


def record_examples(rec: PoolRecord, max_words: int, max_claims: int, extractive: bool = True) -> list[Example]:
    """Claim-level examples of one record (see the module docstring)."""
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
        pool = sorted({e for r in recs for e in entities(r.evidence)})
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
            n_hard = int(round(len(pos) * cfg.hard_negative_share))
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
            for e in pos if cfg.negation_pairs else []:  # more mirror pairs: 'not' as common in supported claims
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
            chosen = pos + neg + hard + paired
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


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def manifest(cfg: DataConfig, pool_stats: dict, example_stats: dict, n_train: int, n_heldout: int) -> dict:
    """What went in: every input file with its sha256 and size, per source its licence and label mapping, the
    record and example counts per source and label, and what was dropped and why."""
    data_dir = Path(cfg.data_dir)
    files = []
    for name in SOURCES:
        if cfg.cap_per_label.get(name, 0) <= 0:
            continue
        for f in source_files(name, data_dir):
            files.append({"source": name, "path": str(f.relative_to(data_dir)), "bytes": f.stat().st_size,
                          "sha256": sha256_file(f)})
    return {
        "data_dir": str(data_dir),
        "sources": {n: {**asdict(s), "paths": list(s.paths)} for n, s in SOURCES.items()
                    if cfg.cap_per_label.get(n, 0) > 0},
        "files": files,
        "not_trained_on": list(DEV_FILES),
        **pool_stats,
        **example_stats,
        "n_train": n_train,
        "n_heldout": n_heldout,
    }


def verify_manifest(man: dict, data_dir: str | Path | None = None) -> list[str]:
    """Files whose sha256 no longer matches the manifest (empty list: the data is what the model was trained on)."""
    root = Path(data_dir or man["data_dir"])
    bad = []
    for f in man["files"]:
        p = root / f["path"]
        if not p.is_file() or sha256_file(p) != f["sha256"]:
            bad.append(f["path"])
    return bad


# ------------------------------------------------------------------------------- relevance pairs (combiner only)


def relevance_pairs(records: list[PoolRecord], seed: int, n_per_label: int = 400) -> list[tuple[str, str, int, str]]:
    """(query, passage, label, source) for fitting the context-relevance combiner, from held-out records only:
    Factcheck-GPT claims against the passages a search engine returned for them (human: relevant vs irrelevant)
    and HaluEval QA questions against their own knowledge vs the most word-overlapping other row's knowledge."""
    rng = random.Random(seed)
    out: list[tuple[str, str, int, str]] = []
    fc = [r for r in records if r.source == "factcheck_gpt"]
    pos = [r for r in fc if r.detail != "irrelevant"]
    neg = [r for r in fc if r.detail == "irrelevant"]
    rng.shuffle(pos)
    rng.shuffle(neg)
    out += [(r.text, r.evidence, 1, "factcheck_gpt") for r in pos[:n_per_label]]
    out += [(r.text, r.evidence, 0, "factcheck_gpt") for r in neg[:n_per_label]]
    qa = {r.group: r for r in records if r.source == "halueval_qa" and r.label == 1 and r.question}
    rows = list(qa.values())
    rng.shuffle(rows)
    rows = rows[: n_per_label]
    toks = [set(content_tokens(r.evidence)) for r in rows]
    for i, r in enumerate(rows):
        q = set(content_tokens(r.question or ""))
        j = max((k for k in range(len(rows)) if k != i), key=lambda k: len(q & toks[k]), default=None)
        out.append((r.question or "", r.evidence, 1, "halueval_qa"))
        if j is not None:
            out.append((r.question or "", rows[j].evidence, 0, "halueval_qa"))
    return out
