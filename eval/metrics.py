"""The metrics, computed from any Scorer's two primitive signals, batched across samples.

groundedness      share of answer claims supported by some retrieved chunk (per-claim evidence kept)
context_precision average precision of chunk verdicts in rank order (vs the reference when there is one,
                  else vs the question)
answer_relevance  does the answer address the question (not whether it is true)
context_recall    share of reference claims supported by the retrieved chunks
answer_correctness claim-level F1 between answer and reference (precision and recall in the evidence)
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from eval.answerability import unanswerable
from eval.claims import MAX_WINDOW_WORDS, decompose, premise_windows, split_sentences
from eval.judges.base import ClaimItem, Scorer, Support
from eval.mathx import average_precision, claim_prf, fraction
from eval.records import EvalSample, MetricResult
from eval.rules import LLM_METRICS, fixed_result
from eval.tokens import content_tokens

__all__ = ["LLM_METRICS", "ClaimVerdict", "ScorerJudge", "content_tokens", "top_premises"]


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
                if sum(len(singles[k][1].split()) for k in [*picked, i]) <= MAX_WINDOW_WORDS:
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

    def as_dict(self) -> dict:
        return self.__dict__.copy()


class ScorerJudge:
    """Every metric from one Scorer. ``max_premises`` caps the sentence windows scored per claim. ``unreadable``
    (eval/judges/scripts.py), when given, names why the scorer's model cannot read a sample's texts for a metric:
    such samples are unmeasured with that reason instead of scored (after the model-free rules, which still apply)."""

    def __init__(self, scorer: Scorer, max_premises: int = 6,
                 unreadable: Callable[[str, EvalSample], str | None] | None = None):
        self.scorer = scorer
        self.name = scorer.name
        self.family = scorer.family
        self.max_premises = max_premises
        self.unreadable = unreadable

    def supports(self, metric: str) -> bool:
        return metric in LLM_METRICS

    def judge(self, metric: str, samples: list[EvalSample]) -> list[MetricResult]:
        fn = getattr(self, f"_{metric}")
        if self.unreadable is None:
            return fn(samples)
        why = [None if fixed_result(metric, s, self.name) else self.unreadable(metric, s) for s in samples]
        readable = [s for s, w in zip(samples, why) if w is None]
        scored = iter(fn(readable) if readable else [])
        return [next(scored) if w is None else MetricResult.unmeasured(metric, self.name, w) for w in why]

    # claims vs passages -------------------------------------------------------------------------------------------
    def verify(self, items: list[tuple[list[str], list[tuple[str, str]]]],
               leads: list[str] | None = None) -> list[list[ClaimVerdict]]:
        """For each (claims, [(chunk_id, text)]) find every claim's best supporting sentence window; one batch.
        ``leads`` (one per item) is text put before every window of that item, e.g. the question, so that a short
        reference ("25 MB") reads in context, without the lead ever being a premise on its own.

        A scorer with a claim-level path (``claim_support``: the compact judge) sees, per claim, its best windows,
        one more window joining the claim's three best-matching sentences (support often spans sentences that are
        not adjacent), and the whole evidence; any other scorer scores each (window, claim) pair and keeps the max."""
        claim_path = hasattr(self.scorer, "claim_support")
        cands, evidence = [], []
        for k, (claims, passages) in enumerate(items):
            per_claim, ev = claim_candidates(claims, passages, leads[k] if leads else "", self.max_premises,
                                             joined=claim_path)
            cands.append(per_claim)
            evidence.append(ev)
        if claim_path:
            return self._verify_claims(items, cands, evidence)
        return self._verify_pairs(items, cands)

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

    # metrics: the model-free rules first (eval.rules), the scorer for the rest -------------------------------------
    def _split(self, metric: str, samples: list[EvalSample]) -> tuple[list[MetricResult | None], list[int]]:
        fixed = [fixed_result(metric, s, self.name) for s in samples]
        return fixed, [i for i, r in enumerate(fixed) if r is None]

    def _claims_against_contexts(self, metric: str, samples: list[EvalSample], text_of) -> list[MetricResult]:
        results, todo = self._split(metric, samples)
        verdicts = self.verify([(decompose(text_of(samples[i])), [(c.id, c.text) for c in samples[i].contexts])
                                for i in todo])
        for i, vs in zip(todo, verdicts):
            value = fraction([v.verdict == "supported" for v in vs])
            results[i] = (MetricResult.ok(metric, self.name, value, claims=[v.as_dict() for v in vs])
                          if value is not None else MetricResult.unmeasured(metric, self.name, "no claims to check"))
        return results  # type: ignore[return-value]

    def _groundedness(self, samples: list[EvalSample]) -> list[MetricResult]:
        return self._claims_against_contexts("groundedness", samples, lambda s: s.answer)

    def _context_recall(self, samples: list[EvalSample]) -> list[MetricResult]:
        return self._claims_against_contexts("context_recall", samples, lambda s: s.reference or "")

    def _context_precision(self, samples: list[EvalSample]) -> list[MetricResult]:
        results, todo = self._split("context_precision", samples)
        with_ref = [i for i in todo if samples[i].reference and unanswerable(samples[i]) is not True]
        no_ref = [i for i in todo if i not in set(with_ref)]
        ref_scores = self.verify([([samples[i].reference or ""], [(c.id, c.text)]) for i in with_ref
                                  for c in samples[i].contexts])
        rel = self.scorer.relevance([(samples[i].question, c.text) for i in no_ref for c in samples[i].contexts])
        flat = iter([v[0].score for v in ref_scores] + [float(x) for x in rel])
        for i in with_ref + no_ref:
            ctx = samples[i].contexts
            scores = [next(flat) for _ in ctx]
            cut = self.scorer.support_threshold if i in set(with_ref) else self.scorer.relevance_threshold
            verdicts = [sc >= cut for sc in scores]
            results[i] = MetricResult.ok("context_precision", self.name, average_precision(verdicts),
                                         with_reference=i in set(with_ref),
                                         chunks=[{"chunk_id": c.id, "relevant": v, "score": round(sc, 4)}
                                                 for c, v, sc in zip(ctx, verdicts, scores)])
        return results  # type: ignore[return-value]

    def _answer_relevance(self, samples: list[EvalSample]) -> list[MetricResult]:
        results, todo = self._split("answer_relevance", samples)
        scores = self.scorer.relevance([(samples[i].question, samples[i].answer) for i in todo])
        for i, sc in zip(todo, scores):
            results[i] = MetricResult.ok("answer_relevance", self.name, float(min(1.0, max(0.0, sc))))
        return results  # type: ignore[return-value]

    def _answer_correctness(self, samples: list[EvalSample]) -> list[MetricResult]:
        results, todo = self._split("answer_correctness", samples)
        items, leads = [], []
        for i in todo:  # the question is given, not claimed: an answer restating it adds no claim beyond the reference;
            s = samples[i]  # it leads every premise window but is never a premise alone (a question asserts nothing)
            items.append((decompose(s.answer), [("reference", s.reference or "")]))
            items.append((decompose(s.reference or ""), [("answer", s.answer)]))
            leads += [s.question, s.question]
        verdicts = self.verify(items, leads)
        for n, i in enumerate(todo):
            ans_v, ref_v = verdicts[2 * n], verdicts[2 * n + 1]
            prf = claim_prf([v.verdict == "supported" for v in ans_v], [v.verdict == "supported" for v in ref_v])
            if prf["f1"] is None:
                results[i] = MetricResult.unmeasured("answer_correctness", self.name, "answer or reference has no claims")
                continue
            results[i] = MetricResult.ok("answer_correctness", self.name, prf["f1"], precision=prf["precision"],
                                         recall=prf["recall"], answer_claims=[v.as_dict() for v in ans_v],
                                         reference_claims=[v.as_dict() for v in ref_v])
        return results  # type: ignore[return-value]
