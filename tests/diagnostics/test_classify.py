"""Each taxonomy rule on hand-made judgements (no model), and the disagreement analysis."""
import re
from typing import get_args

import pytest

from corpora.records import Candidate, Category, Chunk, Judgement, MetricResult, Trace
from diagnostics.classify import classify
from diagnostics.disagreement import judge_disagreements, metric_disagreements
from diagnostics.report import category_table, diagnose
from diagnostics.taxonomy import DEFINITIONS

CTX = [Chunk(chunk_id="cur#0", doc_id="cur", text="Updated 2025: the default block size is 16 tokens.", rank=1),
       Chunk(chunk_id="old#0", doc_id="old", text="Note 2023: the default block size is 32 tokens.", rank=2),
       Chunk(chunk_id="noise#0", doc_id="noise", text="Unrelated text about LoRA.", rank=3)]


def J(sid="s", *, answer="The default block size is 32 tokens.", reference="16 tokens.", relevant=("cur",),
      contexts=CTX, outcome="answered", g=None, c=None, cp=None, ar=None, cr=None, claims=None, recall=None, precision=None,
      conflict=None, metadata=None, judge="nli", error=None, candidates=()):
    s = Trace(sample_id=sid, question="What is the default block size?", answer=answer, reference=reference,
              relevant_doc_ids=None if relevant is None else list(relevant), contexts=list(contexts), outcome=outcome,
              metadata=metadata or {}, error=error, candidates=list(candidates))
    rs = []
    if g is not None:
        rs.append(MetricResult.ok("groundedness", judge, g, claims=claims or []))
    if c is not None:
        ev = {k: v for k, v in (("recall", recall), ("precision", precision), ("conflict", conflict)) if v is not None}
        rs.append(MetricResult.ok("answer_correctness", judge, c, **ev))
    for name, v in (("context_precision", cp), ("answer_relevance", ar), ("context_recall", cr)):
        if v is not None:
            rs.append(MetricResult.ok(name, judge, v))
    return Judgement(sample_id=sid, results=rs, trace=s)


SUPPORTED_BY_OLD = [{"claim": "The default block size is 32 tokens.", "verdict": "supported", "score": 0.97,
                     "chunk_id": "old#0", "sentence": "Note 2023: the default block size is 32 tokens."}]


def test_grounded_yet_hallucinated_names_the_outdated_chunk():
    d = classify(J(g=1.0, c=0.0, cp=0.6, ar=0.9, claims=SUPPORTED_BY_OLD, metadata={"outdated_doc_id": "old"}))
    assert d.category == "grounded_yet_hallucinated"
    sup = d.evidence["supporting"][0]
    assert sup["doc_id"] == "old" and sup["outdated"] and sup["relevant"] is False
    assert "context_ignored" in d.secondary  # the current doc was there too


def test_retrieval_miss_and_ranked_out():
    only_noise = [CTX[2]]
    d = classify(J(contexts=only_noise, g=0.0, c=0.0, answer="It is 64 tokens."))
    assert d.category == "retrieval_miss" and d.evidence["relevant"] == ["cur"]
    assert "ungrounded_hallucination" in d.secondary
    below_the_cut = [Candidate(chunk_id="cur#0", doc_id="cur", rank=7, score=0.1)]
    d = classify(J(contexts=only_noise, g=0.0, c=0.0, candidates=below_the_cut))
    assert d.category == "ranked_out" and d.evidence["candidate_ranks"] == [7]
    far = [CTX[2].model_copy(update={"rank": i, "chunk_id": f"noise#{i}"}) for i in (1, 2, 3)] + [CTX[0].model_copy(update={"rank": 4})]
    d = classify(J(contexts=far, g=0.3, c=0.0))
    assert d.category == "ranked_out"


def test_retrieval_miss_without_labels_uses_the_judge():
    d = classify(J(relevant=None, g=0.0, cp=0.0, ar=0.8, reference=None))
    assert d.category == "retrieval_miss"


