"""Assign every evaluated sample a primary failure category (plus secondary ones), with the rule that fired and
the evidence that made it fire. Rules are ordered by what a person should look at first; see taxonomy.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corpora.records import Diagnosis, Judgement, MetricResult, Trace
from diagnostics.verdicts import (
    Thresholds,
    claims,
    correct_state,
    evidence_number,
    grounded_state,
    pick,
    trace_of,
    unsupported_claims,
)
from eval.answerability import refused, unanswerable
from eval.judges.registry import JUDGE_PREFERENCE
from eval.metrics import model_metrics
from eval.metrics.retrieval import ranking, relevant_ranks

READS = [m.name for m in model_metrics(default_only=True)]  # the metrics the rules below read
NOT_EVALUATED = "not evaluated in this run (not among its --metrics, or no judge of the run measures it)"


@dataclass
class Signals:
    sample: Trace
    metrics: dict[str, MetricResult]
    refused: bool
    unanswerable: bool | None
    relevant_ranks: list[int] | None  # ranks (1-based, top-k contexts) of chunks from relevant documents
    relevant_beyond_cut: list[int] = field(default_factory=list)  # ranks among candidates past the cut-off

    def value(self, metric: str) -> float | None:
        r = self.metrics.get(metric)
        return r.value if r is not None and r.measured else None


def signals(j: Judgement, preference: tuple[str, ...] = JUDGE_PREFERENCE) -> Signals:
    s = trace_of(j)
    metrics = {m: r for m in READS if (r := pick(j, m, preference)) is not None}
    ranks = None
    beyond: list[int] = []
    if s.relevant_doc_ids and s.has_contexts and (s.doc_ids_known or not s.contexts):  # ranks need known documents
        ranks, beyond = relevant_ranks(s)  # as the retrieval metrics read the labels (documents, or chunks)
    return Signals(s, metrics, refused(s), unanswerable(s), ranks, beyond)


def _support_docs(sig: Signals) -> list[dict]:
    """The chunks that support the answer's claims, with what the labels say about their documents."""
    s = sig.sample
    by_id = {c.chunk_id: c for c in s.chunks}
    chunk_level = ranking(s)[1] == "chunk"  # the labels name chunks (as the retrieval metrics read them)
    out = []
    for cl in claims(sig.metrics.get("groundedness"), ("supported",)):
        ctx = by_id.get(str(cl.get("chunk_id")))
        doc = ctx.doc_id if ctx else None
        labelled = str(cl.get("chunk_id")) if chunk_level else doc
        out.append({"claim": cl.get("claim"), "chunk_id": cl.get("chunk_id"), "doc_id": doc,
                    "relevant": labelled in (s.relevant_doc_ids or []) if s.relevant_doc_ids is not None else None,
                    "outdated": doc is not None and doc == s.outdated_doc_id,
                    "near_duplicate": doc is not None and doc == s.near_duplicate_id})
    return out


def below(v: float, cut: float) -> str:
    """``v`` for a rule that says it is below ``cut``: two decimals, more where two would round it up to the cut
    ("groundedness 0.4999 < 0.5", never "0.50 < 0.5")."""
    for digits in range(2, 10):
        if float(text := f"{v:.{digits}f}") < cut:
            return text
    return repr(v)


def retrieval_missed(sig: Signals, cp: float | None, wrong: bool, grounded: bool) -> tuple[str, str, dict] | None:
    """The retrieval rules, the same whether the miss is told by the relevance labels or, without labels, by the
    context-precision judge (no chunk judged relevant): ``ranked_out`` when a relevant document sat past the top-k
    cut, else ``retrieval_miss``.

    They fire when nothing relevant was retrieved and the answer is not one the retrieved context backs: a wrong
    answer, a refusal, an answer whose correctness is unknown, and also a *right* answer the context does not back
    (groundedness below its cut or some claim unsupported). That last one is right from the model's parametric
    knowledge, not from retrieval: retrieval still missed (the primary, what to fix), and its claims are unsupported
    by the context (``ungrounded_hallucination``, secondary, when groundedness is below its ungrounded threshold).
    A right answer every claim of which the retrieved context backs is no retrieval miss: the context held it, and
    the labels (or the precision judge) missed a relevant document. Without labels, a question known unanswerable
    has nothing relevant to retrieve."""
    s = sig.sample
    right = not wrong and not sig.refused and sig.value("answer_correctness") is not None
    if right and grounded:
        return None
    if sig.relevant_ranks is not None:  # labelled
        if sig.relevant_ranks:
            return None
        if sig.relevant_beyond_cut:
            return ("ranked_out", f"relevant document only at rank {sig.relevant_beyond_cut[0]}, past the "
                    f"top-{len(s.chunks)} cut",
                    {"relevant": s.relevant_doc_ids, "candidate_ranks": sig.relevant_beyond_cut})
        return ("retrieval_miss", "no relevant document among the retrieved chunks",
                {"relevant": s.relevant_doc_ids, "retrieved": s.retrieved_doc_ids})
    if cp is not None and cp == 0.0 and sig.unanswerable is not True:
        return ("retrieval_miss", "no retrieved chunk was judged relevant to the question", {"context_precision": cp})
    return None


