"""eval/meta/scoring.py: CountingScorer counts what the model really reads, for relevance as for support."""
import pytest

from eval.judges.base import Support
from eval.judges.cross_encoder import CrossEncoderScorer
from eval.judges.nli import CompactJudgeScorer, relevance_windows
from eval.judges.scorer import ScorerJudge
from eval.meta.datasets import LabelledItem, Task
from eval.meta.meta_eval import truncation_fields
from eval.meta.scoring import CountingScorer, Tally, relevance_reads, score_task


class _WordModel:
    """A stand-in cross-encoder reading ``limit`` words of a (premise, hypothesis) pair; records what it was given."""

    def __init__(self, limit: int):
        self.limit = limit
        self.seen: list[tuple[str, str]] = []

    def count_truncated(self, pairs):
        self.seen.extend(pairs)
        return sum(1 for p, h in pairs if len(p.split()) + len(h.split()) > self.limit)


class _Judge(CompactJudgeScorer):
    """The compact judge's relevance path without its models: windows as the judge builds them, read by ``rel_ce``."""

    def __init__(self, support_model: _WordModel, relevance_model: _WordModel | None):  # no super(): no folder
        self.name, self.support_threshold, self.relevance_threshold = "nli", 0.5, 0.5
        self.ce, self.rel_ce = support_model, relevance_model  # type: ignore[assignment]

    def support(self, pairs):
        return [Support(0.5) for _ in pairs]

    def relevance(self, pairs):
        return [0.5 for _ in pairs]


LONG = " ".join(f"w{i}" for i in range(260))  # 260 words: windows of 100 words every 50, the 4 best kept
QUESTION = "what is w3 and w250"


def _relevance_task() -> Task:
    return Task("ares", "context_relevance", "context_relevant", "relevance", "binary",
                [LabelledItem("1", QUESTION, LONG, 1.0), LabelledItem("2", QUESTION, "a short passage", 0.0)])


def test_relevance_counts_the_windows_the_relevance_model_reads():
    """It used to count no relevance pair at all, so the 'cut' column said 0% on relevance tasks."""
    support, relevance = _WordModel(limit=10), _WordModel(limit=50)
    counter = CountingScorer(_Judge(support, relevance))
    score_task(ScorerJudge(counter), _relevance_task())
    windows = relevance_windows(LONG, QUESTION)
    assert len(windows) == 4 and relevance.seen == [(w, QUESTION) for w in windows] + [("a short passage", QUESTION)]
    assert support.seen == []  # the relevance model's own length, not the support model's
    tally = counter.tally()
    assert (tally.pairs, tally.checked, tally.truncated, tally.unchecked) == (2, 5, 4, 0)
    assert truncation_fields(tally) == {"truncated_pairs": 4, "truncated_share": 0.8, "model_pairs": 5}


def test_a_judge_without_a_relevance_model_is_counted_on_its_support_model():
    support = _WordModel(limit=1000)
    counter = CountingScorer(_Judge(support, None))
    counter.relevance([(QUESTION, "")])
    assert support.seen == [("", QUESTION)]  # a blank passage is read as one empty window, as the judge does
    assert counter.tally() == Tally(pairs=1, checked=1, truncated=0, unchecked=0)


def test_a_bare_cross_encoder_reads_the_whole_passage_with_the_question(tmp_path):
    ce = CrossEncoderScorer(tmp_path)  # no model is loaded: only what it would read is asked
    model, reads = relevance_reads(ce, [("q?", "the passage")])
    assert model is ce and reads == [("the passage", "q?")]


class _Unknown:
    """A scorer that counts its support inputs but whose relevance inputs nobody knows."""

    name, family, support_threshold, relevance_threshold = "x", "nli", 0.5, 0.5

    def count_truncated(self, pairs):
        return 0

    def support(self, pairs):
        return [Support(0.5) for _ in pairs]

    def relevance(self, pairs):
        return [0.5 for _ in pairs]


def test_relevance_that_cannot_be_counted_is_unmeasured_never_zero():
    counter = CountingScorer(_Unknown())
    score_task(ScorerJudge(counter), _relevance_task())
    tally = counter.tally()
    assert tally.unchecked == 2 and tally.truncated == 0
    fields = truncation_fields(tally)
    assert fields["truncated_share"] is None and fields["truncated_pairs"] is None
    assert fields["truncated_reason"].startswith("not counted: 2 scored pairs")


@pytest.mark.model
def test_nli_relevance_cut_share_end_to_end(tmp_path):
    """The shipped judge on a 300-word passage: its four relevance windows (100 words) are longer than the 160 tokens
    it reads, so the share is above 0 and its denominator is the windows, not the (question, passage) pairs."""
    from eval.meta.meta_eval import MetaEvalOptions, run_tasks

    passage = " ".join(f"ref{i}x{7 * i}q" for i in range(300))  # 300 words of several tokens each
    task = Task("ares", "context_relevance", "context_relevant", "relevance", "binary",
                [LabelledItem("1", "What does the town export?", passage, 1.0),
                 LabelledItem("2", "Who won the match?", "The match was won by the home side.", 0.0)])
    report = run_tasks("ares", str(tmp_path), [task], 2, MetaEvalOptions(judges=["nli"], n_resamples=50))
    (r,) = report["results"]
    assert r["scored_pairs"] == 2 and r["model_pairs"] == 5  # four windows of the long passage, one short one
    assert r["truncated_pairs"] == 4 and r["truncated_share"] == 0.8
