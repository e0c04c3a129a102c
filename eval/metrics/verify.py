"""A judge's primitives, from which every metric computes: ``verify`` (each claim's best supporting sentence window
among passages, with its verdict) and ``relevance`` (does a passage bear on a question), over any Scorer.

The claim-level path (a Scorer with ``claim_support``: the shipped ``nli`` judge) and the pair path (any other Scorer)
live here: ``claim_candidates`` picks each claim's premise windows, ``Verifier.verify`` scores them in one batch."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from eval.claims import MAX_WINDOW_WORDS, premise_windows, split_sentences
from eval.judges.base import ClaimItem, Scorer, Support
from eval.metrics.flips import Said
from eval.metrics.key_facts import Stated
from eval.sentences import word_count
from eval.tokens import content_tokens


def top_premises(claim: str, premises: list[str], m: int) -> list[int]:
    """Indices of the ``m`` premises sharing most content words with the claim (cheap pre-filter before scoring)."""
    if len(premises) <= m:
        return list(range(len(premises)))
    c = set(content_tokens(claim))
    overlap = [(len(c & set(content_tokens(p))), -i) for i, p in enumerate(premises)]
    return [-neg for _, neg in sorted(overlap, reverse=True)[:m]]


def claim_candidates(claims: list[str], passages: list[tuple[str, str]], lead: str = "", max_premises: int = 6,
                     joined: bool = True) -> tuple[list[list[tuple[str, str]]], str]:
    """Per claim, the (chunk id, premise) windows worth scoring: the ``max_premises`` sentence windows sharing most
    words with it, and (``joined``) one window of its best-matching sentences wherever they are (up to three, as
    many as fit MAX_WINDOW_WORDS; at least two); plus the
    whole evidence as one text. ``lead`` (e.g. the question) leads every window but is not part of the evidence
    text: it is given, not asserted (a number in the question is not a number the reference states)."""
    windows = [(cid, w) for cid, text in passages for w in premise_windows(text, lead)]
    singles = [(cid, s) for cid, text in passages for s in split_sentences(text)] if joined else []
    per_claim = []
    for claim in claims:
        chosen = [windows[i] for i in top_premises(claim, [w for _, w in windows], max_premises)]
        if len(singles) >= 3:
            picked: list[int] = []  # the best-matching sentences, best first, while they fit one window
            for i in top_premises(claim, [s for _, s in singles], 3):
                if sum(word_count(singles[k][1]) for k in [*picked, i]) <= MAX_WINDOW_WORDS:  # CJK: per character
                    picked.append(i)
            if len(picked) >= 2:
                text = " ".join(singles[i][1] for i in sorted(picked))
                chosen.append((singles[picked[0]][0], f"{lead.strip()} {text}".strip()))
        per_claim.append(chosen)
    return per_claim, "\n\n".join(text for _, text in passages).strip()


@dataclass
class ClaimVerdict:
    claim: str
    verdict: str  # supported | unsupported | contradicted
    score: float
    chunk_id: str | None
    sentence: str | None
    contradiction: float | None = None
    note: str | None = None  # why a rule overrode the judge's verdict (e.g. a number the other side never states)
    cut: bool = False  # the (sentence, claim) pair the verdict rests on is longer than the judge's model reads

    def as_dict(self) -> dict:
        out = self.__dict__.copy()
        if out["note"] is None:
            del out["note"]
        if not out["cut"]:
            del out["cut"]
        return out


def exact_facts(v: ClaimVerdict, stated: Stated, said: Said, overruled: str = "unsupported", *,
                words: bool = True) -> ClaimVerdict:
    """A supported claim is not supported, whatever the judge's score, when the other side never states its number or
    identifier (key_facts: "1,048,000 tokens" against "1,048,576 tokens"; "E5M2" against "E4M3"), or when it repeats
    the other side with one word turned to its opposite (flips: "disabled" for "enabled", a "not" more or less,
    "before" for "after"). Answer correctness calls an answer's claim so overruled ``contradicted``: the judge read it
    as the reference's statement, with a number, name or word the reference does not give; it makes the answer wrong
    unless the answer also states all of the reference (then it is an addition: "16 tokens per block, so 4,096 tokens
    fill 256 blocks"). ``words``: see missing_facts. ``stated`` and ``said`` read the other side once for all its
    claims."""
    if v.verdict != "supported":
        return v
    if missing := stated.missing(v.claim, words=words):
        return replace(v, verdict=overruled, note=f"the other side never states {', '.join(missing)}")
    why = said.flipped(v.claim)
    return v if why is None else replace(v, verdict=overruled, note=why)


class Verifier:
    """The primitives over one Scorer; ``max_premises`` caps the sentence windows scored per claim."""

    def __init__(self, scorer: Scorer, max_premises: int = 6):
        self.scorer = scorer
        self.max_premises = max_premises

    @property
    def support_threshold(self) -> float:
        return self.scorer.support_threshold

    @property
    def relevance_threshold(self) -> float:
        return self.scorer.relevance_threshold

    def relevance(self, pairs: list[tuple[str, str]]) -> list[float]:
        """(question, passage) -> [0, 1]: does the passage bear on the question (the scorer's own signal)."""
        return self.scorer.relevance(pairs)

    # claims vs passages -------------------------------------------------------------------------------------------
    def verify(self, items: list[tuple[list[str], list[tuple[str, str]]]],
               leads: list[str] | None = None, *, given: Sequence[str] | None = None) -> list[list[ClaimVerdict]]:
        """For each (claims, [(chunk_id, text)]) find every claim's best supporting sentence window; one batch.
        ``leads`` (one per item) is text put before every window of that item, e.g. the question, so that a short
        reference ("25 MB") reads in context, without the lead ever being a premise on its own.

        A scorer with a claim-level path (``claim_support``: the compact judge) sees, per claim, its best windows,
        one more window joining the claim's three best-matching sentences (support often spans sentences that are
        not adjacent), and the whole evidence; any other scorer scores each (window, claim) pair and keeps the max.

        ``given`` (one text per item, e.g. the question; or None): a supported claim whose number written in digits or
        identifier neither the item's passages nor its given text state is unsupported (exact_facts): a judge reads
        "1,048,000 tokens" as close to "1,048,576 tokens", and word overlap reads "32 tokens" as "16 tokens"."""
        claim_path = hasattr(self.scorer, "claim_support")
        cands, evidence = [], []
        for k, (claims, passages) in enumerate(items):
            per_claim, ev = claim_candidates(claims, passages, leads[k] if leads else "", self.max_premises,
                                             joined=claim_path)
            cands.append(per_claim)
            evidence.append(ev)
        out = self._marked_cut(self._verify_claims(items, cands, evidence) if claim_path else
                               self._verify_pairs(items, cands))
        if given is None:
            return out
        checked = []
        for k, verdicts in enumerate(out):
            if not any(x.verdict == "supported" for x in verdicts):
                checked.append(verdicts)
                continue
            stated, said = Stated.of(evidence[k], given[k]), Said(evidence[k])  # read once, for all its claims
            checked.append([exact_facts(x, stated, said, words=False) for x in verdicts])
        return checked

    def _marked_cut(self, out: list[list[ClaimVerdict]]) -> list[list[ClaimVerdict]]:
        """Each verdict whose (sentence, claim) pair the scorer's model reads only in part marked ``cut`` (a scorer
        that says so: ``cut_flags``, the cross-encoder judges; the end of such a window was never seen)."""
        cut_flags = getattr(self.scorer, "cut_flags", None)
        read = [(v.sentence, v.claim) for verdicts in out for v in verdicts if v.sentence is not None]
        if not callable(cut_flags) or not read:
            return out
        flags = iter(cut_flags(read))
        return [[replace(v, cut=True) if v.sentence is not None and next(flags) else v for v in verdicts]
                for verdicts in out]

    def _verify_claims(self, items, cands, evidence) -> list[list[ClaimVerdict]]:
        flat = [ClaimItem(claim, [w for _, w in chosen], evidence[k])
                for k, ((claims, _), per_claim) in enumerate(zip(items, cands))
                for claim, chosen in zip(claims, per_claim)]
        scores = iter(self.scorer.claim_support(flat))  # type: ignore[attr-defined]
        out = []
        for (claims, _), per_claim in zip(items, cands):
            verdicts = []
            for claim, chosen in zip(claims, per_claim):
                s = next(scores)
                if s.best is None:
                    verdicts.append(ClaimVerdict(claim, "unsupported", 0.0, None, None))
                    continue
                verdict = "supported" if s.support >= self.scorer.support_threshold else "unsupported"
                cid, sent = chosen[s.best]
                verdicts.append(ClaimVerdict(claim, verdict, round(float(s.support), 4), cid, sent))
            out.append(verdicts)
        return out

    def _verify_pairs(self, items, cands) -> list[list[ClaimVerdict]]:
        pairs: list[tuple[str, str]] = []
        index: list[list[list[tuple[int, str, str]]]] = []  # per item, per claim: (pair idx, chunk id, premise)
        for (claims, _), per_claim in zip(items, cands):
            refs_per_claim = []
            for claim, chosen in zip(claims, per_claim):
                refs = []
                for cid, w in chosen:
                    refs.append((len(pairs), cid, w))
                    pairs.append((w, claim))
                refs_per_claim.append(refs)
            index.append(refs_per_claim)
        scores: list[Support] = self.scorer.support(pairs) if pairs else []
        out = []
        for (claims, _), per_claim in zip(items, index):
            verdicts = []
            for claim, refs in zip(claims, per_claim):
                if not refs:
                    verdicts.append(ClaimVerdict(claim, "unsupported", 0.0, None, None))
                    continue
                best = max(refs, key=lambda r: scores[r[0]].supported)
                s = scores[best[0]]
                contra = max((scores[r[0]].contradicted or 0.0) for r in refs)
                if s.supported >= self.scorer.support_threshold:
                    verdict = "supported"
                elif contra >= self.scorer.support_threshold and contra > s.supported:
                    verdict = "contradicted"
                else:
                    verdict = "unsupported"
                sent = best[2]
                if verdict == "contradicted":
                    cbest = max(refs, key=lambda r: scores[r[0]].contradicted or 0.0)
                    best, sent = cbest, cbest[2]
                verdicts.append(ClaimVerdict(claim, verdict, round(float(s.supported), 4), best[1], sent,
                                             None if s.contradicted is None else round(float(contra), 4)))
            out.append(verdicts)
        return out
