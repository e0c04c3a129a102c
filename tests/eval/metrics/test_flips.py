"""A claim that repeats its evidence with one word turned to its opposite (eval/metrics/flips.py, METRICS_VERSION 25):
read exactly by every metric that reads a claim against passages or a reference, whatever the judge, because a learned
judge and word overlap both read "should be disabled" as a near copy of "should be enabled"."""
from __future__ import annotations

import pytest

from corpora.records import Chunk, Trace
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.metrics import get
from eval.metrics.flips import Said, clauses, flipped

LOOSE = ScorerJudge(LexicalScorer(support_threshold=0.5))  # word overlap alone calls every flip below supported

FLIPS = [  # (claim, evidence): the claim says the opposite
    ("Paged attention should be disabled for long contexts.", "Paged attention should be enabled for long contexts."),
    ("FP8 is supported on A100 GPUs.", "No, FP8 is not supported on A100 GPUs."),
    ("Yes, FP8 is supported on A100 GPUs.", "FP8 is not supported on A100 GPUs; use an H100."),
    ("vLLM does not support LoRA adapters.", "Yes, vLLM supports LoRA adapters."),
    ("Quantization is applied before fine-tuning.", "Quantization is applied after fine-tuning."),
    ("Increasing the batch size decreases throughput.", "Increasing the batch size increases throughput."),
    ("Increasing the batch size decreases throughput.",
     "Increasing the batch size increases throughput until memory runs out."),
    ("The minimum is 4 GB.", "The maximum is 4 GB."),
    ("The model works without calibration data.", "The model works with calibration data."),
    ("The tokenizer is loaded synchronously.", "The tokenizer is loaded asynchronously."),
    ("Shared memory must be enabled in the container.", "Note: shared memory must be disabled in the container."),
    ("FP8 is supported on A100 GPUs.", "FP8 isn\u2019t supported on A100 GPUs \u2014 use an H100 (see \u201cFP8\u201d)."),
    ("The café cache is enabled.", "The café cache is disabled."),
    ("The KV cache is stored in CPU memory.", "Yes, the KV cache is stored in GPU memory."),
    ("The server streams tokens over UDP.", "The server streams tokens over TCP."),
    ("TGI is faster than vLLM for long prompts.", "vLLM is faster than TGI for long prompts."),
    ("Run calibration before pruning.", "Run pruning before calibration."),
    # "not true that" denies; a relative "that" is no reported statement: the negation still denies
    ("The cache is warm.", "It is not true that the cache is warm."),
    ("FP8 is supported on A100 GPUs.", "FP8 is no longer supported on A100 GPUs."),
    ("The bridge was completed.", "The bridge was never completed."),
    ("I am.", "I am not."),  # a negation at the end denies the whole statement
    ("vLLM supports models that use FP8.", "vLLM does not support models that use FP8."),
    ("The docs say that paged attention is disabled.", "The docs say that paged attention is enabled."),
    ("The sparse attention kernel is used.", "The dense attention kernel is used."),
    ("The model runs on a single GPU.", "The model runs on multiple GPUs."),
    ("The legacy API is recommended.", "The legacy API is deprecated."),
    ("Results are sorted in ascending order.", "Results are sorted in descending order."),
    # a verb that denies the one after it is a negation
    ("The server refused to start.", "The server started."),
    ("The loader is unable to read FP8 weights.", "The loader reads FP8 weights."),
    ("The job converges.", "The job fails to converge."),
]
SAME = [  # (claim, evidence): no flip, whatever words the two share
    ("FP8 is supported on H100.", "FP8 is not supported on A100 GPUs, but it is supported on H100."),
    ("X is fast.", "X is not only fast but also cheap."),
    ("The cache is warm.", "If the cache is not warm, latency rises."),
    ("Lower precision reduces memory use.", "Lower precision reduces memory use and increases throughput."),
    ("Larger models need more memory.", "Smaller models need less memory."),
    ("Larger batches increase throughput.", "Smaller batches decrease throughput."),
    ("LoRA adapters are supported by vLLM.", "Yes, vLLM supports LoRA adapters."),
    ("No, A100 GPUs do not support FP8.", "FP8 is not supported on A100 GPUs."),
    ("Paged attention should be disabled.", "Paged attention was enabled. Update: paged attention should be disabled."),
    ("Two men jump on the freeway.", "Two men in Germany jump over a rail on the freeway at noon without shirts."),
    ("People are inside eating lunch.", "People sitting at the table eating lunch watch the passersby outside."),
    ("FP8 is supported on A100 GPUs.",
     "FP8 is not supported on A100 GPUs. Since the 2024 driver update FP8 is supported on A100 GPUs for inference."),
    ("Labels are debated.", "In the debate about whether or not labels are needed, labels are debated."),
    ("George IV was king.", "George III was king. George IV was king after him."),
    ("Is paged attention enabled?", "Paged attention is disabled."),
    ("Enable X and disable Y.", "Enable X and disable Y."),
    ("Der Cache ist aktiviert.", "Der Cache ist nicht aktiviert."),  # English only: never overruled here
    ("Mel Brooks", "To Be or Not to Be is a film produced by Mel Brooks."),
    ("The Eiffel Tower is in Paris.", "The Eiffel Tower is in France."),  # a name may be a more specific true one
    ("The KV cache is stored in GPU memory.", "The key-value cache is stored in GPU memory."),  # an acronym added
    ("Use the REST API for batch jobs.", "Use the gRPC API for streaming and the REST API for batch jobs."),
    ("vLLM is faster than TGI.", "vLLM is faster than TGI for long prompts."),
    ("Convert the checkpoint from FP16 to BF16.", "Convert the checkpoint from FP16 to BF16 first."),
    # a negation about a reported statement is not the statement's opposite
    ("FP8 is supported on A100 GPUs.", "It is not widely known that FP8 is supported on A100 GPUs."),
    ("Paged attention is enabled.", "This does not mean that paged attention is enabled."),
    ("The cache was disabled.", "Nobody noticed that the cache was disabled."),
    ("Paged attention is enabled.", "We cannot guarantee that paged attention is enabled."),
    ("LoRA adapters reduce memory.", "It isn't obvious that LoRA adapters reduce memory."),
    # both polarities at once deny nothing
    ("Parties could or could not include members.", "Such parties may include members."),
    ("The flag is set.", "The flag may or may not be set."),
    ("The cache is or isn't warm.", "The cache is warm."),
    # a "no" that opens a statement is its negation, not an answer word taken away ("No, ..." is one)
    ("No GPU supports FP8.", "No GPU supports FP8 today."),
    ("No fat is in our budget.", "There is no fat in our budget."),
    ("No fighter escort was requested.", "FAA did not request a fighter escort."),
    # ... and a verb that denies says what a negation says
    ("The job does not converge.", "The job fails to converge."),
    ("My brain was not commanding properly.", "My brain refusing to command properly."),
    ("The failed node restarts.", "The node restarts."),
    ("The run did not fail to start.", "The run started."),
    # a bare noun phrase says nothing the evidence's negation denies
    ("The section around the crossing of the River Ribble",
     "The section around the crossing of the River Ribble was never completed."),
]