def classify(j: Judgement, th: Thresholds | None = None, preference: tuple[str, ...] = JUDGE_PREFERENCE) -> Diagnosis:
    th = th or Thresholds()
    sig = signals(j, preference)
    s = sig.sample
    fired: list[tuple[str, str, dict]] = []  # (category, rule, evidence) in priority order
    bad: dict[str, str] = {}  # evidence fields that were not numbers (a hand-edited line): read as absent, said so

    def fire(cat: str, rule: str, **ev: Any) -> None:
        fired.append((cat, rule, ev))

    g, c = sig.value("groundedness"), sig.value("answer_correctness")
    cp, ar, cr = sig.value("context_precision"), sig.value("answer_relevance"), sig.value("context_recall")
    labelled = sig.relevant_ranks is not None
    context_has_answer = (labelled and bool(sig.relevant_ranks)) or (not labelled and cr is not None and cr >= 0.5)
    corr, gr = sig.metrics.get("answer_correctness"), sig.metrics.get("groundedness")
    # the one reading of "right?" and "grounded?" (diagnostics.verdicts), the one the quadrant shows: an answer to a
    # question known unanswerable reads wrong there, and is missed_refusal here
    verdict = correct_state(corr, s, th, bad)
    grounded = grounded_state(gr, th) == "grounded"  # no claim left unsupported: the wrong part may be that claim
    unsupported = unsupported_claims(gr)

    if s.outcome == "blocked":
        fire("guardrail_block", "outcome == blocked", guardrails=s.guardrails)
    if s.outcome == "error":
        fire("unmeasured", "the pipeline failed for this sample", error=s.error)
    # an error produced no answer: nothing was answered instead of refused
    if sig.unanswerable is True and not sig.refused and s.outcome not in ("blocked", "error"):
        fire("missed_refusal", "question is unanswerable and the answer is not a refusal", answer=s.answer[:300])
    # wrong against the reference; a question whose answerability nothing tells (a judgement without its trace) is
    # still wrong when the correctness judge says so: it had a reference
    wrong = (verdict == "wrong" and sig.unanswerable is not True) or (sig.refused and sig.unanswerable is False)
    if wrong and not sig.refused and grounded:
        fire("grounded_yet_hallucinated", f"groundedness {g:.2f} >= {th.grounded}, every claim supported, but the "
             f"answer is wrong against the reference (correctness {c:.2f})",
             groundedness=g, correctness=c, supporting=_support_docs(sig), reference=s.reference)
    if wrong and not sig.refused and g is not None and g >= th.ungrounded and not grounded and gr is not None:
        fire("ungrounded_hallucination", f"the answer is wrong against the reference and groundedness {g:.2f} leaves "
             "claims unsupported", unsupported=unsupported, judge=gr.judge, correctness=c)
    if miss := retrieval_missed(sig, cp, wrong, grounded):
        fire(miss[0], miss[1], **miss[2])
    if labelled and wrong and sig.relevant_ranks and sig.relevant_ranks[0] > th.far_rank:
        fire("ranked_out", f"first relevant chunk at rank {sig.relevant_ranks[0]} (> {th.far_rank})",
             relevant_ranks=sig.relevant_ranks)
    if wrong and context_has_answer:
        fire("context_ignored", "the context held the answer and the model "
             + ("refused" if sig.refused else "answered otherwise"),
             relevant_ranks=sig.relevant_ranks, context_recall=cr, answer=s.answer[:300])
    if sig.refused and sig.unanswerable is False:
        fire("wrong_refusal", "refused although the question is answerable from the corpus")
    if g is not None and g < th.ungrounded and not sig.refused and gr is not None:
        fire("ungrounded_hallucination", f"groundedness {below(g, th.ungrounded)} < {th.ungrounded}",
             unsupported=unsupported, judge=gr.judge)
    elif verdict == "right" and g is not None and not grounded and not sig.refused and gr is not None:
        # right, but not grounded (the quadrant's "ungrounded yet right"): never ok, which says grounded
        fire("ungrounded_hallucination", "the answer is right, but " + (
            f"groundedness {below(g, th.grounded)} < {th.grounded}" if g < th.grounded else
            f"{len(unsupported)} claim{'s' if len(unsupported) != 1 else ''} the context does not support "
            f"(groundedness {g:.2f})") + ": the context does not back all of it",
            unsupported=unsupported, judge=gr.judge, correctness=c)
    incomplete = verdict == "incomplete" and not sig.refused and sig.unanswerable is not True
    # a short answer correctness calls right (or right but partial: 'incomplete') is on topic whatever relevance says
    if ar is not None and ar < th.off_topic and not sig.refused and verdict not in ("right", "incomplete"):
        fire("off_topic", f"answer relevance {below(ar, th.off_topic)} < {th.off_topic}", answer_relevance=ar)
    if incomplete and corr is not None and (rec := evidence_number(corr, "recall")) is not None:
        fire("incomplete", f"correct claims but reference recall {below(rec, th.incomplete_recall)} < "
             f"{th.incomplete_recall}", recall=rec)
    if cp is not None and cp < th.noisy:
        fire("noisy_context", f"context precision {below(cp, th.noisy)} < {th.noisy}", context_precision=cp)

    # never "ok" for an answer known wrong, nor one whose correctness, groundedness or (for a refusal) answerability
    # should have been known and is not: 'unmeasured' with the reasons, ahead of a noisy context
    reasons = {m: r.reason for m, r in sig.metrics.items() if r.status == "unmeasured"}
    # a metric the run never evaluated has no result at all: say so, never an empty reason
    reasons |= {m: NOT_EVALUATED for m in ("groundedness", "answer_correctness") if m not in sig.metrics}
    # correctness the run did not evaluate is as unknown as correctness it could not measure: "ok" says "right"
    unknown = (corr is None or corr.status == "unmeasured") and sig.unanswerable is not True
    # and groundedness the run did not evaluate is as unknown as groundedness it could not measure: "ok" says grounded
    g_unknown = (gr is None or gr.status == "unmeasured") and not sig.refused
    if all(f[0] == "noisy_context" for f in fired) and s.outcome != "blocked":
        why: tuple[str, dict] | None = None
        if sig.refused and sig.unanswerable is None:
            why = ("the answer is a refusal and nothing says whether the corpus holds the answer (no reference, no "
                   "relevance labels, no answerable flag): whether refusing was right is unknown", {})
        elif g is None and c is None:
            why = ("neither groundedness nor correctness could be measured", {})
        elif wrong:
            why = ("the answer is wrong against the reference, but what went wrong cannot be told: groundedness is "
                   "unmeasured", {"correctness": c})
        elif unknown:
            how = "was not evaluated in this run" if corr is None else "could not be measured"
            why = (f"answer correctness {how}: whether the answer is right is unknown", {})
        elif g_unknown:
            how = "was not evaluated in this run" if gr is None else "could not be measured"
            why = (f"groundedness {how}: whether the context backs the answer is unknown", {})
        if why:
            fired.insert(0, ("unmeasured", why[0], {**why[1], "reasons": reasons}))

    metrics_used = {m: {"value": r.value, "judge": r.judge, "status": r.status} for m, r in sig.metrics.items()}
    ignored = {"ignored_evidence": bad} if bad else {}
    if not fired or fired[0][0] == "noisy_context" and not wrong and (g is None or g >= th.ungrounded):
        secondary = [f[0] for f in fired]
        return Diagnosis(sample_id=j.sample_id, category="ok", secondary=list(dict.fromkeys(secondary)),
                         rule="no failure rule fired" if not fired else "answer right; context noisy",
                         evidence={"metrics": metrics_used, **({"noisy": fired[0][2]} if fired else {}), **ignored})
    cat, rule, ev = fired[0]
    secondary = [f[0] for f in fired[1:] if f[0] != cat]
    return Diagnosis(sample_id=j.sample_id, category=cat, secondary=list(dict.fromkeys(secondary)), rule=rule,
                     evidence={**ev, "metrics": metrics_used, "secondary_rules": {f[0]: f[1] for f in fired[1:]},
                               **ignored})
