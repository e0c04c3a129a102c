"""context_precision's rules and computation on hand-made traces (eval/metrics/context_precision.py)."""
from eval.metrics import get
from eval.metrics.base import BLANK_CONTEXTS
from tests.eval.metrics.records import CUR, NOISE, OLD, REFERENCE, strict, trace

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


def _blank(cid: str, rank: int, text: str = ""):
    from corpora.records import Chunk

    return Chunk(chunk_id=cid, doc_id=cid.split("#")[0], rank=rank, text=text)


def test_a_blank_chunk_is_left_out_of_the_ranking_and_said_in_the_evidence():
    """A retrieved context with no text (an empty or whitespace-only field) holds nothing to judge: it is no verdict of
    irrelevance at its rank (that would pull the value down in silence), so the ranking is the chunks with text, and
    the evidence names the chunks left out, with why."""
    contexts = [_blank("empty#0", 1), CUR.model_copy(update={"rank": 2}), _blank("spaces#0", 3, " \n\t "),
                NOISE.model_copy(update={"rank": 4})]
    for reference in (REFERENCE, None):  # against the reference, and against the question
        (r,) = strict().judge("context_precision", [trace(contexts=contexts, reference=reference)])
        assert r.status == "ok" and r.value == 1.0, r  # the relevant chunk is first among the chunks with text
        assert [c["chunk_id"] for c in r.evidence["chunks"]] == ["cur#0", "noise#0"]
        assert r.evidence["blank_chunks"] == ["empty#0", "spaces#0"]
        assert r.evidence["note"] == "2 blank context(s) (no text to judge) left out of the ranking: ranks 1, 3"
        assert all(a.passage.strip() or any(t.strip() for t in a.texts) for a in METRIC.asks(trace(
            contexts=contexts, reference=reference), r))  # no ask ever reads a blank chunk
    (clean,) = strict().judge("context_precision", [trace(contexts=[CUR, NOISE.model_copy(update={"rank": 2})])])
    assert "blank_chunks" not in clean.evidence and "note" not in clean.evidence


def test_only_blank_chunks_are_unmeasured_never_a_measured_zero():
    (r,) = strict().judge("context_precision", [trace(contexts=[_blank("a#0", 1), _blank("b#0", 2, "  ")])])
    assert r.status == "unmeasured" and r.value is None and r.reason == BLANK_CONTEXTS
