"""answer_correctness: how much of the reference the answer states (claim-level recall: the reference's claims the
answer supports), read with the question as context. Numbers and identifiers must match exactly, and an answer
opening with the opposite yes/no of the reference is wrong, as is a bare yes/no answer ("Yes.", "Nope.") whose
question, so answered, asserts the opposite of what the reference states (key_facts: a judge's score cannot overrule
them). A refusal is correct exactly when the question is unanswerable.

The value is recall, not the claim-level F1 (ragas FactualCorrectness's default): a reference is a short gold answer,
not every true sentence, so an answer's claim the reference does not state is not thereby wrong ("Keys per channel,
values per token, reaching 2-bit caches" against "Keys per channel and values per token" has F1 0 when its one
sentence is one claim). What the answer adds is checked against the context by groundedness, except a claim the judge
reads as the reference's own statement with another number or name ("32 tokens" for "16 tokens"): unless the answer
also states all of the reference, that makes it wrong (value 0). Precision (the answer's
claims the reference backs) and the F1 stay in the evidence; ragas's equivalent is FactualCorrectness(mode="recall")."""
from __future__ import annotations

from dataclasses import replace

from corpora.records import MetricResult, Trace
from eval.answerability import refused, unanswerable
from eval.claims import decompose
from eval.mathx import claim_prf
from eval.metrics.base import BLOCKED, Metric, no_claims, unsupported_claims
from eval.metrics.flips import Said
from eval.metrics.key_facts import Stated, polarity_conflict, polarity_mismatch
from eval.metrics.verify import ClaimVerdict, Verifier, exact_facts
from eval.tokens import content_tokens
from eval.yes_no import POLARITY_WORDS, asks_yes_no, bare_answer, leading_polarity, without_answer_word

NAME = "answer_correctness"


def rules(t: Trace, judge: str) -> MetricResult | None:
    u = unanswerable(t)
    if t.outcome == "blocked":
        return MetricResult.not_applicable(NAME, judge, BLOCKED)
    if u is None:
        return MetricResult.not_applicable(NAME, judge, "no reference answer")
    if refused(t) or u:
        ok = refused(t) == bool(u)
        why = ("correct refusal" if ok and u else "missed refusal: the corpus cannot answer this" if u
               else "wrong refusal: the corpus holds the answer")
        return MetricResult.ok(NAME, judge, 1.0 if ok else 0.0, refusal=refused(t), unanswerable=bool(u), note=why)
    if not (t.reference or "").strip():  # answerable by its labels, but nothing to compare the answer with
        return MetricResult.not_applicable(NAME, judge, "no reference answer")
    if not decompose(t.answer):
        return MetricResult.unmeasured(NAME, judge, no_claims(t.answer))
    return None


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    items, leads = [], []
    for t in traces:  # the question is given, not claimed: an answer restating it adds no claim beyond the reference;
        # it leads the premise windows (never a premise alone: a question asserts nothing) where they need it (_lead)
        items.append((_read(t.question, decompose(t.answer)), [("reference", t.reference or "")]))
        items.append((_read(t.question, decompose(t.reference or "")), [("answer", t.answer)]))
        leads += [_lead(t.question, t.reference or ""), _lead(t.question, t.answer)]
    verdicts = v.verify(items, leads)
    out = []
    for n in range(len(traces)):
        t = traces[n]
        for k, text in ((2 * n, t.answer), (2 * n + 1, t.reference or "")):  # each verdict shows its claim as written
            verdicts[k] = [replace(x, claim=c) for x, c in zip(verdicts[k], decompose(text))]
        ref, ans = Stated.of(t.reference or "", t.question), Stated.of(t.answer, t.question)  # each read once
        said_ref, said_ans = Said(t.reference or ""), Said(t.answer)
        ans_v = [exact_facts(v, ref, said_ref, overruled="contradicted") for v in verdicts[2 * n]]
        ref_v = [exact_facts(v, ans, said_ans) for v in verdicts[2 * n + 1]]
        ans_v, ref_v = _polarity_checked(t, ans_v, ref_v)
        claims = {"answer_claims": [x.as_dict() for x in ans_v], "reference_claims": [x.as_dict() for x in ref_v]}
        if _same_bare_answer(t):  # "Nope." for "No.": one answer, whatever words a judge sees shared
            out.append(MetricResult.ok(NAME, judge, 1.0, precision=1.0, recall=1.0,
                                       note="the answer gives the reference's yes/no", **claims))
            continue
        if polarity_conflict(t.answer, t.reference or ""):
            out.append(MetricResult.ok(NAME, judge, 0.0, precision=0.0, recall=0.0, conflict=True,
                                       note="the answer opens with the opposite yes/no of the reference", **claims))
            continue
        prf = claim_prf([x.verdict == "supported" for x in ans_v], [x.verdict == "supported" for x in ref_v])
        if prf["recall"] is None:
            out.append(MetricResult.unmeasured(NAME, judge, "the reference has no claims"))
            continue
        conflicts = [x for x in ans_v if x.verdict == "contradicted"]
        if conflicts and prf["recall"] < 1.0:  # it says the reference's statement with another number or name
            out.append(MetricResult.ok(NAME, judge, 0.0, **prf, **claims, conflict=True,
                                       note=f"the answer changes a fact of the reference: {conflicts[0].note}"))
            continue
        out.append(MetricResult.ok(NAME, judge, prf["recall"], **prf, **claims))
    return out