def test_context_ignored_and_wrong_refusal():
    d = classify(J(answer="The block size is 64 tokens.", g=0.2, c=0.0, cp=0.7))
    assert d.category == "context_ignored" and "ungrounded_hallucination" in d.secondary
    d = classify(J(answer="I don't know based on the provided documents.", g=1.0, c=0.0))
    assert d.category == "context_ignored" and "wrong_refusal" in d.secondary
    d = classify(J(answer="I don't know based on the provided documents.", relevant=["cur"], contexts=[CTX[2]], g=1.0, c=0.0))
    assert d.category == "retrieval_miss" and "wrong_refusal" in d.secondary


def test_missed_and_correct_refusal():
    unans = dict(reference="The provided documents do not contain the answer.", relevant=())
    d = classify(J(answer="It is 16 tokens.", g=1.0, c=0.0, **unans))
    assert d.category == "missed_refusal"
    d = classify(J(answer="I don't know based on the provided documents.", g=1.0, c=1.0, cp=0.1, **unans))
    assert d.category == "ok" and "noisy_context" in d.secondary


def test_ungrounded_incomplete_offtopic_ok():
    unsup = [{"claim": "Blocks are 16 tokens and live on the CPU.", "verdict": "unsupported", "score": 0.1,
              "chunk_id": "cur#0", "sentence": "x"}]
    d = classify(J(answer="16 tokens, stored on the CPU.", g=0.3, c=0.8, claims=unsup))
    assert d.category == "ungrounded_hallucination" and d.evidence["unsupported"][0]["verdict"] == "unsupported"
    assert classify(J(answer="16.", g=1.0, c=0.8, recall=0.3)).category == "incomplete"
    d = classify(J(answer="LoRA adapters are small.", g=1.0, reference=None, ar=0.1))  # correctness unknown
    assert d.category == "off_topic"
    d = classify(J(answer="16 tokens.", g=1.0, c=1.0, cp=0.8, ar=0.9))
    assert d.category == "ok" and d.secondary == [] and d.rule == "no failure rule fired"


def test_blocked_error_and_unmeasured():
    assert classify(J(outcome="blocked", answer="I could not verify this.")).category == "guardrail_block"
    d = classify(J(outcome="error", error="LLMError: timeout"))
    assert d.category == "unmeasured" and d.evidence["error"] == "LLMError: timeout"
    j = J()
    j.results = [MetricResult.unmeasured("groundedness", "llm", "judge output unparseable")]
    j.trace.reference = None
    j.trace.relevant_doc_ids = None
    d = classify(j)
    assert d.category == "unmeasured" and d.evidence["reasons"]["groundedness"] == "judge output unparseable"


def test_most_trusted_measured_judge_is_used():
    j = J(g=0.0, c=0.0, judge="lexical")
    j.results.append(MetricResult.unmeasured("groundedness", "nli", "judge failed"))
    j.results.append(MetricResult.ok("groundedness", "llm", 1.0, claims=SUPPORTED_BY_OLD))
    d = classify(j)
    assert d.evidence["metrics"]["groundedness"]["judge"] == "llm"


def test_every_category_has_a_definition_and_table():
    diags = [classify(J(sid=f"s{i}", g=1.0, c=1.0, cp=0.9, ar=0.9)) for i in range(3)]
    table = category_table(diags)
    assert table[0]["category"] == "ok" and table[0]["count"] == 3 and table[0]["share"] == 1.0
    assert set(DEFINITIONS) >= {"grounded_yet_hallucinated", "ranked_out", "noisy_context", "unmeasured"}


