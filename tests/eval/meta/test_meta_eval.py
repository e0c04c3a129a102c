"""Meta-evaluation: the statistics on hand-computed values, the loaders on tiny files (and their one-line errors),
scoring batches, and the lexical judge end to end on slices of the real human-labelled dev sets."""
import argparse
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from corpora.errors import InputError
from eval.judges.base import Support
from eval.judges.registry import JudgeOptions
from eval.judges.scorer import ScorerJudge
from eval.meta import stats
from eval.meta.datasets import LabelledItem, Task, build_tasks, load_records, load_tasks, subsample
from eval.meta.meta_eval import MetaEvalOptions, flag_results, run_meta_eval, save_report
from eval.meta.scoring import groundedness, reduce_claims, score_task


# statistics -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scores, labels, expected", [
    ([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], 1.0),  # perfect ranking
    ([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1], 0.0),  # inverted
    ([1, 2, 3, 4], [1, 0, 0, 1], 0.5),  # positives at ranks 1 and 4: two of four pairs won
    ([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1], 0.5),  # all tied: ties count half
    ([0.1, 0.2], [1, 1], None),  # one class: undefined, not NaN
])
def test_auroc(scores, labels, expected):
    assert stats.auroc(scores, labels) == (pytest.approx(expected) if expected is not None else None)


def test_rank_auroc_used_in_the_bootstrap_equals_sklearn():
    rng = np.random.default_rng(5)
    for _ in range(20):
        y = rng.integers(0, 2, 60)
        s = rng.integers(0, 6, 60) / 5  # many ties
        assert stats.auroc_ranks(s, y) == pytest.approx(stats.auroc(s, y))
    assert stats.auroc_ranks([0.2, 0.4], [0, 0]) is None


def test_threshold_chosen_on_dev_is_applied_unchanged_to_test():
    # dev candidates 0.1, 0.225, 0.375, 0.6 -> balanced accuracy 0.5, 0.75, 0.5, 0.75: the lowest best wins
    assert stats.best_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.225)
    test_s, test_y = [0.2, 0.3, 0.5, 0.25], [0, 1, 1, 0]
    # at 0.225 the negative 0.25 is a false positive: TPR 1, TNR 0.5; re-choosing on test would give 1.0
    assert stats.balanced_accuracy(test_s, test_y, 0.225) == pytest.approx(0.75)
    assert stats.balanced_accuracy(test_s, test_y, stats.best_threshold(test_s, test_y)) == 1.0
    assert stats.best_threshold([0.3, 0.6], [1, 1]) is None
    assert stats.balanced_accuracy([0.3, 0.6], [0, 1], None) is None


def test_binary_report_uses_dev_threshold_on_test_split():
    rng = np.random.default_rng(3)
    y = np.array([0] * 30 + [1] * 50)
    s = np.clip(rng.normal(0.4 + 0.3 * y, 0.15), 0, 1)
    out = stats.binary_report(s, y, seed=7, n_resamples=200)
    dev, test = stats.stratified_split(y, 0.5, 7)
    thr = stats.best_threshold(s[dev], y[dev])
    assert out["threshold"] == thr and out["n_dev"] + out["n_test"] == 80
    assert out["balanced_accuracy"] == pytest.approx(stats.balanced_accuracy(s[test], y[test], thr))
    lo, hi = out["balanced_accuracy_ci"]
    assert lo <= out["balanced_accuracy"] <= hi and out["auroc_ci"][0] <= out["auroc"] <= out["auroc_ci"][1]


def test_pairwise_accuracy_counts_ties_half():
    good, bad = [1.0, 0.5, 0.2, 0.7], [0.5, 0.5, 0.9, 0.1]
    assert stats.pairwise_outcomes(good, bad).tolist() == [1.0, 0.5, 0.0, 1.0]
    assert stats.pairwise_accuracy(good, bad) == pytest.approx(0.625)
    out = stats.pairwise_report(good * 5, bad * 5, n_resamples=100)
    assert out["pairwise_accuracy"] == pytest.approx(0.625) and out["ties"] == 5 and out["n"] == 20


def test_spearman():
    # ranks (1,2,3,4) vs (1,2.5,2.5,4): covariance 4.5 / sqrt(5 * 4.5) = sqrt(0.9)
    assert stats.spearman([1, 2, 3, 4], [0, 0.5, 0.5, 1]) == pytest.approx(math.sqrt(0.9))
    assert stats.spearman([4, 3, 2, 1], [0, 0.5, 0.5, 1]) == pytest.approx(-math.sqrt(0.9))
    assert stats.spearman([0.3, 0.3, 0.3], [0, 1, 0.5]) is None