METRIC = Metric(
    name=NAME,
    summary="share of the reference's claims the answer states (claim recall; precision and F1 kept)",
    needs=frozenset({"answer", "reference"}),
    rules=rules,
    compute=compute,
    texts=lambda t: [t.answer, t.reference or "", t.question],
    asks=lambda t, r: unsupported_claims(r, [("answer_claims", [t.reference or ""], t.question),
                                             ("reference_claims", [t.answer], t.question)]),
    cut=0.5,  # at or above: right
    display=2,
    ragas="FactualCorrectness",
)


_OPPOSITE = "the yes/no answer asserts the opposite of the reference"


def _read(question: str, claims: list[str]) -> list[str]:
    """The claims as the judge reads them: after a yes/no question, without the yes or no a claim opens with ("Yes, it
    is exact." is read as "It is exact."). The word is checked by the yes/no rules (polarity_conflict,
    _polarity_checked); left in, a learned judge reads "Yes," as a word the other side lacks (on 20 yes/no questions
    answered in words the shipped judge put 18 right answers above the wrong one with it, 20 without)."""
    return [without_answer_word(c) for c in claims] if asks_yes_no(question) else claims


def _lead(question: str, premise: str) -> str:
    """What leads the windows of ``premise`` (the answer, or the reference): the question, so that a short text
    ("25 MB.", "Yes, it is.") reads in context; but not a yes/no question before a text that states words of its own.
    Such a question is the very statement a claim may repeat ("Is FlashAttention exact?" before "FlashAttention is an
    approximate method."): a learned judge reads its words as said and finds "Yes, it is exact." supported by an answer
    that says the opposite."""
    if not asks_yes_no(question):
        return question
    own = set(content_tokens(premise)) - set(content_tokens(question)) - POLARITY_WORDS
    return "" if own else question


def _same_bare_answer(t: Trace) -> bool:
    """The answer and the reference are both only a yes/no answer ("Nope." and "No."), the same one."""
    a, r = t.answer.strip(), (t.reference or "").strip()
    pa, pr = leading_polarity(a), leading_polarity(r)
    return pa is not None and pa == pr and bare_answer(a) and bare_answer(r)


def _polarity_checked(t: Trace, ans_v: list[ClaimVerdict], ref_v: list[ClaimVerdict]
                      ) -> tuple[list[ClaimVerdict], list[ClaimVerdict]]:
    """A bare yes/no answer ("Yes.", "Nope.") read after its question asserts the question's proposition or its
    negation; a reference that states the other is not supported by it, and the answer is not supported by the
    reference (a judge of word overlap reads the question's words and not the one word after them: 'Yes.' to 'Is FP8
    supported on the A100?' shared every word of 'FP8 is not supported on the A100.')."""
    q, answer = t.question.strip(), t.answer.strip()
    if not q or not bare_answer(answer) or leading_polarity(answer) is None:
        return ans_v, ref_v
    asserted = f"{q} {answer}"

    def overruled(v: ClaimVerdict, premise: str) -> ClaimVerdict:
        if v.verdict != "supported" or not polarity_mismatch(asserted, q, premise):
            return v
        return replace(v, verdict="unsupported", note=_OPPOSITE)

    return ([overruled(v, v.sentence or t.reference or "") for v in ans_v],
            [overruled(v, v.claim) for v in ref_v])
