"""The NLI judge reads any sentence-transformers CrossEncoder folder: a 3-way NLI head (label order from id2label)
or a single supported-score head. Heads here are untrained (random), so only the plumbing is asserted."""
import numpy as np
import pytest

from eval.judges.base import JudgeUnavailable
from eval.judges.cross_encoder import CrossEncoderScorer
from rag.models import minilm_path

pytestmark = pytest.mark.model


def save_head(tmp_path, labels: dict[int, str] | None):
    from sentence_transformers import CrossEncoder

    n = len(labels) if labels else 1
    ce = CrossEncoder(str(minilm_path()), num_labels=n, local_files_only=True)
    if labels:
        ce.model.config.id2label = labels
        ce.model.config.label2id = {v: k for k, v in labels.items()}
    out = tmp_path / f"head{n}"
    ce.save(str(out))
    return out


PAIRS = [("The default block size is 16 tokens.", "Blocks hold 16 tokens."), ("FP8 has two formats.", "LoRA is low rank.")]


def test_three_way_head_reads_label_order_from_config(tmp_path):
    path = save_head(tmp_path, {0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"})
    scorer = CrossEncoderScorer(path, batch_size=2)
    out = scorer.support(PAIRS)
    assert len(out) == 2 and all(0 <= s.supported <= 1 and 0 <= s.contradicted <= 1 for s in out)
    assert all(s.supported + s.contradicted <= 1 + 1e-6 for s in out)
    assert scorer._labels == {"entailment": 1, "contradiction": 0}
    again = CrossEncoderScorer(path, batch_size=1).support(PAIRS)  # batching does not change scores
    assert np.allclose([s.supported for s in out], [s.supported for s in again], atol=1e-5)


def test_single_score_head_is_a_probability(tmp_path):
    scorer = CrossEncoderScorer(save_head(tmp_path, None))
    out = scorer.support(PAIRS)
    assert all(0 <= s.supported <= 1 and s.contradicted is None for s in out)
    assert len(scorer.relevance([("Which block size?", "The default block size is 16 tokens.")])) == 1


def test_head_without_entailment_label_and_missing_folder_are_unavailable(tmp_path):
    scorer = CrossEncoderScorer(save_head(tmp_path, {0: "POSITIVE", 1: "NEGATIVE"}))
    with pytest.raises(JudgeUnavailable, match="entailment"):
        scorer.support(PAIRS)
    with pytest.raises(JudgeUnavailable, match="not found"):
        CrossEncoderScorer(tmp_path / "nope")


def test_counting_cut_pairs_counts_them_without_transformers_warning(tmp_path, capfd):
    """meta-eval's cut column counts pairs past max_length on purpose: transformers' "Token indices sequence length is
    longer than the specified maximum" (meant for a sequence about to be run) must not reach the screen."""
    scorer = CrossEncoderScorer(save_head(tmp_path, None), max_length=32)
    assert scorer.count_truncated([("word " * 100, "a claim"), ("short premise", "a claim")]) == 1
    err = capfd.readouterr().err
    assert "longer than the specified maximum" not in err


def test_a_verdict_resting_on_a_pair_the_model_reads_in_part_is_marked_cut(tmp_path):
    """`ragdoctor eval` said nothing when the window a claim was judged on ran past the model's length (its end never
    seen): the claim's evidence now says ``cut``; a pair read whole carries no such key."""
    from corpora.records import Chunk, Trace
    from eval.judges.scorer import ScorerJudge

    scorer = CrossEncoderScorer(save_head(tmp_path, None), max_length=24)
    long_chunk = "The cache stores keys and values for every token of every layer in every request " * 3
    traces = [Trace(sample_id="long", question="What does the cache store?", answer="The cache stores keys.",
                    contexts=[Chunk(chunk_id="c#0", doc_id="c", rank=1, text=long_chunk)]),
              Trace(sample_id="short", question="Which size?", answer="Blocks hold 16.",
                    contexts=[Chunk(chunk_id="d#0", doc_id="d", rank=1, text="Blocks hold 16.")])]
    long_r, short_r = ScorerJudge(scorer).judge("groundedness", traces)
    assert [c.get("cut") for c in long_r.evidence["claims"]] == [True]
    assert all("cut" not in c for c in short_r.evidence["claims"])
    assert scorer.cut_flags([(long_chunk, "x"), ("a", "b")]) == [True, False]


def test_a_single_score_head_is_read_through_one_sigmoid_of_its_logit():
    """sentence-transformers applies a 1-logit head's Sigmoid when predict gets activation_fn=None; a sigmoid on top
    squeezed every probability into [0.5, 0.73], so at the 0.5 threshold a bare CrossEncoder supported everything.
    The trained support model of the shipped judge: a plain paraphrase near 1, an unrelated claim near 0."""
    import torch
    from sentence_transformers import CrossEncoder

    from eval.judges.weights import default_model_dir

    support = default_model_dir() / "support"  # type: ignore[operator]
    pairs = [("The cat sat on the mat.", "A cat sat on a mat."), ("The cat sat on the mat.", "The dog flew to Paris.")]
    got = [s.supported for s in CrossEncoderScorer(support).support(pairs)]
    logits = CrossEncoder(str(support)).predict(pairs, activation_fn=torch.nn.Identity())
    assert np.allclose(got, 1 / (1 + np.exp(-np.asarray(logits, dtype=np.float64))), atol=1e-4)
    assert got[0] > 0.9 and got[1] < 0.1


def test_a_judge_folder_without_a_combiner_scores_by_the_bare_probability():
    from eval.judges.nli import CompactJudgeScorer
    from eval.judges.weights import default_model_dir

    bare = CompactJudgeScorer(default_model_dir(), combiner={})  # type: ignore[arg-type]
    out = [s.supported for s in bare.support([("The cat sat on the mat.", "A cat sat on a mat."),
                                                ("The cat sat on the mat.", "The dog flew to Paris.")])]
    assert out[0] > 0.9 and out[1] < 0.1
