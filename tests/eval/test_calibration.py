"""Judge scores calibrated by human labels (eval/calibration.py), the labelling queue (eval/labelling.py), and the
summary with labels (eval/summary.py): the PPI estimate equals eval.ppi's on the same numbers, too few labels are
``unmeasured`` with the reason, only labels of the run's samples count, and labels picked in the queue's stratified
order keep the 95% interval's coverage (a simulation with a known truth)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from corpora.labels import add_labels, read_labels
from corpora.records import Judgement, Label, MetricResult
from eval import labelling, ppi
from eval.calibration import calibrate, for_run
from eval.mathx import wilson_interval
from eval.summary import summarize


def frame(values: dict[str, float | None], metric: str = "groundedness", judge: str = "lexical") -> pd.DataFrame:
    return pd.DataFrame([{"sample_id": s, "metric": metric, "judge": judge, "value": v,
                          "status": "ok" if v is not None else "unmeasured"} for s, v in values.items()])


def labels_for(values: dict[str, float], metric: str = "groundedness", who: str = "ann") -> list[Label]:
    return [Label(sample_id=s, metric=metric, value=v, who=who) for s, v in values.items()]


def population(seed: int, n: int = 300):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.7).astype(float)
    f = np.clip(0.6 * y + 0.35 + rng.normal(0, 0.2, n), 0, 1).round(2)  # biased upwards, ties
    ids = [f"s{i:04d}" for i in range(n)]
    return ids, y, f


def test_ppi_row_equals_the_estimator_and_agreement_is_reported():
    ids, y, f = population(0)
    lab = dict(zip(ids[:60], y[:60]))
    rows = calibrate(frame(dict(zip(ids, f))), labels_for(lab), n_resamples=200)
    assert len(rows) == 1
    r = rows[0]
    est = ppi.ppi_mean(y[:60], f[:60], f[60:])
    assert r["status"] == "ok" and r["method"] == "ppi++" and r["n_labels"] == 60 and r["n_judged"] == len(ids)
    assert r["mean"] == pytest.approx(est.mean, abs=1e-6) and r["ci_low"] == pytest.approx(est.ci_low, abs=1e-6)
    assert r["judge_mean"] == pytest.approx(f.mean(), abs=1e-6) and r["judge_mean"] > r["mean"]  # the judge's bias
    a = r["agreement"]
    assert a["auroc"] > 0.9 and a["auroc_ci"][0] <= a["auroc"] <= a["auroc_ci"][1]
    assert a["accuracy"] == pytest.approx(((f[:60] >= 0.75) == (y[:60] >= 0.5)).mean(), abs=1e-6)
    assert a["n_positive"] + a["n_negative"] == 60


def test_too_few_labels_is_unmeasured_with_the_reason_and_foreign_samples_do_not_count():
    ids, y, f = population(1, 100)
    lab = {**dict(zip(ids[:12], y[:12])), **{f"other{i}": 1.0 for i in range(40)}}  # 40 labels of another run
    lab[ids[12]] = 1.0
    values = dict(zip(ids, f))
    values[ids[12]] = None  # labelled, but the judge did not measure it
    r = calibrate(frame(values), labels_for(lab))[0]
    assert r["status"] == "unmeasured" and r["mean"] is None and r["ci_low"] is None
    assert r["reason"] == ("12 labels, need 30 (1 more on samples this judge did not measure; 40 more on samples not "
                           "in this run)")
    assert r["n_labels"] == 12 and r["n_labels_unjudged"] == 1


def test_graded_and_one_class_labels_say_why_there_is_no_auroc():
    ids, _, f = population(2, 80)
    r = calibrate(frame(dict(zip(ids, f))), labels_for(dict.fromkeys(ids[:40], 1.0)), n_resamples=100)[0]
    assert r["agreement"]["auroc"] is None and "both classes" in r["agreement"]["reason"]
    assert r["status"] == "ok"  # PPI itself does not need both classes
    graded = calibrate(frame(dict(zip(ids, f))), labels_for(dict.fromkeys(ids[:40], 0.5)), n_resamples=100)[0]
    assert "graded" in graded["agreement"]["reason"]


def test_every_sample_labelled_falls_back_to_the_labels_alone():
    ids, y, f = population(3, 40)
    r = calibrate(frame(dict(zip(ids, f))), labels_for(dict(zip(ids, y))), n_resamples=100)[0]
    assert r["method"] == "labels only" and r["mean"] == pytest.approx(y.mean())


def test_summary_carries_the_calibrated_rows_and_for_run_reads_labels_added_later(tmp_path):
    from corpora.run_folder import RunFolder
    from eval.judging import write_outputs

    ids, y, f = population(4, 90)
    judgements = [Judgement(sample_id=s, results=[MetricResult.ok("groundedness", "lexical", float(v)),
                                                  MetricResult.ok("answer_correctness", "lexical", float(v))])
                  for s, v in zip(ids, f)]
    assert "calibrated" not in summarize(judgements)
    # written before the evaluation, straight into labels.jsonl (add_label refuses a folder that is no run yet)
    add_labels(tmp_path, [Label(sample_id=s, metric="groundedness", value=v, who="ann") for s, v in zip(ids[:35], y[:35])])
    summary = write_outputs(RunFolder(tmp_path), judgements, [])
    rows = {r["metric"]: r for r in summary["calibrated"]}
    assert set(rows) == {"groundedness"} and rows["groundedness"]["status"] == "ok"
    add_labels(tmp_path, [Label(sample_id=s, metric="answer_correctness", value=1, who="bob")
                          for s in ids[:5]])  # after the evaluation
    now = {r["metric"]: r for r in for_run(tmp_path)}
    assert now["answer_correctness"]["reason"] == "5 labels, need 30"
    assert now["groundedness"]["mean"] == rows["groundedness"]["mean"]
    assert len(read_labels(tmp_path)) == 40


def test_queue_is_stratified_deterministic_and_skips_labelled_samples():
    scores = {f"s{i:03d}": i / 99 for i in range(100)} | {"u1": None, "u2": None}
    order = labelling.queue(scores, bins=5, seed=3)
    assert order == labelling.queue(scores, bins=5, seed=3) and order != labelling.queue(scores, bins=5, seed=4)
    assert sorted(order) == sorted(scores)
    strata = labelling.strata(scores, bins=5, seed=3)
    assert [len(s) for s in strata] == [20, 20, 20, 20, 20, 2]
    where = {s: b for b, members in enumerate(strata) for s in members}
    first = [where[s] for s in order[:5]]
    assert sorted(first) == [0, 1, 2, 3, 4]  # one from each score bin before any second one
    done = set(order[:7])
    rest = labelling.queue(scores, done, bins=5, seed=3)
    assert not done & set(rest) and len(rest) == len(scores) - 7
    for n in (10, 25, 51):  # proportional at every point: each bin's share of the labels follows its share of samples
        counts = np.bincount([where[s] for s in order[:n]], minlength=6)
        assert np.all(np.abs(counts[:5] - n * 20 / 102) <= 1)


def test_ties_spread_evenly_over_the_bins():
    scores = {f"s{i}": float(i % 2) for i in range(60)}  # only 0 and 1
    assert [len(s) for s in labelling.strata(scores, bins=4)] == [15, 15, 15, 15]


def test_labels_picked_in_queue_order_keep_the_coverage():
    """A known truth, a biased judge, labels for the first 60 samples of the stratified queue: the PPI interval
    holds the truth in about 95% of 1000 seeded populations (as it must for a proportional stratified draw)."""
    hits, draws = 0, 1000
    for seed in range(draws):
        ids, y, f = population(seed, 300)
        scores = dict(zip(ids, f))
        order = labelling.queue(scores, bins=5, seed=seed)[:60]
        pick = np.array([int(s[1:]) for s in order])
        rest = np.setdiff1d(np.arange(len(ids)), pick)
        est = ppi.ppi_mean(y[pick], f[pick], f[rest])
        hits += est.ci_low <= 0.7 <= est.ci_high
    assert 0.93 <= hits / draws <= 0.97, hits / draws


def _label(sample_id: str, value: float) -> Label:
    return Label(sample_id=sample_id, metric="groundedness", value=value, who="ann")


def _one_metric(values, status="ok"):
    ids = [f"s{i}" for i in range(len(values))]
    return pd.DataFrame({"sample_id": ids, "metric": "groundedness", "judge": "lexical", "value": values,
                         "status": status}), ids


def test_identical_labels_give_an_honest_interval_and_too_few_labels_never_raise():
    results, ids = _one_metric([1.0] * 100)
    (row,) = calibrate(results, [_label(s, 1.0) for s in ids[:40]], n_resamples=50)
    assert row["status"] == "ok" and row["mean"] == 1.0 and 0.85 < row["ci_low"] < 0.97 and row["ci_high"] == 1.0
    (row,) = calibrate(results, [_label(ids[0], 1.0)], min_labels=1, n_resamples=50)  # one label: no interval
    assert row["status"] == "unmeasured" and row["reason"] == "1 label, need 2"


def test_labels_only_on_unmeasured_rows_say_so():
    results, ids = _one_metric([None] * 50, status="unmeasured")
    (row,) = calibrate(results, [_label(s, 1.0) for s in ids[:40]], n_resamples=50)
    assert row["status"] == "unmeasured" and row["n_labels"] == 0 and row["judge_mean"] is None
    assert row["reason"] == "0 labels, need 30 (40 more on samples this judge did not measure)"


def test_the_corrected_mean_stays_within_the_metric_range():
    """PPI's rectified mean (and both ends of its interval) can leave [0, 1]: a [0, 1] metric's never do."""
    results, ids = _one_metric([0.0, 0.0] + [0.5] * 38 + [0.95] * 200)
    y = np.array([0.0, 0.0] + [1.0] * 38)
    est = ppi.ppi_mean(y, results["value"][:40], results["value"][40:])
    assert est.mean > 1.0 and est.ci_low > 1.0  # the case under test
    (row,) = calibrate(results, [_label(s, v) for s, v in zip(ids, y)], n_resamples=50)
    assert row["status"] == "ok" and 0.0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 1.0


def test_agreement_intervals_do_not_claim_certainty_from_a_few_labels():
    """Every label agreeing is not certainty: accuracy gets the Wilson interval (a bootstrap of 30 hits is [1, 1]),
    and the AUROC a bootstrap CI only with 5 labels of each class."""
    from eval.calibration import agreement

    y = np.array([1.0] * 15 + [0.0] * 15)
    f = np.where(y == 1, 0.9, 0.1)
    out = agreement(y, f, 0.5)
    assert out["accuracy"] == 1.0 and 0.85 < out["accuracy_ci"][0] < 0.9 and out["accuracy_ci"][1] == 1.0
    one = agreement(np.array([1.0]), np.array([0.9]), 0.5)
    assert one["accuracy_ci"][0] < 0.25 and one["accuracy_ci"][1] == 1.0
    few = agreement(np.array([1.0, 1.0, 0.0]), np.array([0.9, 0.8, 0.1]), 0.5)
    assert few["auroc"] == 1.0 and few["auroc_ci"] == [None, None] and "5 labels of each class" in few["reason"]
    assert out["auroc"] == 1.0 and out["auroc_ci"] == [round(wilson_interval(15, 15)[0], 6), 1.0]  # Wilson over 15, not [1, 1]
    assert out["reason"] == ("AUROC CI: Wilson interval over 15 records of the smaller class (every resample gives "
                             "1.000)")


def test_a_label_whose_judgement_cannot_be_read_is_not_said_to_be_of_another_run():
    from eval.calibration import uncounted_labels

    results = frame({"a": 1.0, "c": 0.0})  # b's judgement line was damaged after the evaluation
    labels = labels_for({"b": 0.0, "z": 1.0}) + labels_for({"a": 1.0}, metric="answer_correctness")
    assert uncounted_labels(results, labels, run_samples=["a", "b", "c"]) == {
        "judgement unreadable or missing (rerun `ragdoctor eval`)": 1, "sample not in this run": 1,
        "answer_correctness not measured by this run": 1}


def test_one_second_labeller_disagreeing_leaves_that_sample_out_of_the_agreement_not_the_auroc():
    """ann labels 40 samples yes/no; bob labels one of them the other way: the mean of the two (0.5) still counts for
    the PPI mean, but the AUROC and accuracy are read on the 39 samples whose labellers agree, and say one was left
    out (a 0.5 is neither a yes nor a graded label)."""
    ids, y, f = population(5, 100)
    ann = labels_for(dict(zip(ids[:40], y[:40])))
    bob = labels_for({ids[0]: 1.0 - y[0]}, who="bob")
    (row,) = calibrate(frame(dict(zip(ids, f))), ann + bob, n_resamples=100)
    a = row["agreement"]
    assert row["n_labels"] == 40 and row["labels_mean"] == pytest.approx((y[1:40].sum() + 0.5) / 40)
    assert a["auroc"] is not None and a["n"] == 39 and a["n_disputed"] == 1
    assert a["reason"].startswith("1 sample(s) left out: their labellers disagree")
    assert a["accuracy"] == pytest.approx(((f[1:40] >= 0.75) == (y[1:40] == 1)).mean(), abs=1e-6)
    assert a["n_positive"] + a["n_negative"] == 39


def test_a_graded_label_of_one_half_is_no_yes_for_the_accuracy():
    from eval.calibration import agreement

    out = agreement(np.array([0.5, 1.0, 0.0, 0.8]), np.array([0.9, 0.9, 0.1, 0.2]), 0.5)
    assert out["accuracy"] == pytest.approx(2 / 3, abs=1e-6) and out["n_positive"] == 2 and out["n_negative"] == 1


def test_stale_labels_are_counted_among_the_labels_not_counted():
    from eval.calibration import STALE, uncounted_labels

    results = frame({"a": 1.0, "b": 0.0})
    stale = labels_for({"a": 1.0}, who="bob")
    assert uncounted_labels(results, labels_for({"a": 1.0}), ["a", "b"], stale) == {STALE: 1}
    assert "labelled an earlier answer of their sample" in STALE


def test_labels_on_samples_the_judge_did_not_measure_are_said_whatever_the_status():
    """30 or more labels counted: the 6 on samples the judge did not measure used to go without a word (the note
    said them only below 30), and the 'not counted' line had no reason for them."""
    from eval.calibration import calibration_note, uncounted_labels

    ids, y, f = population(6, 100)
    values: dict[str, float | None] = dict(zip(ids, f))
    for s in ids[:6]:
        values[s] = None  # labelled, not measured (no claims to check)
    labels = labels_for(dict(zip(ids[:40], y[:40])))
    (row,) = calibrate(frame(values), labels, n_resamples=50)
    assert row["status"] == "ok" and row["n_labels"] == 34 and row["n_labels_unjudged"] == 6
    assert "6 more labels on samples this judge did not measure (not counted)" in calibration_note(row)
    assert uncounted_labels(frame(values), labels) == {"groundedness on samples no judge measured": 6}
    two = pd.concat([frame(values), frame(dict(zip(ids, f)), judge="nli")])  # nli measured them all
    assert uncounted_labels(two, labels) == {
        "groundedness on samples judge lexical did not measure (counted for nli only)": 6}


def test_every_labelled_sample_disputed_says_so():
    """Two annotators disagreeing on every sample: no AUROC or accuracy, and the reason used to be missing from the
    note (n == 0) or say 'no labelled sample the judge measured', which is not why."""
    from eval.calibration import calibration_note

    ids, _, f = population(7, 60)
    ann = labels_for(dict.fromkeys(ids[:40], 1.0))
    bob = labels_for(dict.fromkeys(ids[:40], 0.0), who="bob")
    (row,) = calibrate(frame(dict(zip(ids, f))), ann + bob, n_resamples=50)
    a = row["agreement"]
    assert a["n"] == 0 and a["n_disputed"] == 40 and a["auroc"] is None and a["accuracy"] is None
    assert a["reason"].startswith("all 40 labelled sample(s) the judge measured are disputed")
    assert a["reason"] in calibration_note(row)


def test_one_graded_label_among_yes_no_ones_leaves_only_itself_out_of_the_auroc():
    """39 yes/no labels and one of 0.8: the whole metric lost its AUROC ("these are graded", which 39 of them are
    not). The AUROC is read on the yes/no labels and the note says how many graded ones it left out; the accuracy
    still reads the graded one as the yes it is (> 0.5)."""
    from eval.calibration import calibration_note

    ids, y, f = population(8, 100)
    lab = dict(zip(ids[:40], y[:40]))
    lab[ids[0]] = 0.8
    (row,) = calibrate(frame(dict(zip(ids, f))), labels_for(lab), n_resamples=50)
    a = row["agreement"]
    binary = np.array([lab[s] in (0.0, 1.0) for s in ids[:40]])
    assert a["auroc"] == pytest.approx(round(float(__import__("eval.meta.stats", fromlist=["auroc"]).auroc(
        f[:40][binary], y[:40][binary])), 6))
    assert a["auroc_ci"][0] is not None and a["n"] == 40
    assert "1 graded label(s) left out of the AUROC" in a["reason"] and a["reason"] in calibration_note(row)
    graded = calibrate(frame(dict(zip(ids, f))), labels_for(dict.fromkeys(ids[:40], 0.5)), n_resamples=50)[0]
    assert graded["agreement"]["reason"].startswith("AUROC needs yes/no labels (these are graded)")


@pytest.mark.parametrize("where", ["another run", "stale"])
def test_labels_that_count_for_nothing_are_said_in_the_unmeasured_reason(tmp_path, where):
    """A labels file from another run (its sample ids not in this one, or the same ids with other answers: stale):
    no row said so, and `gate --ppi` read '0 labels, need 30' beside 40 labels. The row is there, unmeasured, and
    its reason counts them."""
    from corpora.run_folder import RunFolder
    from eval.judging import write_outputs

    ids, y, f = population(9, 60)
    judgements = [Judgement(sample_id=s, results=[MetricResult.ok("groundedness", "lexical", float(v))])
                  for s, v in zip(ids, f)]
    RunFolder(tmp_path).write_config({"eval_hash": "e1"}, {s: f"h-{s}" for s in ids})
    write_outputs(RunFolder(tmp_path), judgements, [])
    other = [f"x{s}" for s in ids[:40]] if where == "another run" else ids[:40]
    add_labels(tmp_path, [Label(sample_id=s, metric="groundedness", value=v, who="ann", sample_hash="other-run")
                          for s, v in zip(other, y[:40])])
    (row,) = for_run(tmp_path, n_resamples=50)
    assert row["status"] == "unmeasured" and row["n_labels"] == 0
    why = "on samples not in this run" if where == "another run" else "labelled an earlier answer of their sample"
    assert row["reason"] == f"0 labels, need 30 (40 more {why})"