def test_expected_calibration_error_and_bins():
    ece, bins = stats.calibration([0.05, 0.15, 0.95, 0.95], [0, 1, 1, 0])
    assert ece == pytest.approx(0.05 / 4 + 0.85 / 4 + 0.45 * 2 / 4)
    assert len(bins) == 10 and [b["count"] for b in bins] == [1, 1, 0, 0, 0, 0, 0, 0, 0, 2]
    assert bins[9]["positive_rate"] == 0.5 and bins[2]["mean_score"] is None
    assert stats.calibration([0.25] * 4, [1, 0, 0, 0])[0] == pytest.approx(0.0)
    assert stats.calibration([1.0], [1])[1][9]["count"] == 1  # a score of 1.0 lands in the last bin


def test_split_is_stratified_seeded_and_disjoint():
    y = [0] * 10 + [1] * 4
    dev, test = stats.stratified_split(y, 0.5, seed=1)
    assert sorted(dev.tolist() + test.tolist()) == list(range(14))
    assert sum(y[i] for i in dev) == 2 and len(dev) == 7
    again = stats.stratified_split(y, 0.5, seed=1)
    assert dev.tolist() == again[0].tolist()
    assert stats.stratified_split([0, 0, 1, 1, 1], 0.5, seed=0)[0].size >= 2  # both classes in dev


def test_bootstrap_is_seeded_and_skips_undefined_resamples():
    y = np.array([0, 1] * 20)
    s = y * 0.5 + np.linspace(0, 0.4, 40)
    a = stats.bootstrap(lambda i: stats.auroc_ranks(s[i], y[i]), 40, n_resamples=200, seed=2)
    assert a == stats.bootstrap(lambda i: stats.auroc_ranks(s[i], y[i]), 40, n_resamples=200, seed=2)
    assert stats.bootstrap(lambda i: None, 10, n_resamples=50) == (None, None)


# loaders ----------------------------------------------------------------------------------------------------------
def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


ARES = {"id": "a1", "question": "What is X?", "context": "X is a tool. It runs fast.", "answer": "X is a tool.",
        "context_relevant": 1, "faithful": 1, "answer_relevant": 0}


def test_ares_loader_and_tasks(tmp_path):
    other = {k: v for k, v in ARES.items() if k not in ("id", "context")} | {"document": "Y is a dog.", "faithful": 0}
    records = load_records("ares", _write(tmp_path, "a.jsonl", [ARES, "", other]))
    tasks = {t.metric: t for t in build_tasks("ares", records)}
    assert set(tasks) == {"context_relevance", "groundedness", "answer_relevance"}
    g = tasks["groundedness"].items
    assert g[0] == LabelledItem("a1", ARES["context"], ARES["answer"], 1.0, ARES["question"], ARES["answer"],
                                g[0].group)
    assert g[1].left == "Y is a dog." and g[1].label == 0.0 and g[1].id == "ares:3"
    assert g[0].group and g[0].group != g[1].group  # rows resample by their document
    assert tasks["context_relevance"].items[0].left == "What is X?"


@pytest.mark.parametrize("dataset, bad, line, field", [
    ("ares", {**ARES, "faithful": 2}, 2, "faithful"),
    ("ares", {k: v for k, v in ARES.items() if k != "answer"}, 2, "answer"),
    ("wice", {"claim": "c", "evidence": ["e"], "label": "maybe"}, 2, "label"),
    ("halueval", {"knowledge": "k", "question": "q", "right_answer": "r"}, 2, "hallucinated_answer"),
    ("jsonl", {"evidence": "e", "text": "t", "label": 1.5}, 2, "label"),
    # a label is a number as written: a bool or a numeric string is not silently read as 1
    ("jsonl", {"evidence": "e", "text": "t", "label": True}, 2, "label"),
    ("jsonl", {"evidence": "e", "text": "t", "label": "1"}, 2, "label"),
    ("ares", {**ARES, "faithful": True}, 2, "faithful"),
    # nothing to judge is an input error, not an item every judge scores the same
    ("jsonl", {"evidence": "e", "text": "   ", "label": 1}, 2, "text"),
    ("jsonl", {"evidence": [], "text": "t", "label": 1}, 2, "evidence"),
    ("jsonl", {"evidence": ["", " "], "text": "t", "label": 1}, 2, "evidence"),
    ("wice", {"claim": "c", "evidence": [" "], "label": "supported"}, 2, "evidence"),
    ("halueval", {"knowledge": "", "question": "q", "right_answer": "r", "hallucinated_answer": "h"}, 2, "knowledge"),
    ("ares", {**ARES, "answer": " "}, 2, "answer"),
])
def test_bad_lines_name_file_line_and_field(tmp_path, dataset, bad, line, field):
    good = {"ares": ARES, "wice": {"claim": "c", "evidence": ["e"], "label": "supported"},
            "halueval": {"knowledge": "k", "question": "q", "right_answer": "r", "hallucinated_answer": "h"},
            "jsonl": {"evidence": "e", "text": "t", "label": 1}}[dataset]
    path = _write(tmp_path, "d.jsonl", [good, bad])
    errors: list[InputError] = []
    assert len(load_records(dataset, path, errors)) == 1  # skipped and reported, as eval does (issue 12, item 11)
    (err,) = errors
    assert (err.line, err.field) == (line, field) and str(path) in str(err)
    with pytest.raises(InputError, match="no valid records"):
        load_records(dataset, _write(tmp_path, "only-bad.jsonl", [bad]))