def test_quadrants_and_judge_disagreement():
    js = [J("gr", g=1.0, c=1.0), J("gw", g=1.0, c=0.0), J("ur", g=0.0, c=1.0), J("uw", g=0.0, c=0.0),
          J("gw2", g=0.9, c=0.2)]
    q = metric_disagreements(js)["groundedness_x_correctness"]
    assert {k: v["count"] for k, v in q.items()} == {"grounded_right": 1, "grounded_wrong": 2,
                                                     "ungrounded_right": 1, "ungrounded_wrong": 1,
                                                     "unmeasured": 0, "left_out": 0}
    assert q["grounded_wrong"]["examples"] == ["gw", "gw2"] and "stale" in q["grounded_wrong"]["explanation"]
    a = J("x", g=1.0, claims=SUPPORTED_BY_OLD)
    a.results.append(MetricResult.ok("groundedness", "llm", 0.0, claims=[{**SUPPORTED_BY_OLD[0], "verdict": "unsupported"}]))
    jd = judge_disagreements([a])["llm_vs_nli"]
    assert jd["claims"] == 1 and jd["agreement"] == 0.0 and jd["confusion"] == {"unsupported|supported": 1}
    assert jd["examples"][0]["nli"]["verdict"] == "supported" and jd["examples"][0]["llm"]["verdict"] == "unsupported"
    diags, report = diagnose(js)
    assert report["n_samples"] == 5 and len(diags) == 5


@pytest.mark.parametrize("cat", sorted(DEFINITIONS))
def test_definitions_are_sentences(cat):
    assert DEFINITIONS[cat].endswith(".") and len(DEFINITIONS[cat]) > 30


def test_every_category_of_the_record_has_a_definition():
    assert set(DEFINITIONS) == set(get_args(Category))


def test_partial_answer_is_incomplete_not_wrong():
    partial = classify(J(answer="16 tokens.", g=1.0, c=0.4, precision=1.0, recall=0.25, claims=SUPPORTED_BY_OLD))
    assert partial.category == "incomplete"
    wrong = classify(J(g=1.0, c=0.3, precision=0.2, recall=0.3, claims=SUPPORTED_BY_OLD))
    assert wrong.category == "grounded_yet_hallucinated"
    verbose = classify(J(g=1.0, c=1.0, precision=0.2, recall=1.0, claims=SUPPORTED_BY_OLD))
    assert verbose.category != "grounded_yet_hallucinated"  # extra claims the reference does not state are not wrong
    nothing = classify(J(g=1.0, c=0.0, precision=1.0, recall=0.0, claims=SUPPORTED_BY_OLD))
    assert nothing.category == "grounded_yet_hallucinated"  # states none of the reference: wrong, backed or not
    changed = classify(J(g=1.0, c=0.0, precision=0.5, recall=0.5, conflict=True, claims=SUPPORTED_BY_OLD))
    assert changed.category == "grounded_yet_hallucinated"  # a changed number or yes/no is wrong whatever the rest


def _wrong_case(sid, results, rel=None):
    t = Trace(sample_id=sid, question="What is the block size?", reference="The block size is 16 tokens.",
              relevant_doc_ids=rel, answer="Blocks live in GPU memory. The block size is 32 tokens.",
              contexts=[Chunk(chunk_id="old#0", doc_id="old", rank=1, text="The block size is 32 tokens.")])
    return classify(Judgement(sample_id=sid, results=results, trace=t))


def _claims(*verdicts):
    return [{"claim": f"c{i}", "verdict": v, "chunk_id": "old#0"} for i, v in enumerate(verdicts)]


def test_a_wrong_answer_is_never_ok_and_grounded_means_no_claim_unsupported():
    """Audit, session 26: each of these was diagnosed 'ok' (or grounded_yet_hallucinated with a claim unsupported)."""
    M = MetricResult
    wrong = M.ok("answer_correctness", "nli", 0.0, precision=0.0, recall=0.0)
    partly = _wrong_case("a", [M.ok("groundedness", "nli", 0.6, claims=_claims("supported", "unsupported")), wrong])
    assert partly.category == "ungrounded_hallucination" and partly.evidence["unsupported"][0]["claim"] == "c1"
    one_of_four = _wrong_case("b", [M.ok("groundedness", "nli", 0.75, claims=_claims(*["supported"] * 3,
                                                                                     "unsupported")), wrong])
    assert one_of_four.category == "ungrounded_hallucination"  # the wrong part may be the unsupported claim
    all_four = _wrong_case("c", [M.ok("groundedness", "nli", 1.0, claims=_claims(*["supported"] * 4)), wrong])
    assert all_four.category == "grounded_yet_hallucinated"
    no_g = _wrong_case("d", [M.unmeasured("groundedness", "nli", "judge failed: TimeoutError"), wrong])
    assert no_g.category == "unmeasured" and "wrong against the reference" in no_g.rule
    no_c = _wrong_case("e", [M.ok("groundedness", "nli", 1.0),
                             M.unmeasured("answer_correctness", "nli", "judge failed: TimeoutError")])
    assert no_c.category == "unmeasured" and no_c.evidence["reasons"] == {
        "answer_correctness": "judge failed: TimeoutError"}


