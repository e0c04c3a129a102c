"""answer_relevance: does the answer address the question (not: is it true), the judge's relevance signal on
(question, answer). A refusal is the relevant response exactly when nothing answers the question.

A bare answer (a fragment: at most MAX_BARE_WORDS words once its citation marks are gone, verb or not: "16 tokens.",
"2023.", "Yes.", "Woosuk Kwon.") reads as nonsense to every judge, which reads it without the question it answers
("16 tokens." for "What is the default block size?" scored 0.05 by nli, as "Paris." did). So the rules decide it, alike
for every judge, from the kind of answer the question asks for (eval/metrics/answer_types.py):
  - it gives that kind (a yes/no to a yes/no question, a number to a how-many one, a year to a which-year one), or
    names one of the alternatives the question offers ("FP16." to "Is it FP8 or FP16?"): 1.0;
  - else, when it is a short sentence (an auxiliary or a form of be/have/do: "It is there.") or shares a content word
    with the question: the judge looks, as for any answer;
  - else, to a number or date question, one that names no amount or time in words either ("Paris." to "How many
    GPUs?", "Blue." to "Which year ...?"): 0.0;
  - else unmeasured, with its reason: a fragment that says it does not know, one that qualifies a yes/no ("Only on
    Linux."), a vague amount or time ("Several."), and any bare answer to another question ("Woosuk Kwon." to "Who
    wrote vLLM?"): its relevance cannot be told from the fragment.
A longer answer goes to the judge."""
from __future__ import annotations

from corpora.records import MetricResult, Trace
from eval.answerability import refused, unanswerable
from eval.metrics.answer_types import (
    DATE,
    NUMBER,
    YES_NO,
    asked_kind,
    gives,
    picks_alternative,
    sentence,
    unsure,
    vague,
)
from eval.metrics.base import BLOCKED, Ask, Metric, wordless
from eval.metrics.verify import Verifier
from eval.sentences import word_count
from eval.tokens import content_tokens
from rag.prompt import strip_citations

NAME = "answer_relevance"
MAX_BARE_WORDS = 4  # words (a CJK character is one, eval.sentences.word_count) of a bare answer


def rules(t: Trace, judge: str) -> MetricResult | None:
    if t.outcome == "blocked":
        return MetricResult.not_applicable(NAME, judge, BLOCKED)
    if not t.answer.strip():
        return MetricResult.unmeasured(NAME, judge, "empty answer")
    if wordless(t.answer):  # "...", "[kv#0]": nothing a judge could find relevant or not
        return MetricResult.unmeasured(NAME, judge, "the answer has no words to check")
    if refused(t):
        u = unanswerable(t)
        if u is None:
            return MetricResult.unmeasured(NAME, judge, "refusal, and no label says whether the question is answerable")
        return MetricResult.ok(NAME, judge, 1.0 if u else 0.0, refusal=True)
    return fragment_result(t, judge)


def fragment_result(t: Trace, judge: str) -> MetricResult | None:
    """The result for a bare answer (see the module docstring); None for a longer one, or where the judge looks."""
    fragment = strip_citations(t.answer, footnotes=True).strip()
    if word_count(fragment) > MAX_BARE_WORDS:
        return None
    kind = asked_kind(t.question)
    if unsure(fragment):
        return MetricResult.unmeasured(NAME, judge, "a bare answer that says it does not know", answer_type=kind,
                                       bare=True)
    if kind is None and picks_alternative(t.question, fragment):
        return MetricResult.ok(NAME, judge, 1.0, answer_type="choice", bare=True,
                               note="a bare answer that picks one of the alternatives the question offers")
    if kind is not None and gives(fragment, kind):
        return MetricResult.ok(NAME, judge, 1.0, answer_type=kind, bare=True,
                               note=f"a bare answer that gives the {kind} the question asks for")
    if sentence(fragment) or set(content_tokens(fragment)) & set(content_tokens(t.question)):
        return None  # a short sentence, or it names what the question asks about: the judge reads it as any answer
    if kind in (NUMBER, DATE) and not vague(fragment):
        return MetricResult.ok(NAME, judge, 0.0, answer_type=kind, bare=True,
                               note=f"a bare answer that gives no {kind}: the question asks for one")
    if kind == YES_NO:
        why = "a bare answer to a yes/no question that is no yes or no: whether it answers cannot be told from it"
    elif kind is not None:
        why = f"a bare answer that gives no {kind} but an amount or time in words: not judged from the fragment"
    else:
        why = "a bare answer to a question that asks for no yes/no, number or date: judges read it without the question"
    return MetricResult.unmeasured(NAME, judge, why, answer_type=kind, bare=True)


def compute(v: Verifier, judge: str, traces: list[Trace]) -> list[MetricResult]:
    scores = v.relevance([(t.question, t.answer) for t in traces])
    return [MetricResult.ok(NAME, judge, float(min(1.0, max(0.0, sc)))) for sc in scores]


METRIC = Metric(
    name=NAME,
    summary="does the answer address the question (not: is it true)",
    needs=frozenset({"question", "answer"}),
    rules=rules,
    compute=compute,
    texts=lambda t: [t.question, t.answer],
    # a bare answer's value is the rules', resting on no judge's verdict
    asks=lambda t, r: [] if r.evidence.get("bare") else [Ask(question=t.question, passage=t.answer)],
    display=5,
    ragas="ResponseRelevancy",
)