def test_a_duplicate_id_is_reported_and_its_second_row_skipped(tmp_path):
    rows = [{"id": 7, "evidence": "e", "text": "t", "label": 1}, {"id": "7", "evidence": "f", "text": "u", "label": 0},
            {"evidence": ["e", ""], "text": "t", "label": 0}]  # a blank sentence among others is dropped, not an error
    errors: list[InputError] = []
    recs = load_records("jsonl", _write(tmp_path, "d.jsonl", rows), errors)
    assert [str(r.id) for r in recs] == ["7", "jsonl:3"]
    (err,) = errors
    assert (err.line, err.field) == (2, "id") and "duplicate record id '7' (first on line 1" in str(err)


def test_malformed_json_and_empty_file(tmp_path):
    errors: list[InputError] = []
    load_records("jsonl", _write(tmp_path, "d.jsonl", [{"evidence": "e", "text": "t", "label": 0}, "{oops"]), errors)
    assert re.search(r"d\.jsonl:2: malformed JSON", str(errors[0]))
    with pytest.raises(InputError, match="no records"):
        load_records("jsonl", _write(tmp_path, "e.jsonl", [""]))


def test_wice_grades_and_evidence_sentences(tmp_path):
    rows = [{"claim": f"c{i}", "evidence": ["First.", "Second"], "label": lab, "meta": {"id": f"w{i}"}}
            for i, lab in enumerate(["supported", "partially_supported", "not_supported"])]
    (task,) = build_tasks("wice", load_records("wice", _write(tmp_path, "w.jsonl", rows)))
    assert task.kind == "graded" and [i.label for i in task.items] == [1.0, 0.5, 0.0]
    assert task.items[0].left == "First.\n\nSecond" and task.items[2].id == "w2"


def test_generic_jsonl_binary_or_graded_and_halueval_pairs(tmp_path):
    binary = _write(tmp_path, "b.jsonl", [{"evidence": ["a", "b"], "text": "t", "label": 1},
                                          {"evidence": "e", "text": "t", "label": 0, "extra": "ignored"}])
    assert load_tasks("jsonl", binary)[0][0].kind == "binary"
    graded = _write(tmp_path, "g.jsonl", [{"evidence": "e", "text": "t", "label": 0.25, "id": 7}])
    (task,), total = load_tasks("jsonl", graded)
    assert task.kind == "graded" and task.items[0].id == "7" and total == 1
    halu = _write(tmp_path, "h.jsonl", [{"knowledge": "k", "question": "q", "right_answer": "r",
                                         "hallucinated_answer": "h"}])
    (task,) = build_tasks("halueval", load_records("halueval", halu))
    assert task.kind == "pairwise" and (task.items[0].good, task.items[0].bad) == ("r", "h")


def test_subsample_is_seeded_and_keeps_file_order():
    xs = list(range(50))
    a = subsample(xs, 10, seed=4)
    assert a == subsample(xs, 10, seed=4) and a == sorted(a) and len(a) == 10
    assert subsample(xs, None) == xs and subsample(xs, 99) == xs


# scoring ----------------------------------------------------------------------------------------------------------
class _FakeScorer:
    name, family, support_threshold, relevance_threshold = "fake", "lexical", 0.5, 0.5

    def __init__(self):
        self.calls = 0

    def support(self, pairs):
        self.calls += 1
        return [Support(0.9 if "good" in h else 0.1) for _, h in pairs]

    def relevance(self, pairs):
        self.calls += 1
        return [1.5 for _ in pairs]  # out of range: clipped


def test_groundedness_reduces_claims_and_batches():
    scorer = _FakeScorer()
    judge = ScorerJudge(scorer)
    pairs = [("Some evidence here.", "A good claim is here. A bad claim is here.")] * 10 + [("e", "")]
    out = groundedness(judge, pairs, reduce="min", chunk_size=4)
    assert out[:10] == [0.1] * 10 and out[10] is None and scorer.calls == 3  # ceil(11 / 4) verify batches
    assert groundedness(judge, pairs[:1], reduce="mean") == [pytest.approx(0.5)]
    assert reduce_claims([0.9, 0.1, 0.6], "share", 0.5) == pytest.approx(2 / 3)
    task = Task("t", "answer_relevance", "l", "relevance", "binary", [LabelledItem("1", "q", "a", 1.0)])
    assert score_task(judge, task).scores == [1.0]