def test_claims_without_their_fields_are_skipped_not_a_crash():
    odd = [{"verdict": "supported"}, "text", {"claim": "c", "verdict": "supported", "chunk_id": "old#0"}]
    r = [MetricResult.ok("groundedness", "nli", 1.0, claims=odd), MetricResult.ok("groundedness", "lexical", 1.0,
                                                                                 claims=odd)]
    d = _wrong_case("f", [*r, MetricResult.ok("answer_correctness", "nli", 0.0, precision=0.0, recall=0.0)])
    assert d.category == "grounded_yet_hallucinated"
    j = Judgement(sample_id="f", results=r)
    assert judge_disagreements([j])["lexical_vs_nli"]["claims"] == 1  # the one well-formed claim


def test_unknown_correctness_with_a_noisy_context_is_not_ok():
    M = MetricResult
    d = _wrong_case("g", [M.ok("groundedness", "nli", 1.0), M.ok("context_precision", "nli", 0.0),
                          M.unmeasured("answer_correctness", "nli", "judge failed: TimeoutError")])
    assert d.category != "ok"


# --- audit 5 --------------------------------------------------------------------------------------------------------
REFUSAL_TEXT = "I don't know based on the provided documents."


def _quadrant_counts(js):
    q = metric_disagreements(js)["groundedness_x_correctness"]
    return {k: v["examples"] for k, v in q.items() if v["count"]}


def test_quadrant_leaves_out_refusals_by_text_and_keeps_incomplete_out_of_wrong():
    """A plain JSONL refusal has outcome 'answered': the refusal is told by its text (eval.answerability.refused); a
    partial answer the classifier calls incomplete is not 'grounded yet wrong'."""
    refusal = J("ref", answer=REFUSAL_TEXT, g=1.0, c=0.0)  # outcome 'answered', as every plain row
    unans = J("unans", answer=REFUSAL_TEXT, g=1.0, c=1.0, reference=None, relevant=(),
              metadata={"answerable": False})
    partial = J("part", answer="16 tokens.", g=1.0, c=0.33, precision=1.0, recall=0.33)
    assert classify(partial).category == "incomplete"
    assert _quadrant_counts([refusal, unans, partial]) == {"left_out": ["ref", "unans", "part"]}
    why = metric_disagreements([refusal, unans, partial])["groundedness_x_correctness"]["left_out"]["why"]
    assert why == {"refusal": 2, "partial": 1}
    assert _quadrant_counts([partial, J("gw", g=1.0, c=0.0)]) == {"grounded_wrong": ["gw"], "left_out": ["part"]}
    right = J("r", answer="16 tokens.", g=1.0, c=1.0, precision=1.0, recall=1.0)
    assert _quadrant_counts([right]) == {"grounded_right": ["r"]}


def test_a_right_short_answer_is_not_off_topic_and_a_partial_one_is_incomplete():
    d = classify(J(answer="16.", g=1.0, c=1.0, precision=1.0, recall=1.0, cp=0.9, ar=0.0))
    assert d.category == "ok"
    d = classify(J(answer="16.", g=1.0, c=0.33, precision=1.0, recall=0.33, cp=0.9, ar=0.0))
    assert d.category == "incomplete"
    d = classify(J(answer="LoRA adapters are small.", g=1.0, ar=0.1, reference=None))  # correctness unknown
    assert d.category == "off_topic"


