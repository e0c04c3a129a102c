"""The retrieval family (eval/metrics/retrieval.py): any kind@k, rules on labels, values from pytrec_eval."""
import pytest

from corpora.records import Chunk
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