# runner and end to end --------------------------------------------------------------------------------------------
def _rows(judge, scores, labels, groups=None):
    return [{"metric": "g", "judge": judge, "id": str(i), "group": (groups or [f"id:{i}"] * len(scores))[i],
             "label": y, "score": s} for i, (s, y) in enumerate(zip(scores, labels))]


def test_beats_lexical_only_when_the_paired_ci_lies_above_zero():
    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 60)
    lexical = y * 0.3 + rng.random(120)  # a weak signal
    strong = y * 2.0 + rng.random(120)  # a clearly better one
    near = lexical + rng.normal(0, 0.01, 120)  # the same signal with noise: a 0.00x lead is not a win
    results = [{"metric": "g", "judge": j, "kind": "binary", "auroc": stats.auroc(s, y), "auroc_ci": (0.6, 0.9),
                "flags": []} for j, s in (("lexical", lexical), ("nli", strong), ("embedding", near))]
    rows = _rows("lexical", lexical, y) + _rows("nli", strong, y) + _rows("embedding", near, y)
    flag_results(results, rows, MetaEvalOptions(n_resamples=300))
    nli, emb = results[1], results[2]
    assert nli["vs_lexical"]["verdict"] == "beats" and nli["beats_lexical"] is True
    assert nli["vs_lexical"]["ci"][0] > 0
    assert emb["vs_lexical"]["verdict"] == "ties" and emb["beats_lexical"] is False
    lo, hi = emb["vs_lexical"]["ci"]
    assert lo <= 0 <= hi
    worse = [{"metric": "g", "judge": "lexical", "kind": "binary", "auroc": 0.9, "auroc_ci": (0.8, 0.95), "flags": []},
             {"metric": "g", "judge": "embedding", "kind": "binary", "auroc": 0.2, "auroc_ci": (0.1, 0.3), "flags": []}]
    # the embedding's ranking inverted but not perfectly: every resample giving -1.000 would have no CI (zero width)
    flag_results(worse, _rows("lexical", y + rng.random(120) * 0.1, y) + _rows("embedding", 1 - y + rng.random(120) * 2, y),
                 MetaEvalOptions(n_resamples=200))
    assert worse[1]["vs_lexical"]["verdict"] == "loses"
    assert any("worse than chance" in f for f in worse[1]["flags"])


def test_paired_difference_on_pairwise_items():
    good, bad = np.array([0.9, 0.8, 0.7, 0.6] * 10), np.array([0.1, 0.9, 0.2, 0.3] * 10)
    res = stats.paired_difference(lambda i: float((good[i] > bad[i]).mean()), lambda i: 0.5, 40, n_resamples=200)
    assert res["difference"] == pytest.approx(0.25) and res["verdict"] == "beats"


def test_clustered_bootstrap_resamples_whole_groups_and_widens_the_ci():
    y = np.array([0, 1] * 10)
    s = y * 0.4 + np.linspace(0, 0.55, 20)
    # the same 20 rows repeated 5 times: as independent rows the CI is far too narrow; grouped, it is not
    s5, y5 = np.tile(s, 5), np.tile(y, 5)
    groups = [f"doc{i % 20}" for i in range(100)]
    stat = lambda i: stats.auroc_ranks(s5[i], y5[i])  # noqa: E731
    naive = stats.bootstrap(stat, 100, n_resamples=300, seed=1)
    clustered = stats.bootstrap(stat, 100, n_resamples=300, seed=1, groups=groups)
    assert (clustered[1] - clustered[0]) > 1.5 * (naive[1] - naive[0])
    draw = stats.resampler(6, ["a", "a", "b", "b", "c", "c"], seed=0)
    idx = draw()
    assert all(((k % 2 == 0) and (k + 1) in idx) or ((k % 2 == 1) and (k - 1) in idx) for k in idx)


def test_degenerate_threshold_is_flagged():
    assert stats.one_class([0.1, 0.2, 0.3], 0.05) and not stats.one_class([0.1, 0.2, 0.3], 0.15)
    rep = stats.binary_report([0.5] * 10, [0, 1] * 5, n_resamples=50)
    assert rep["one_class_threshold"] and rep["balanced_accuracy"] == 0.5
    results = [{"metric": "g", "judge": "x", "kind": "binary", "auroc": 0.5, "auroc_ci": (0.5, 0.5),
                "one_class_threshold": True, "flags": []}]
    flag_results(results)
    assert any("degenerate threshold" in f for f in results[0]["flags"])


def test_jsonl_group_field_drives_the_clustered_bootstrap(tmp_path):
    rows = [{"evidence": "The cat sat on the mat.", "text": t, "label": lab, "group": "article-1" if k < 6 else k}
            for k, (t, lab) in enumerate([("The cat sat.", 1), ("A dog sat.", 0)] * 5)]
    path = _write(tmp_path, "g.jsonl", rows)
    report = run_meta_eval("jsonl", path, MetaEvalOptions(judges=["lexical"], n_resamples=50))
    (res,) = report["results"]
    assert res["n_groups"] == 5  # one article of six rows + four rows on their own
    assert {r["group"] for r in report["scores"]} == {"article-1", 6, 7, 8, 9}  # as the file gave them