def test_a_right_answer_with_a_missed_retrieval_is_the_same_with_and_without_labels():
    """Right from parametric knowledge, the context backing none of it: retrieval_miss (ungrounded secondary) whether
    the miss is told by the labels or by the context-precision judge; backed by the context, it is no miss."""
    noise = [CTX[2]]
    labelled = classify(J(answer="16 tokens.", contexts=noise, g=0.0, c=1.0, precision=1.0, recall=1.0, cp=0.0,
                          ar=0.9))
    unlabelled = classify(J(answer="16 tokens.", contexts=noise, relevant=None, g=0.0, c=1.0, precision=1.0,
                            recall=1.0, cp=0.0, ar=0.9))
    for d in (labelled, unlabelled):
        assert d.category == "retrieval_miss" and "ungrounded_hallucination" in d.secondary, d
    backed_l = classify(J(answer="16 tokens.", contexts=noise, g=1.0, c=1.0, precision=1.0, recall=1.0, ar=0.9))
    backed_u = classify(J(answer="16 tokens.", contexts=noise, relevant=None, g=1.0, c=1.0, precision=1.0,
                          recall=1.0, cp=0.0, ar=0.9))
    assert backed_l.category == backed_u.category == "ok" and "retrieval_miss" not in backed_u.secondary


def test_a_refusal_of_unknown_answerability_is_unmeasured():
    j = J(answer=REFUSAL_TEXT, reference=None, relevant=None, g=1.0, cp=1.0)
    j.results.append(MetricResult.unmeasured("answer_relevance", "nli",
                                             "refusal, and no label says whether the question is answerable"))
    d = classify(j)
    assert d.category == "unmeasured" and "answerable" in d.rule
    assert d.evidence["reasons"]["answer_relevance"].startswith("refusal")


def test_an_error_on_an_unanswerable_question_is_no_missed_refusal():
    d = classify(J(outcome="error", error="timed out", answer="", reference=None, relevant=None,
                   metadata={"kind": "unanswerable"}))
    assert d.category == "unmeasured" and "missed_refusal" not in d.secondary


@pytest.mark.parametrize("field", ["recall", "precision"])
def test_a_non_number_in_correctness_evidence_is_read_as_absent_and_said(field):
    ev = {"precision": 1.0, "recall": 0.25, field: "0"}
    j = J(answer="16 tokens.", g=1.0, cp=0.9, ar=0.9)
    j.results.append(MetricResult.ok("answer_correctness", "nli", 0.8, **ev))
    d = classify(j)  # no TypeError
    assert d.evidence["ignored_evidence"] == {f"answer_correctness.{field}": "'0' is not a number in [0, 1]: "
                                                                            "read as absent"}
    diags, report = diagnose([j])
    assert diags[0].category == d.category and report["n_samples"] == 1
    bad_conflict = J(answer="16 tokens.", g=1.0, c=1.0, precision=1.0, recall=1.0, conflict="no", cp=0.9, ar=0.9)
    d = classify(bad_conflict)
    assert d.category == "ok" and "answer_correctness.conflict" in d.evidence["ignored_evidence"]


def test_unmeasured_groundedness_is_never_ok():
    j = J(answer="16 tokens.", contexts=[], relevant=None, c=1.0, precision=1.0, recall=1.0, ar=0.9)
    j.results.append(MetricResult.unmeasured("groundedness", "nli", "no contexts in the input record"))
    d = classify(j)
    assert d.category == "unmeasured" and d.evidence["reasons"]["groundedness"] == "no contexts in the input record"


def test_labels_that_name_chunks_are_read_as_the_retrieval_metrics_read_them():
    # relevant ids naming chunks (kv#1): recall@5 finds it, so diagnose and the dashboard must too (they compared doc ids)
    from corpora.records import Chunk, Trace
    from diagnostics.classify import signals
    from ragdoctor.dashboard.data import first_relevant_rank

    t = Trace(sample_id="c", question="Q?", answer="A.", relevant_doc_ids=["kv#1"],
              contexts=[Chunk(chunk_id="kv#0", doc_id="kv", rank=1, text="a"),
                        Chunk(chunk_id="kv#1", doc_id="kv", rank=2, text="b")])
    from corpora.records import Judgement
    sig = signals(Judgement(sample_id="c", trace=t, results=[]))
    assert sig.relevant_ranks == [2] and first_relevant_rank(t) == 2