@pytest.mark.parametrize("claim, evidence", FLIPS)
def test_a_claim_with_one_word_turned_to_its_opposite_is_found(claim, evidence):
    note = flipped(claim, evidence)
    assert note is not None and "evidence says" in note


@pytest.mark.parametrize("claim, evidence", SAME)
def test_a_claim_that_says_what_its_evidence_says_or_something_else_is_left_to_the_judge(claim, evidence):
    assert flipped(claim, evidence) is None


def test_questions_and_conditions_assert_nothing():
    assert clauses("Should it be enabled? It is disabled, but if it is not warm, it stalls.") == \
        ["It is disabled", "it stalls."]


def test_said_reads_the_evidence_once_for_every_claim():
    said = Said("Paged attention should be enabled. The block size is 16 tokens.")
    assert said.flipped("Paged attention should be disabled.") and said.flipped("The block size is 16 tokens.") is None
    assert "'disabled'" in said.flipped("Paged attention should be disabled.") and "'enabled'" in \
        said.flipped("Paged attention should be disabled.")


QUESTION = "Should paged attention be enabled for long contexts?"
REFERENCE = "Yes. Paged attention should be enabled for long contexts."
CONTEXT = Chunk(chunk_id="pa#0", doc_id="pa", rank=1, text="Paged attention should be enabled for long contexts.")


def _trace(answer: str) -> Trace:
    return Trace(sample_id="s", question=QUESTION, answer=answer, reference=REFERENCE, contexts=[CONTEXT])


def test_answer_correctness_and_groundedness_overrule_a_flip_with_a_note():
    flip = _trace("Paged attention should be disabled for long contexts.")
    for metric in ("answer_correctness", "groundedness"):
        r = get(metric).apply(LOOSE, "lexical", [flip])[0]
        assert r.status == "ok" and r.value == 0.0, (metric, r)
    r = get("answer_correctness").apply(LOOSE, "lexical", [flip])[0]
    assert r.evidence["conflict"] and "'disabled'" in r.evidence["note"]
    g = get("groundedness").apply(LOOSE, "lexical", [flip])[0]
    assert "evidence says 'enabled'" in g.evidence["claims"][0]["note"]
    right = _trace("Paged attention should be enabled for long contexts.")
    for metric in ("answer_correctness", "groundedness"):
        assert get(metric).apply(LOOSE, "lexical", [right])[0].value == 1.0, metric


def test_an_outdated_chunk_that_says_the_opposite_is_no_support_for_the_reference():
    """Context precision and recall read the reference's claims against each chunk: a chunk saying the opposite (a stale
    page) supports none of them."""
    stale = Chunk(chunk_id="old#0", doc_id="old", rank=1, text="Paged attention should be disabled for long contexts.")
    t = Trace(sample_id="s", question=QUESTION, answer="Yes.", reference=REFERENCE, contexts=[stale, CONTEXT])
    p = get("context_precision").apply(LOOSE, "lexical", [t])[0]
    assert [c["relevant"] for c in p.evidence["chunks"]] == [False, True]
    only_stale = Trace(sample_id="s", question=QUESTION, answer="Yes.", reference=REFERENCE, contexts=[stale])
    assert get("context_recall").apply(LOOSE, "lexical", [only_stale])[0].value == 0.0
