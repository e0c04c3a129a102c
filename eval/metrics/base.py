"""What a metric is. Each metric is one module of this package declaring one ``Metric``: its name, what it needs from a
trace, its model-free rules, how it computes from a judge's primitives (eval/metrics/verify.py) and its verdict cut.
Judges consume the declarations (eval/judges/): they never branch on a metric's name."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from corpora.records import MetricResult, Trace, says_something
from eval.answerability import unanswerable
from eval.claims import decompose, standalone
from eval.mathx import fraction
from eval.metrics.key_facts import polarity_mismatch
from eval.metrics.verify import ClaimVerdict, Verifier
from rag.prompt import strip_citations

Need = Literal["question", "contexts", "answer", "reference", "labels"]
Rules = Callable[[Trace, str], MetricResult | None]
Compute = Callable[..., list[MetricResult]]  # (a Verifier, or None when model is False; judge name; traces)
BLOCKED = "answer was blocked by a guardrail"
BLOCKED_BEFORE_RETRIEVAL = "question was blocked by a guardrail before retrieval"
NO_CONTEXTS = "no contexts in the input record"
BLANK_CONTEXTS = "every retrieved context is blank: no text to judge against"


@dataclass(frozen=True)
class Ask:
    """One primitive verdict a value rests on: ``claim`` checked against ``texts`` (each window led by ``lead``), or,
    without a claim, whether ``passage`` bears on ``question``. ``mark`` is the claim's entry in the result's evidence
    (its verdict becomes "undecided" when the judge could not decide the ask)."""

    claim: str = ""
    texts: tuple[str, ...] = ()
    lead: str = ""
    question: str = ""
    passage: str = ""
    mark: dict[str, Any] | None = None


def _no_rules(t: Trace, judge: str) -> MetricResult | None:
    return None


def _no_texts(t: Trace) -> list[str]:
    return []


def _no_asks(t: Trace, r: MetricResult) -> list[Ask]:
    return []


# the rails that run once the chunks are retrieved (rag/guardrails: the output rail checks the answer against them)
RAILS_AFTER_RETRIEVAL = frozenset({"output", "retrieval"})


def blocked_after_retrieval(t: Trace) -> bool:
    """The record says its question was retrieved for before a rail blocked it (its ``guardrails.blocked_by``)."""
    return str((t.guardrails or {}).get("blocked_by") or "") in RAILS_AFTER_RETRIEVAL


@dataclass(frozen=True)
class Metric:
    """``rules`` give the results no model is needed for (None: a judge must look); ``compute`` gives the rest from a
    judge's primitives (``model``: a Verifier; otherwise None is passed, e.g. retrieval metrics from labels); ``texts``
    are what it shows a model (for the unreadable-text check); ``asks`` the primitive verdicts a value rests on; a value
    at or above ``cut`` reads as "yes" (judge agreement, the disagreement views); ``default``: in the default metric
    set; ``display``: its place in the dashboard's tables."""

    name: str
    summary: str
    needs: frozenset[Need]
    compute: Compute
    rules: Rules = _no_rules
    # the part of the rules that makes the metric not applicable whatever was retrieved (no relevance labels, no
    # reference): it wins over "no contexts", which makes a metric unmeasured only where it could have been measured;
    # ``fixed`` asks it before ``rules``, so ``rules`` need not repeat it
    applies: Rules = _no_rules
    texts: Callable[[Trace], list[str]] = _no_texts
    asks: Callable[[Trace, MetricResult], list[Ask]] = _no_asks
    cut: float = 0.5
    model: bool = True
    default: bool = True
    higher_is_better: bool = True
    display: int = 99  # position in the dashboard's tables
    ragas: str | None = None  # the ragas metric that measures the same thing (what the ragas judge asks)

    def missing(self, t: Trace, judge: str) -> MetricResult | None:
        """A metric that reads the retrieved contexts, on a record that carried none or only blank ones: unmeasured,
        never a measured 0. A question a guardrail blocked before retrieval: nothing was meant to be retrieved, so not
        applicable (as a blocked answer is for the answer metrics), never a retrieval failure; so is a blocked record
        with an empty list of contexts, as other systems write "nothing retrieved" when a rail stopped the question,
        unless its guardrails record says the rail that blocked it ran after retrieval."""
        if "contexts" in self.needs and not t.chunks and t.outcome == "blocked" and not blocked_after_retrieval(t):
            return MetricResult.not_applicable(self.name, judge, BLOCKED_BEFORE_RETRIEVAL)
        if "contexts" in self.needs and not t.has_contexts and (na := self.applies(t, judge)) is not None:
            return na  # no labels or no reference: it could not apply whatever was retrieved
        if "contexts" in self.needs and not t.has_contexts:
            why = t.metadata.get("contexts_missing")  # an imported trace may say why (no retrieval span recorded)
            return MetricResult.unmeasured(self.name, judge, f"{NO_CONTEXTS}: {why}" if why else NO_CONTEXTS)
        if self.model and "contexts" in self.needs and t.chunks and not any(c.text.strip() for c in t.chunks):
            # chunks that carry no text (an adapter reading the wrong field): a judge would read nothing, so no
            # measured 0; the retrieval metrics (model=False) still count the chunks' document ids
            return MetricResult.unmeasured(self.name, judge, BLANK_CONTEXTS)
        return None

    def fixed(self, t: Trace, judge: str) -> MetricResult | None:
        """The result the rules fix for this trace, or None when a judge has to look: missing inputs, then what makes
        the metric not applicable (``applies``), then the rest of its rules."""
        return self.missing(t, judge) or self.applies(t, judge) or self.rules(t, judge)

    def apply(self, v: Verifier | None, judge: str, traces: list[Trace]) -> list[MetricResult]:
        """One result per trace: the rules' where they fix one, the computation's (one batch) for the others."""
        results = [self.fixed(t, judge) for t in traces]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            for i, r in zip(todo, self.compute(v, judge, [traces[i] for i in todo])):
                results[i] = r
        return results  # type: ignore[return-value]

    def model_texts(self, t: Trace) -> list[str]:
        return [x for x in self.texts(t) if x.strip()]


