"""context_precision's rules and computation on hand-made traces (eval/metrics/context_precision.py)."""
from eval.metrics import get
from tests.eval.metrics.records import CUR, NOISE, OLD, strict, trace

METRIC = get("context_precision")


def test_rules():
    assert METRIC.fixed(trace(contexts=[]), "j").reason == "no contexts retrieved"
    assert METRIC.fixed(trace(), "j") is None


def test_rank_aware_precision_against_the_reference_else_the_question():
    (ranked_low,) = strict().judge("context_precision", [trace(contexts=[NOISE.model_copy(update={"rank": 1}),
                                                                         CUR.model_copy(update={"rank": 2})])])
    assert ranked_low.evidence["with_reference"] and ranked_low.value == 0.5  # the one relevant chunk at rank 2
    assert [c["relevant"] for c in ranked_low.evidence["chunks"]] == [False, True]
    (no_ref,) = strict().judge("context_precision", [trace(reference=None, contexts=[CUR, OLD])])
    assert not no_ref.evidence["with_reference"] and no_ref.value == 1.0  # both chunks are about the question


def test_a_chunk_holding_one_fact_of_the_reference_is_relevant():
    """The reference has two facts; each chunk holds one of them. Judged against the whole reference as one claim,
    neither chunk supported it (precision 0); each supports a claim of it."""
    from corpora.records import Chunk

    one = Chunk(chunk_id="a#0", doc_id="a", rank=1, text="The default block size is 16 tokens.")
    two = Chunk(chunk_id="b#0", doc_id="b", rank=2, text="Blocks live in GPU memory.")
    (r,) = strict().judge("context_precision", [trace(contexts=[one, two, NOISE])])
    assert r.value == 1.0 and [c["relevant"] for c in r.evidence["chunks"]] == [True, True, False]
