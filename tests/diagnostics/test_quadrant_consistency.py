"""The groundedness x correctness quadrant and the failure classifier read a sample the same way
(diagnostics.verdicts): at and around the thresholds, on partial answers, with a metric unmeasured, and (a property)
on any combination of scores, claims, evidence and trace. Where the classifier refines a cell (a missed refusal is a
wrong answer), the cell it is shown in is still the one its category means: disagreement.SHOWN_IN."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpora.records import Candidate, Chunk, Judgement, MetricResult, Trace
from diagnostics.classify import classify
from diagnostics.disagreement import LEFT_OUT, SHOWN_IN, UNMEASURED, VIEWS, metric_disagreements, place
from diagnostics.report import diagnose
from diagnostics.taxonomy import DEFINITIONS
from diagnostics.verdicts import Thresholds, correct_state, grounded_state, pick, trace_of

GXC = VIEWS[0]
PROPS = settings(max_examples=400, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])
M = MetricResult
REFUSAL = "I don't know based on the provided documents."
CTX = [Chunk(chunk_id="cur#0", doc_id="cur", text="Updated 2025: the default block size is 16 tokens.", rank=1),
       Chunk(chunk_id="old#0", doc_id="old", text="Note 2023: the default block size is 32 tokens.", rank=2)]
SUPPORTED = {"claim": "The default block size is 32 tokens.", "verdict": "supported", "score": 0.97,
             "chunk_id": "old#0", "sentence": "Note 2023: the default block size is 32 tokens."}
NOISE = Chunk(chunk_id="noise#0", doc_id="noise", text="Unrelated text about LoRA.", rank=1)
UNSUPPORTED = {**SUPPORTED, "claim": "Blocks live on disk.", "verdict": "unsupported", "score": 0.1}


def trace(sid: str = "s", answer: str = "The default block size is 32 tokens.", reference: str | None = "16 tokens.",
          relevant: list[str] | None = None, outcome: str = "answered", metadata: dict | None = None,
          contexts: list[Chunk] | None = None, candidates: tuple[Candidate, ...] = ()) -> Trace:
    return Trace(sample_id=sid, question="What is the default block size?", answer=answer, reference=reference,
                 relevant_doc_ids=["cur"] if relevant is None else relevant, outcome=outcome,
                 contexts=CTX if contexts is None else contexts, metadata=metadata or {}, candidates=list(candidates))


def judged(sid: str = "s", *, g: float | str | None = None, c: float | str | None = None, claims=None,
           t: Trace | None = None, **correctness_evidence) -> Judgement:
    """``g``/``c``: a value, "unmeasured" (the judge could not decide), "n/a" (not applicable) or None (not evaluated)."""
    rs = []
    for metric, v, ev in (("groundedness", g, {"claims": claims if claims is not None else [SUPPORTED]}),
                          ("answer_correctness", c, correctness_evidence)):
        if v == "unmeasured":
            rs.append(M.unmeasured(metric, "nli", "judge failed: TimeoutError"))
        elif v == "n/a":
            rs.append(M.not_applicable(metric, "nli", "no reference answer"))
        elif v is not None:
            rs.append(M.ok(metric, "nli", float(v), **ev))
    return Judgement(sample_id=sid, results=rs, trace=t if t is not None else trace(sid))


def where_and_class(j: Judgement, th: Thresholds | None = None) -> tuple[str, str]:
    return place(j, GXC, th=th).where, classify(j, th).category


# --- at the boundaries ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("kw", "where", "category"), [
    # groundedness exactly at its cut, every claim supported: grounded; a hair under: ungrounded, on both sides
    ({"g": 0.75, "c": 0.0}, "grounded_wrong", "grounded_yet_hallucinated"),
    ({"g": 0.7499, "c": 0.0}, "ungrounded_wrong", "ungrounded_hallucination"),
    ({"g": 0.75, "c": 1.0}, "grounded_right", "ok"),
    # a right answer the context backs only in part was "ok" (the classifier read 0.5, the quadrant 0.75)
    ({"g": 0.7499, "c": 1.0}, "ungrounded_right", "ungrounded_hallucination"),
    ({"g": 0.5, "c": 1.0}, "ungrounded_right", "ungrounded_hallucination"),
    # at or above the cut but a claim unsupported: not grounded (the quadrant read the value alone: grounded_wrong)
    ({"g": 0.9, "c": 0.0, "claims": [SUPPORTED, UNSUPPORTED]}, "ungrounded_wrong", "ungrounded_hallucination"),
    ({"g": 0.9, "c": 1.0, "claims": [SUPPORTED, UNSUPPORTED]}, "ungrounded_right", "ungrounded_hallucination"),
    # correctness exactly at its cut is right; partial correctness (recall under 0.5, claims right) is neither
    ({"g": 1.0, "c": 0.5}, "grounded_right", "ok"),
    ({"g": 1.0, "c": 0.4999}, "grounded_wrong", "grounded_yet_hallucinated"),
    ({"g": 1.0, "c": 0.5, "precision": 1.0, "recall": 0.5}, "grounded_right", "ok"),
    ({"g": 1.0, "c": 0.4, "precision": 1.0, "recall": 0.4}, "partial", "incomplete"),
    ({"g": 1.0, "c": 0.3, "precision": 0.2, "recall": 0.3}, "grounded_wrong", "grounded_yet_hallucinated"),
    # over the cut, but it changes a fact of the reference: wrong (the dashboard read the value alone: right)
    ({"g": 1.0, "c": 0.6, "precision": 0.6, "recall": 0.6, "conflict": True}, "grounded_wrong",
     "grounded_yet_hallucinated"),
    # unmeasured, or not evaluated at all: in no cell, and never ok (it was ok without groundedness in the run)
    ({"g": "unmeasured", "c": 1.0}, UNMEASURED, "unmeasured"),
    ({"g": None, "c": 1.0}, UNMEASURED, "unmeasured"),
    ({"g": 1.0, "c": "unmeasured"}, UNMEASURED, "unmeasured"),
    ({"g": 1.0, "c": None}, UNMEASURED, "unmeasured"),
    ({"g": "unmeasured", "c": 0.0}, UNMEASURED, "unmeasured"),
    ({"g": "unmeasured", "c": "unmeasured"}, UNMEASURED, "unmeasured"),
])
def test_the_quadrant_and_the_class_at_the_boundaries(kw, where, category):
    relevant = [] if category != "ok" else None  # no labels: the retrieval rules stay out of the way
    j = judged(**kw, t=trace(relevant=relevant))
    assert where_and_class(j) == (where, category)
    assert where in SHOWN_IN[category]


def test_a_wrong_answer_whose_answerability_nothing_tells_is_wrong_on_both_sides():
    """A judgement without its trace (or a record with no reference and no labels) whose correctness judge says wrong:
    the quadrant showed it grounded and wrong while the classifier called it ok."""
    bare = Judgement(sample_id="b", results=[M.ok("groundedness", "nli", 1.0, claims=[SUPPORTED]),
                                             M.ok("answer_correctness", "nli", 0.0)])
    assert where_and_class(bare) == ("grounded_wrong", "grounded_yet_hallucinated")
    no_ref = judged("n", g=1.0, c=0.0, t=trace(reference=None, relevant=[]))
    assert where_and_class(no_ref) == ("grounded_wrong", "grounded_yet_hallucinated")


def test_refusals_blocked_errors_and_missed_refusals_have_one_place():
    refusal = judged("r", g=1.0, c=0.0, t=trace(answer=REFUSAL))
    assert where_and_class(refusal) == ("refusal", "context_ignored")
    blocked = judged("b", g="n/a", c="n/a", t=trace(outcome="blocked", answer=""))
    assert where_and_class(blocked) == ("blocked", "guardrail_block")
    error = judged("e", g=1.0, c=1.0, t=trace(outcome="error", answer=""))
    assert where_and_class(error) == (UNMEASURED, "unmeasured")
    unans = dict(reference="The provided documents do not contain the answer.", relevant=[])
    missed = judged("m", g=1.0, c=0.0, t=trace(**unans))
    assert where_and_class(missed) == ("grounded_wrong", "missed_refusal")  # a wrong answer, refined
    no_ref = judged("a", g=1.0, c="n/a", t=trace(reference=None, relevant=[]))
    assert where_and_class(no_ref) == ("not_applicable", "ok")


def test_the_report_counts_every_sample_once_with_an_unmeasured_bucket():
    js = [judged("gr", g=1.0, c=1.0), judged("gw", g=1.0, c=0.0), judged("g?", g="unmeasured", c=0.0),
          judged("c?", g=1.0, c=None), judged("part", g=1.0, c=0.4, precision=1.0, recall=0.4),
          judged("ref", g=1.0, c=0.0, t=trace("ref", answer=REFUSAL))]
    diagnoses, report = diagnose(js)
    q = report["metric_disagreements"]["groundedness_x_correctness"]
    assert {k: v["count"] for k, v in q.items()} == {"grounded_right": 1, "grounded_wrong": 1, "ungrounded_right": 0,
                                                     "ungrounded_wrong": 0, UNMEASURED: 2, LEFT_OUT: 2}
    assert q[UNMEASURED]["examples"] == ["g?", "c?"] and q[UNMEASURED]["why"] == {"groundedness": 1,
                                                                                 "answer_correctness": 1}
    assert q[LEFT_OUT]["why"] == {"partial": 1, "refusal": 1} and q[UNMEASURED]["explanation"]
    for view in ("context_precision_x_groundedness", "answer_relevance_x_correctness"):
        assert sum(v["count"] for v in report["metric_disagreements"][view].values()) == len(js)
    assert [p["sample_id"] for p in report["metric_disagreements"]["points"]["groundedness_x_correctness"]] == \
        ["gr", "gw"]
    by_id = {d.sample_id: d.category for d in diagnoses}
    assert by_id["c?"] == "unmeasured"
    assert by_id["g?"] == "context_ignored"  # wrong, the context held the answer: told without groundedness


def test_thresholds_come_from_one_place():
    """A stricter groundedness threshold moves the quadrant and the class together (report.diagnose passes its own)."""
    j = judged(g=0.8, c=0.0, t=trace(relevant=[]))
    assert where_and_class(j) == ("grounded_wrong", "grounded_yet_hallucinated")
    strict = Thresholds(grounded=0.9)
    assert where_and_class(j, strict) == ("ungrounded_wrong", "ungrounded_hallucination")
    _, report = diagnose([j], strict)
    assert report["metric_disagreements"]["groundedness_x_correctness"]["ungrounded_wrong"]["count"] == 1
    assert GXC.cuts == (Thresholds().grounded, Thresholds().correct)


def test_every_category_has_a_place_in_the_quadrant():
    assert set(SHOWN_IN) == set(DEFINITIONS)


# --- the property: for any combination, the quadrant and the class agree --------------------------------------------

VALUES = st.sampled_from([0.0, 0.25, 0.4999, 0.5, 0.6, 0.7499, 0.75, 0.9, 1.0]) | st.floats(0.0, 1.0)
STATES = st.one_of(VALUES, st.sampled_from(["unmeasured", "n/a", None]))
EVIDENCE = st.fixed_dictionaries({}, optional={"precision": VALUES, "recall": VALUES, "conflict": st.booleans()})
CLAIMS = st.lists(st.sampled_from([SUPPORTED, UNSUPPORTED, {**UNSUPPORTED, "verdict": "contradicted"}]), max_size=3)
TRACES = st.builds(
    trace,
    answer=st.sampled_from(["The default block size is 32 tokens.", "16 tokens.", REFUSAL, ""]),
    reference=st.sampled_from(["16 tokens.", None, "The provided documents do not contain the answer."]),
    relevant=st.sampled_from([None, [], ["cur"], ["old"], ["elsewhere"]]),
    outcome=st.sampled_from(["answered", "answered", "answered", "refused", "blocked", "error"]),
    metadata=st.sampled_from([{}, {"answerable": False}, {"answerable": True}, {"outdated_doc_id": "old"}]),
    contexts=st.sampled_from([None, [CTX[1]], [NOISE], []]),
    candidates=st.sampled_from([(), (Candidate(chunk_id="cur#0", doc_id="cur", rank=7, score=0.1),)]))
OTHERS = st.fixed_dictionaries({}, optional={m: VALUES for m in ("context_precision", "answer_relevance",
                                                                 "context_recall")})


@PROPS
@given(g=STATES, c=STATES, claims=CLAIMS, evidence=EVIDENCE, t=st.none() | TRACES, others=OTHERS,
       second=st.none() | STATES, strict=st.booleans())
def test_the_quadrant_and_the_class_agree_on_any_combination(g, c, claims, evidence, t, others, second, strict):
    j = judged(g=g, c=c, claims=claims, t=t if t is not None else trace(), **evidence)
    if t is None:
        j = Judgement(sample_id=j.sample_id, results=j.results)  # a judgement that does not carry its trace
    if second == "unmeasured":  # a less trusted judge: the pick must be the same on both sides
        j.results.append(M.unmeasured("groundedness", "lexical", "judge failed"))
    elif isinstance(second, float):
        j.results.append(M.ok("groundedness", "lexical", second, claims=claims))
    j.results.extend(M.ok(m, "nli", v) for m, v in others.items())
    th = Thresholds(grounded=0.9) if strict else Thresholds()
    p, d = place(j, GXC, th=th), classify(j, th)
    assert p.where in SHOWN_IN[d.category], (p, d.category, d.rule)
    # the two readings the cell is made of are the verdicts module's, whatever the classifier refined
    if p.cell in GXC.names.values():
        gs = grounded_state(pick(j, "groundedness"), th)
        cs = correct_state(pick(j, "answer_correctness"), trace_of(j), th)
        assert (gs, cs) == ("grounded" if p.cell.startswith("grounded") else "ungrounded",
                            "right" if p.cell.endswith("_right") else "wrong")
    # the report counts it where place put it, once
    q = metric_disagreements([j], th)["groundedness_x_correctness"]
    assert [k for k, v in q.items() if v["count"]] == [p.cell]