# --- pieces the metric modules share ---------------------------------------------------------------------------------

def wordless(answer: str) -> bool:
    """The answer holds no letter or digit once its citation marks are gone ("...", "[kv#0]", "[1]"): nothing a judge
    could read, so every metric that reads it is unmeasured alike."""
    return not says_something(strip_citations(answer, footnotes=True))


def no_claims(answer: str) -> str:
    return "empty answer: no claims to check" if not answer.strip() else "the answer has no words to check as claims"


def against_reference(metric: str, t: Trace, judge: str, why: str = "no reference answer") -> MetricResult | None:
    """The first rules of a metric that reads the answer against the reference: a blocked answer is not judged, and a
    question without a usable reference (none, blank, or labelled unanswerable) is not applicable."""
    if t.outcome == "blocked":
        return MetricResult.not_applicable(metric, judge, BLOCKED)
    if unanswerable(t) is not False or not (t.reference or "").strip():
        return MetricResult.not_applicable(metric, judge, why)
    return None


def passages(t: Trace) -> list[tuple[str, str]]:
    return [(c.chunk_id, c.text) for c in t.chunks]


def claims_supported(metric: str, judge: str, v: Verifier, traces: Sequence[Trace],
                     text_of: Callable[[Trace], str]) -> list[MetricResult]:
    """Share of ``text_of(trace)``'s claims that some retrieved chunk supports, each claim's verdict as evidence; a
    bare yes/no claim is read after the trace's question (eval.claims.standalone) and its polarity checked, and after a
    yes/no question a claim is read without the yes or no it opens with (shown as written)."""
    written = [decompose(text_of(t)) for t in traces]
    verdicts = v.verify([(standalone(w, t.question), passages(t)) for t, w in zip(traces, written)],
                        given=[t.question for t in traces])
    out = []
    for t, vs, w in zip(traces, verdicts, written):
        vs = [polarity_checked(x, t.question) for x in vs]
        vs = [x if x.claim.endswith(c) else replace(x, claim=c) for x, c in zip(vs, w)]
        value = fraction([x.verdict == "supported" for x in vs])
        out.append(MetricResult.ok(metric, judge, value, claims=[x.as_dict() for x in vs]) if value is not None
                   else MetricResult.unmeasured(metric, judge, "no claims to check"))
    return out


def polarity_checked(v: ClaimVerdict, question: str) -> ClaimVerdict:
    """A supported bare yes/no claim whose polarity its best sentence contradicts is not supported (key_facts)."""
    if v.verdict != "supported" or not v.sentence or not polarity_mismatch(v.claim, question, v.sentence):
        return v
    return replace(v, verdict="unsupported", note="the yes/no answer asserts the opposite polarity of its evidence")


def unsupported_claims(r: MetricResult, checks: Sequence[tuple[str, Sequence[str], str]]) -> list[Ask]:
    """An ask per claim of ``r`` that is not supported, for each (evidence key, texts it was checked against, lead)."""
    return [Ask(claim=c["claim"], texts=tuple(texts), lead=lead, mark=c) for key, texts, lead in checks
            for c in r.evidence.get(key, []) if c.get("verdict") != "supported"]