# --- audit: unusual runs (a metric left out of the run, values a hair under a threshold) -----------------------------

def test_an_unmeasured_verdict_names_the_metrics_the_run_did_not_evaluate():
    """A run evaluated with `--metrics answer_correctness` (or only retrieval metrics) has no groundedness result at
    all: the diagnosis is 'unmeasured', and its reasons say so instead of being empty."""
    wrong_only = _wrong_case("w", [MetricResult.ok("answer_correctness", "nli", 0.0, precision=0.0, recall=0.0)])
    assert wrong_only.category == "unmeasured"
    assert "not evaluated" in wrong_only.evidence["reasons"]["groundedness"]
    nothing = classify(J())  # neither metric in the run
    assert nothing.category == "unmeasured"
    assert set(nothing.evidence["reasons"]) == {"groundedness", "answer_correctness"}
    assert all("not evaluated" in r for r in nothing.evidence["reasons"].values())
    measured_but_failed = _wrong_case("f", [MetricResult.unmeasured("groundedness", "nli", "judge failed"),
                                            MetricResult.ok("answer_correctness", "nli", 0.0, precision=0.0,
                                                            recall=0.0)])
    assert measured_but_failed.evidence["reasons"] == {"groundedness": "judge failed"}  # its own reason, unchanged


@pytest.mark.parametrize(("kw", "cat", "says"), [
    ({"g": 0.4999, "c": 1.0}, "ungrounded_hallucination", "groundedness 0.4999 < 0.5"),
    ({"g": 1.0, "c": 1.0, "ar": 0.2999}, "ok", None),  # right and terse: on topic whatever relevance says
    ({"g": 1.0, "ar": 0.2999, "reference": None}, "off_topic", "answer relevance 0.2999 < 0.3"),
    ({"g": 1.0, "c": 0.5, "precision": 1.0, "recall": 0.49999}, "incomplete", "recall 0.49999 < 0.5"),
    ({"g": 0.0, "c": 0.0, "cp": 0.33999}, "context_ignored", None),
])
def test_a_value_a_hair_under_a_threshold_is_shown_under_it(kw, cat, says):
    """Two decimals would print "groundedness 0.50 < 0.5": the rule would contradict itself."""
    d = classify(J(answer="16 tokens.", **kw))
    assert d.category == cat and (says is None or says in d.rule), d.rule
    rules = [d.rule, *d.evidence.get("secondary_rules", {}).values()]
    for rule in rules:
        for a, b in re.findall(r"(\d\.\d+) < (\d\.\d+)", rule):
            assert float(a) < float(b), rule
    if "cp" in kw:
        assert "context precision 0.33999 < 0.34" in d.evidence["secondary_rules"]["noisy_context"]


@pytest.mark.parametrize(("kw", "cat"), [
    ({"g": 0.75, "c": 0.5, "precision": 0.5, "recall": 0.5, "cp": 0.34, "ar": 0.3}, "ok"),  # at every cut: passes
    ({"g": 0.5, "c": 0.0, "precision": 0.0, "recall": 0.0}, "ungrounded_hallucination"),  # 0.5 is not < 0.5
])
def test_values_exactly_at_a_threshold(kw, cat):
    d = classify(J(answer="16 tokens.", **kw))
    assert d.category == cat, (d.category, d.rule)


def test_a_run_that_did_not_evaluate_correctness_never_calls_an_answer_ok():
    """`--metric groundedness` alone: a grounded answer (possibly wrong: nothing measured it) was 'ok', which says
    the answer is right. It is 'unmeasured', saying correctness was not evaluated; a correct refusal stays 'ok'."""
    j = J(answer="16 tokens.", g=1.0)
    j.results = [r for r in j.results if r.metric != "answer_correctness"]
    d = classify(j)
    assert d.category == "unmeasured" and "was not evaluated in this run" in d.rule
    assert "answer_correctness" in d.evidence["reasons"]
    refusal = classify(J(answer="I don't know based on the provided documents.", g=1.0, relevant=(),
                         reference="The provided documents do not contain the answer."))
    assert refusal.category == "ok"