def test_unavailable_judges_are_reported_not_raised(tmp_path):
    path = _write(tmp_path, "d.jsonl", [{"evidence": "e", "text": "t", "label": 1}])
    report = run_meta_eval("jsonl", path, MetaEvalOptions(judges=["ragas", "llm"], judge_options=JudgeOptions()))
    assert [u["judge"] for u in report["unavailable"]] == ["ragas", "llm"] and report["results"] == []


def test_lexical_end_to_end_on_real_dev_slices(shared_data, tmp_path):
    opts = MetaEvalOptions(judges=["lexical"], n_resamples=100)
    halu = run_meta_eval("halueval", shared_data / "halueval/qa_dev.jsonl", MetaEvalOptions(
        judges=["lexical"], n_resamples=100, limit=200))
    (r,) = halu["results"]
    assert halu["sample"] == {"limit": 200, "seed": 0, "n": 200, "of": 1000}
    assert r["pairwise_accuracy"] > 0.8 and r["pairwise_accuracy_ci"][0] < r["pairwise_accuracy"]
    ares = run_meta_eval("ares", shared_data / "ares/dev.jsonl", opts)
    by_metric = {r["metric"]: r for r in ares["results"]}
    assert set(by_metric) == {"context_relevance", "groundedness", "answer_relevance"}
    # 99 of 100: ares-68's answer ("Based on the context, there is no clear information on whether ...") is a refusal,
    # no claim to check: unmeasured and counted, not scored
    assert by_metric["groundedness"]["auroc"] > 0.75 and by_metric["groundedness"]["n"] == 99
    wice = run_meta_eval("wice", shared_data / "wice/dev.jsonl", MetaEvalOptions(
        judges=["lexical"], n_resamples=100, limit=120))
    (w,) = wice["results"]
    assert w["n_graded"] == 120 and w["n"] < 120 and -1 <= w["spearman"] <= 1
    files = save_report(ares, tmp_path / "out")
    assert json.loads(Path(files["results"]).read_text())["results"][1]["metric"] == "groundedness"
    assert Path(files["reliability"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_json_output(tmp_path, capsys):
    from ragdoctor.cmd_meta_eval import register

    rows = [{"evidence": "The sky is blue.", "text": "The sky is blue.", "label": 1},
            {"evidence": "The sky is blue.", "text": "Grass is purple.", "label": 0}] * 4
    path = _write(tmp_path, "d.jsonl", rows)
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(), None)
    args = parser.parse_args(["meta-eval", "--dataset", "jsonl", "--path", str(path), "--judge", "lexical",
                              "--format", "json", "--out", str(tmp_path / "o"), "--resamples", "50"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["auroc"] == 1.0 and (tmp_path / "o" / "reliability.png").exists()


def test_ragas_is_meta_evaluated_through_whole_samples(tmp_path):
    """ragas scores (question, contexts, answer) samples, not pairs: each item becomes an Trace of the metric it
    calibrates; the scripted LLM's word-overlap verdicts must rank the supported texts first, in every task kind."""
    from rag.embeddings import FakeEmbedder
    from tests.eval.judges.test_llm_judges import RagasScript

    ares = _write(tmp_path, "ares.jsonl", [
        {"question": "Where is the tower?", "context": "The tower stands in Paris near the river.",
         "answer": "The tower stands in Paris.", "context_relevant": 1, "faithful": 1, "answer_relevant": 1},
        {"question": "Where is the tower?", "context": "Bananas grow in warm places.",
         "answer": "The tower stands in Rome on a hill.", "context_relevant": 0, "faithful": 0, "answer_relevant": 1}])
    halu = _write(tmp_path, "halu.jsonl", [
        {"knowledge": "The bridge opened in 1937 in San Francisco.", "question": "When did the bridge open?",
         "right_answer": "The bridge opened in 1937.", "hallucinated_answer": "The bridge opened in 1950 in Oslo."}])
    opts = MetaEvalOptions(judges=["ragas"], n_resamples=50, judge_options=JudgeOptions(
        llm_factory=RagasScript, embedder=FakeEmbedder()))
    report = run_meta_eval("ares", ares, opts)
    by = {r["metric"]: r for r in report["results"]}
    assert set(by) == {"context_relevance", "groundedness", "answer_relevance"} and not report["unavailable"]
    assert by["groundedness"]["auroc"] == 1.0 and by["groundedness"]["n_unmeasured"] == 0
    assert by["context_relevance"]["auroc"] == 1.0
    assert by["groundedness"]["scored_samples"] == 2 and by["groundedness"]["samples_per_second"] > 0
    pair = run_meta_eval("halueval", halu, opts)["results"][0]
    assert pair["pairwise_accuracy"] == 1.0 and pair["scored_samples"] == 2


def test_metric_filter_runs_only_the_chosen_tasks(tmp_path):
    path = _write(tmp_path, "a.jsonl", [ARES, {**ARES, "id": "a2", "faithful": 0, "answer": "Y is a cat."}])
    report = run_meta_eval("ares", path, MetaEvalOptions(judges=["lexical"], metrics=["groundedness"], n_resamples=20))
    assert [r["metric"] for r in report["results"]] == ["groundedness"]


def test_compare_nli_measures_further_judge_folders_in_the_same_table(tmp_path, capsys):
    """--compare-nli DIR (repeatable): one more nli judge per folder, labelled by its folder's name, with its own
    config id and its paired difference from lexical; a folder that is not there is refused before anything runs."""
    from eval.judges.weights import default_model_dir
    from ragdoctor.cli import main
    from ragdoctor.cmd_meta_eval import nli_variants

    assert nli_variants(["a/judge", "b/judge", "c/other", "d/judge"]) == {
        "nli:judge": "a/judge", "nli:judge#2": "b/judge", "nli:other": "c/other", "nli:judge#3": "d/judge"}
    shipped = default_model_dir()
    rows = [{"evidence": "The sky is blue.", "text": "The sky is blue.", "label": 1},
            {"evidence": "The sky is blue.", "text": "The grass is red.", "label": 0},
            {"evidence": "Paris is the capital of France.", "text": "Paris is in France.", "label": 1},
            {"evidence": "Paris is the capital of France.", "text": "Paris is in Spain.", "label": 0}]
    path = _write(tmp_path, "d.jsonl", rows)
    argv = ["meta-eval", "--dataset", "jsonl", "--path", str(path), "--judge", "lexical", "--judge", "nli",
            "--format", "json", "--resamples", "50", "--out", str(tmp_path / "o")]
    assert main([*argv, "--compare-nli", str(shipped / "support")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["judge"] for r in out["results"]] == ["lexical", "nli", "nli:support"]
    ids = {j["judge"]: j["config_id"] for j in out["judges"]}
    assert ids["nli"] != ids["nli:support"] and "support" in ids["nli:support"]
    assert all(r["vs_lexical"]["n"] == 4 for r in out["results"][1:])
    assert main([*argv, "--compare-nli", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--compare-nli" in err and "folder not found" in err


def test_too_few_units_give_no_ci_and_no_verdict():
    """One group resampled is always itself: a zero-width CI that reads as certainty. Fewer than MIN_UNITS records
    or groups: no CI, and a paired difference without a CI has no beats/loses verdict."""
    s, y = np.linspace(0, 1, 40), np.array([0, 1] * 20)
    one = ["g"] * 40
    assert stats.bootstrap(lambda i: stats.auroc_ranks(s[i], y[i]), 40, n_resamples=200, groups=one) == (None, None)
    four = [f"g{k % 4}" for k in range(40)]
    assert stats.bootstrap(lambda i: float(s[i].mean()), 40, n_resamples=200, groups=four) == (None, None)
    five = [f"g{k % 5}" for k in range(40)]
    assert None not in stats.bootstrap(lambda i: float(s[i].mean()), 40, n_resamples=200, groups=five)
    d = stats.paired_difference(lambda i: float(s[i].mean()), lambda i: float(y[i].mean()), 40, n_resamples=200,
                                groups=one)
    assert d["difference"] is not None and d["ci"] == (None, None) and d["verdict"] is None
    assert stats.bootstrap(lambda i: float(s[i].mean()), 3, n_resamples=200) == (None, None)  # three records


def test_a_difference_without_a_verdict_says_why():
    few = stats.paired_difference(lambda i: float(i.size), lambda i: 1.0, 3, n_resamples=50)
    assert few["verdict"] is None and few["reason"] == "3 items to resample, fewer than 5"
    none = stats.paired_difference(lambda i: None, lambda i: 1.0, 10, n_resamples=50)
    assert none["difference"] is None and none["reason"] == "a statistic is undefined on these items"
    ok = stats.paired_difference(lambda i: float(i.sum()) + 1, lambda i: float(i.sum()) / 2, 10, n_resamples=50)
    assert ok["verdict"] == "beats" and "reason" not in ok
    same = stats.paired_difference(lambda i: float(i.size) + 1, lambda i: float(i.size), 10, n_resamples=50,
                                   refuse_zero_width=True)
    assert same["verdict"] is None and "every resample gives 1.000" in same["reason"]  # zero width: no certainty


# the headline statistic, its flag and its comparison --------------------------------------------------------------
def _pairwise_result(judge, good, bad, n_resamples=500):
    from eval.meta.datasets import ContrastItem
    from eval.meta.meta_eval import _report
    from eval.meta.scoring import TaskScores

    task = Task("halueval", "groundedness", "right > hallucinated", "support", "pairwise",
                [ContrastItem(str(i), "e", "g", "b") for i in range(len(good))])
    r, rows = _report(task, TaskScores(good=list(good), bad=list(bad)), MetaEvalOptions(n_resamples=n_resamples))
    return {**r, "judge": judge, "metric": "groundedness", "kind": "pairwise", "flags": []}, \
        [{"metric": "groundedness", "judge": judge, **row} for row in rows]


def test_pairwise_rows_are_flagged_on_pairwise_accuracy_not_the_pooled_auroc():
    """The row reports pairwise accuracy; the flag used to read the pooled AUROC: a judge losing 30 of 40 pairs got
    no warning (pooled AUROC 0.61), and one winning 30 of 40 was called inverted (pooled AUROC 0.375)."""
    good = [0.1 + 0.5 * i / 40 for i in range(40)]
    losing, _ = _pairwise_result("j", good, [g + 0.01 if i % 4 else 0.0 for i, g in enumerate(good)])
    winning, _ = _pairwise_result("k", good, [g - 0.01 if i % 4 else 0.95 for i, g in enumerate(good)])
    flag_results([losing, winning])
    assert losing["pairwise_accuracy"] == 0.25 and losing["auroc_ci"][0] > 0.5
    assert "worse than chance (pairwise accuracy CI below 0.5): the judge's scores are inverted here" in losing["flags"]
    assert winning["pairwise_accuracy"] == 0.75 and winning["auroc_ci"][1] < 0.5
    assert not any("chance" in f for f in winning["flags"])


def test_a_judge_that_loses_every_pair_is_flagged_and_loses_to_lexical():
    """0 of 30 pairs won: every resample gives 0.000, and a zero-width CI used to be dropped, taking the 'worse than
    chance' flag and the verdict against lexical (which wins all 30) with it. The Wilson interval keeps both."""
    good = [0.1 + 0.02 * i for i in range(30)]
    inverted, rows_j = _pairwise_result("j", good, [g + 0.5 for g in good], n_resamples=200)
    lexical, rows_l = _pairwise_result("lexical", good, [g - 0.05 for g in good], n_resamples=200)
    flag_results([inverted, lexical], rows_j + rows_l, MetaEvalOptions(n_resamples=200))
    assert inverted["pairwise_accuracy"] == 0.0 and inverted["pairwise_accuracy_ci"][1] < 0.12
    assert "worse than chance (pairwise accuracy CI below 0.5): the judge's scores are inverted here" in \
        inverted["flags"]
    cmp = inverted["vs_lexical"]
    assert cmp["verdict"] == "loses" and cmp["difference"] == -1.0 and cmp["note"].startswith("Wilson interval")
    assert any(f.startswith("loses lexical (pairwise_accuracy -1.000") and "Wilson" in f for f in inverted["flags"])


def test_graded_labels_without_0_or_1_compare_and_flag_spearman():
    """Grades 0.25/0.75 only: the headline is Spearman, and the comparison with lexical used to read AUROC on the
    (empty) 0/1 subset: 'no items', and no word that lexical's scores run against the labels."""
    rng = np.random.default_rng(0)
    y = np.array([0.25, 0.75] * 20)
    lexical, better = 1 - y + rng.random(40) * 0.6, y + rng.random(40) * 0.6
    results = []
    for judge, s in (("lexical", lexical), ("embedding", better)):
        rep = stats.graded_report(s, y, n_resamples=300, groups=[("item", str(i)) for i in range(40)])
        results.append({**rep, "judge": judge, "metric": "g", "kind": "graded", "flags": []})
    rows = _rows("lexical", lexical, y) + _rows("embedding", better, y)
    flag_results(results, rows, MetaEvalOptions(n_resamples=300))
    lex, emb = results
    assert lex["auroc"] is None and lex["spearman_ci"][1] < 0
    assert "worse than chance (Spearman CI below 0): the judge's scores are inverted here" in lex["flags"]
    cmp = emb["vs_lexical"]
    assert cmp["statistic"] == "spearman" and cmp["n"] == 40 and cmp["verdict"] == "beats"
    assert cmp["difference"] == pytest.approx(emb["spearman"] - lex["spearman"])


def test_a_users_group_never_merges_with_another_rows_own_cluster(tmp_path):
    """Row r0 has no group; row r5's group is "id:r0", the key r0's own cluster used to get: they merged."""
    from eval.meta.meta_eval import group_of

    assert group_of(LabelledItem("r0", "e", "t", 1.0)) != group_of(LabelledItem("r5", "e", "t", 0.0, group="id:r0"))
    rows = [{"id": f"r{k}", "evidence": "The cat sat on the mat.", "text": t, "label": lab}
            for k, (t, lab) in enumerate([("The cat sat.", 1), ("A dog sat.", 0)] * 5)]
    rows[5]["group"] = "id:r0"
    report = run_meta_eval("jsonl", _write(tmp_path, "c.jsonl", rows), MetaEvalOptions(judges=["lexical"],
                                                                                       n_resamples=50))
    assert report["results"][0]["n_groups"] == 10
    assert [r["group"] for r in report["scores"]][:6] == [None] * 5 + ["id:r0"]  # the user's group as written


# default ids, unread fields, groups as given -----------------------------------------------------------------------
def test_a_default_id_never_collides_with_an_explicit_one(tmp_path):
    """A row without an id used to get 'jsonl:<line>', and an explicit 'jsonl:3' elsewhere in the file made one of
    them a 'duplicate record id' reported on the field 'id', which the row without one does not have."""
    row = {"evidence": "e", "text": "t", "label": 1}
    for lines in ([{**row, "id": "jsonl:3"}, {**row, "id": "r1"}, row],  # the explicit id first
                  [row, {**row, "id": "r1"}, {**row, "id": "jsonl:1"}]):  # the explicit id after the default's line
        errors: list[InputError] = []
        recs = load_records("jsonl", _write(tmp_path, "d.jsonl", lines), errors)
        assert errors == [] and len(recs) == 3 and len({str(r.id) for r in recs}) == 3
    ids = [str(r.id) for r in load_records("jsonl", _write(tmp_path, "d.jsonl", [{**row, "id": "jsonl:3"}, row, row]))]
    assert ids == ["jsonl:3", "jsonl:2", "jsonl:3#2"]
    wice = {"claim": "c", "evidence": ["e"], "label": "supported"}
    errors = []
    recs = load_records("wice", _write(tmp_path, "w.jsonl", [{**wice, "id": "w1"}, {**wice, "meta": {"id": "w1"}}]),
                        errors)
    (err,) = errors  # a duplicate meta.id (WiCE's id) is named as the field it is
    assert err.field == "meta.id" and "duplicate record id 'w1' (first on line 1" in str(err)


def test_fields_the_format_does_not_read_are_named_in_one_warning(tmp_path, caplog):
    rows = [{"evidence": "e", "text": "t", "label": k % 2, "task": "answer_relevance", "metric": "x"} for k in range(4)]
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        load_records("jsonl", _write(tmp_path, "d.jsonl", rows))
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "d.jsonl: field(s) 'metric' (4 lines), 'task' (4 lines) not read by --dataset jsonl" in msg
    assert "rows are not selected by 'metric', 'task'" in msg
    caplog.clear()
    wice = {"claim": "c", "evidence": ["e"], "label": "supported", "supporting_sentences": [0]}
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        load_records("wice", _write(tmp_path, "w.jsonl", [wice]))  # a public set's own extra column: no warning
        load_records("ares", _write(tmp_path, "a.jsonl", [ARES]))
    assert caplog.records == []
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        load_records("wice", _write(tmp_path, "w.jsonl", [{**wice, "judge": "nli"}]))
    assert ["'judge' (1 line)" in r.getMessage() for r in caplog.records] == [True]


def test_group_1_and_1_as_text_are_one_group_and_scores_keep_them_as_given(tmp_path):
    """A group is compared as text (as an id is: 7 and "7" are one id): a file converted from CSV mixes them."""
    from eval.meta.meta_eval import group_key

    assert group_key(1, "a") == group_key("1", "b") and group_key(0, "a") == ("group", "0")
    assert group_key(None, "a") == group_key("", "a") == ("item", "a")
    rows = [{"evidence": "The cat sat on the mat.", "text": t, "label": lab, "group": [1, "1", 2, "2", 3][k % 5]}
            for k, (t, lab) in enumerate([("The cat sat.", 1), ("A dog sat.", 0)] * 5)]
    report = run_meta_eval("jsonl", _write(tmp_path, "g.jsonl", rows), MetaEvalOptions(judges=["lexical"],
                                                                                       n_resamples=50))
    assert report["results"][0]["n_groups"] == 3
    assert [r["group"] for r in report["scores"]][:5] == [1, "1", 2, "2", 3]


def test_the_json_decode_message_says_at_once(tmp_path):
    errors: list[InputError] = []
    path = tmp_path / "d.jsonl"
    path.write_text('{"evidence": "e", "text": "t", "label": 0}\n{"evidence": "e", "text": "unterminated')  # cut off
    load_records("jsonl", path, errors)
    assert str(errors[0]).endswith("d.jsonl:2: malformed JSON: Unterminated string starting at column 27")
    from corpora.jsonl import json_object_problem

    (tmp_path / "c.json").write_text('{"a": "b')
    assert json_object_problem(tmp_path / "c.json")[1] == ("malformed JSON at line 1: Unterminated string starting "
                                                            "at column 7")
