"""The run summary (eval/summary.py): the long results table, means with bootstrap CIs over measured values only,
unmeasured counts with their reasons, and the unmeasured share over the results that apply."""
from corpora.records import Judgement, MetricResult
from eval.summary import results_frame, summarize


def J(sid: str, *results: MetricResult) -> Judgement:
    return Judgement(sample_id=sid, results=list(results))


JUDGEMENTS = [
    J("a", MetricResult.ok("groundedness", "lexical", 1.0), MetricResult.ok("recall@5", "labels", 1.0)),
    J("b", MetricResult.ok("groundedness", "lexical", 0.5), MetricResult.not_applicable("recall@5", "labels", "n/a")),
    J("c", MetricResult.unmeasured("groundedness", "lexical", "judge failed: boom"),
      MetricResult.unmeasured("recall@5", "labels", "no contexts in the input record")),
    J("d", MetricResult.unmeasured("groundedness", "lexical", "judge failed: boom")),
]


def test_results_frame_is_one_row_per_sample_metric_and_judge():
    df = results_frame(JUDGEMENTS)
    assert list(df.columns) == ["sample_id", "metric", "judge", "value", "status", "reason", "seconds"]
    assert len(df) == 7 and df["value"].isna().sum() == 4


def test_summary_means_ci_and_unmeasured_reasons():
    s = summarize(JUDGEMENTS, n_resamples=200)
    g = next(m for m in s["metrics"] if m["metric"] == "groundedness")
    assert g["n"] == 2 and g["mean"] == 0.75 and g["ci_low"] <= 0.75 <= g["ci_high"]
    assert g["n_unmeasured"] == 2 and g["unmeasured_reasons"] == {"judge failed: boom": 2}
    r = next(m for m in s["metrics"] if m["metric"] == "recall@5")
    assert (r["n"], r["n_unmeasured"], r["n_not_applicable"]) == (1, 1, 1)
    assert s["n_samples"] == 4 and s["unmeasured_share"] == 3 / 6  # not-applicable results are left out


def test_nothing_measured_has_no_mean_and_no_ci():
    s = summarize([JUDGEMENTS[3]])
    assert s["metrics"][0]["mean"] is None and s["metrics"][0]["ci_low"] is None and s["unmeasured_share"] == 1.0
    assert summarize([])["unmeasured_share"] is None


def test_the_summary_and_the_eval_table_say_which_metric_is_lower_is_better():
    from ragdoctor.cmd_eval import render_eval_summary

    s = summarize([J("a", MetricResult.ok("noise_sensitivity", "lexical", 0.2),
                     MetricResult.ok("groundedness", "lexical", 0.9))], n_resamples=50)
    direction = {m["metric"]: m["higher_is_better"] for m in s["metrics"]}
    assert direction == {"noise_sensitivity": False, "groundedness": True}
    table = render_eval_summary(s)
    assert "noise_sensitivity (lower is better)" in table and "groundedness (lower" not in table
