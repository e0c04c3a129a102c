"""The retrieval family (eval/metrics/retrieval.py): any kind@k, rules on labels, values from pytrec_eval."""
import math

import pytest

from corpora.records import Candidate, Chunk
from eval.judges.labels import LabelsJudge
from eval.metrics import find, get
from tests.eval.metrics.records import CUR, NOISE, OLD, trace


@pytest.mark.parametrize("name, known", [("recall@5", True), ("ndcg@10", True), ("mrr@1", True), ("recall@0", False),
                                         ("recall", False), ("f1@5", False), ("recall@x", False),
                                         # one spelling per k: "recall@05" would be judged under a name the
                                         # results never carry; "²" and "٥" are digits to str.isdigit only
                                         ("recall@05", False), ("recall@\u00b2", False), ("recall@\u0665", False),
                                         ("recall@+5", False), ("recall@ 5", False)])
def test_names(name, known):
    assert (find(name) is not None) is known


def test_rules_and_values():
    m = get("recall@2")
    assert not m.model and m.fixed(trace(), "labels").reason == "no relevance labels"
    unanswerable = trace(relevant_doc_ids=[], metadata={"kind": "unanswerable"})
    assert m.fixed(unanswerable, "labels").reason == "no relevant documents (unanswerable)"
    no_docs = trace(relevant_doc_ids=["cur"], contexts=[Chunk(chunk_id="x", text="t", rank=1)])
    assert m.fixed(no_docs, "labels").status == "unmeasured"
    hit, miss = trace(relevant_doc_ids=["cur"], contexts=[NOISE.model_copy(update={"rank": 1}), CUR]), \
        trace(sample_id="m", relevant_doc_ids=["cur"], contexts=[OLD])
    assert [r.value for r in LabelsJudge().judge("recall@2", [hit, miss])] == [1.0, 0.0]
    assert LabelsJudge().judge("mrr@10", [hit])[0].value == 0.5


def test_a_record_without_contexts_is_not_applicable_where_nothing_could_apply():
    """No contexts make a metric unmeasured only where it could have been measured: without relevance labels the
    retrieval metrics, and without a reference context recall, are not applicable either way (an unmeasured there
    would count against --max-unmeasured for labels nobody gave)."""
    import ragdoctor

    bare = {"id": "s", "question": "What is the default block size?", "answer": "It is 16."}  # no contexts at all
    labelled = {**bare, "id": "l", "relevant_ids": ["cur"], "reference": "16 tokens."}
    result = ragdoctor.evaluate([bare, labelled], judges="lexical,labels",  # the path `ragdoctor eval` takes
                                metrics="recall@5,context_recall,context_precision,groundedness")
    got = {(j.sample_id, r.metric): r.status for j in result.judgements for r in j.results}
    assert got[("s", "recall@5")] == got[("s", "context_recall")] == "not_applicable"
    # it applies where it could have been measured: the contexts are missing, so unmeasured, never 0 or n/a
    assert got[("s", "groundedness")] == got[("s", "context_precision")] == "unmeasured"
    assert got[("l", "recall@5")] == got[("l", "context_recall")] == "unmeasured"


def test_a_blocked_record_with_an_empty_context_list_is_not_a_retrieval_miss():
    """Other systems write ``contexts: []`` for a question a rail stopped before retrieval: not applicable, as a
    blocked record without contexts is, never a measured recall 0. An empty list after a rail that ran once the
    chunks were retrieved (the output rail) is what retrieval found: measured."""
    from eval.metrics.base import BLOCKED_BEFORE_RETRIEVAL

    before = trace(answer="", sample_id="b", relevant_doc_ids=["cur"], contexts=[], outcome="blocked")
    input_rail = trace(answer="", sample_id="i", relevant_doc_ids=["cur"], contexts=[], outcome="blocked",
                       guardrails={"blocked_by": "input"})
    after = trace(answer="", sample_id="a", relevant_doc_ids=["cur"], contexts=[], outcome="blocked",
                  guardrails={"blocked_by": "output"})
    for metric in ("recall@5", "ndcg@10", "context_recall", "context_precision"):
        got = [get(metric).fixed(t, "labels") for t in (before, input_rail)]
        assert [(r.status, r.reason) for r in got] == [("not_applicable", BLOCKED_BEFORE_RETRIEVAL)] * 2, metric
    assert LabelsJudge().judge("recall@5", [after])[0].value == 0.0


def _apply(name: str, t) -> float:
    return get(name).apply(LabelsJudge(), "labels", [t])[0]


def test_the_ranking_goes_on_past_the_cut_with_the_candidates():
    # top_k 2 and the relevant document ranked 3rd by the retriever: recall@5 reads the candidates (it was a silent
    # recall@2), recall@2 the contexts alone
    t = trace(relevant_doc_ids=["cur"], contexts=[NOISE.model_copy(update={"rank": 1}),
                                                  OLD.model_copy(update={"rank": 2})],
              candidates=[Candidate(chunk_id="cur#0", doc_id="cur", rank=3)])
    assert _apply("recall@5", t).value == 1.0 and _apply("recall@2", t).value == 0.0
    assert _apply("mrr@10", t).value == pytest.approx(1 / 3)


def test_relevant_ids_that_name_chunks_are_matched_against_the_chunk_ranking():
    kv0 = Chunk(chunk_id="kv#0", doc_id="kv", rank=1, text="a")
    kv1 = Chunk(chunk_id="kv#1", doc_id="kv", rank=2, text="b")
    r = get("recall@5").apply(LabelsJudge(), "labels", [trace(relevant_doc_ids=["kv#1"], contexts=[kv0, kv1])])[0]
    assert r.value == 1.0 and r.evidence["level"] == "chunk"
    assert _apply("mrr@10", trace(relevant_doc_ids=["kv#1"], contexts=[kv0, kv1])).value == 0.5
    # a document id among the labels: documents, as before (kv counts once)
    assert _apply("recall@1", trace(relevant_doc_ids=["kv"], contexts=[kv0, kv1])).value == 1.0


def test_ndcg_reads_graded_qrels_and_qrels_alone_are_labels():
    b = Chunk(chunk_id="b#0", doc_id="b", rank=1, text="b")
    a = Chunk(chunk_id="a#0", doc_id="a", rank=2, text="a")
    graded = trace(metadata={"qrels": {"a": 3, "b": 1}}, contexts=[b, a])
    assert graded.relevant_doc_ids == ["a", "b"]  # the grade > 0 documents, for every reader
    # trec_eval's gains are the grades: DCG 1/log2(2) + 3/log2(3) against the ideal 3/log2(2) + 1/log2(3)
    ideal = 3 + 1 / math.log2(3)
    assert _apply("ndcg@10", graded).value == pytest.approx((1 + 3 / math.log2(3)) / ideal, abs=1e-4)
    flat = trace(relevant_doc_ids=["a", "b"], contexts=[b, a])
    assert _apply("ndcg@10", flat).value == 1.0
