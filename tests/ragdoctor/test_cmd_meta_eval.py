"""ragdoctor/cmd_meta_eval.py: every '-' or '?' in the printed table has its reason under the table."""
from eval.meta.datasets import LabelledItem, Task
from eval.meta.meta_eval import MetaEvalOptions, _report, flag_results
from eval.meta.scoring import TaskScores
from ragdoctor.cmd_meta_eval import footnotes, render_report


def _report_of(scores_by_judge: dict[str, list[float]], labels: list[float]) -> dict:
    """A meta-eval report of these judges' scores on one binary task, flagged as run_tasks flags it (no model)."""
    opts = MetaEvalOptions(n_resamples=100)
    task = Task("jsonl", "groundedness", "label", "support", "binary",
                [LabelledItem(f"r{i}", "e", "t", y) for i, y in enumerate(labels)])
    results, rows = [], []
    for judge, scores in scores_by_judge.items():
        r, rs = _report(task, TaskScores(scores=scores), opts)
        results.append({"dataset": "jsonl", "metric": "groundedness", "kind": "binary", "judge": judge, "flags": [],
                        **r})
        rows += [{"metric": "groundedness", "judge": judge, **row} for row in rs]
    flag_results(results, rows, opts)
    return {"dataset": "jsonl", "path": "d.jsonl", "reduce": "min", "results": results, "judges": [],
            "unavailable": []}


def test_one_record_per_class_says_why_threshold_and_balanced_accuracy_are_missing():
    """n=2: the dev split is empty, so no threshold and no bal.acc; the table used to show '-' with no word."""
    out = render_report(_report_of({"lexical": [0.9, 0.1], "embedding": [0.8, 0.3]}, [1.0, 0.0]))
    assert ("groundedness lexical: thr, bal.acc; groundedness embedding: thr, bal.acc: the dev split (0 records) "
            "lacks a label class: no threshold chosen") in out
    assert "groundedness lexical: AUROC CI; groundedness embedding: AUROC CI: 2 records to resample, fewer than 5" in out
    assert "groundedness embedding: vs lexical: 2 items to resample, fewer than 5" in out


def test_a_verdict_without_a_ci_says_why_in_the_table():
    """n=4: the vs-lexical cell reads '? +0.000'; its reason used to be only in results.json."""
    report = _report_of({"lexical": [0.9, 0.1, 0.8, 0.2], "embedding": [0.7, 0.3, 0.6, 0.4]}, [1.0, 0.0, 1.0, 0.0])
    out = render_report(report)
    assert "? +0.000" in out
    assert "vs lexical: 4 items to resample, fewer than 5" in out
    assert report["results"][1]["vs_lexical"]["reason"] == "4 items to resample, fewer than 5"


def test_a_zero_width_ci_and_an_uncounted_cut_are_explained():
    results = [{"metric": "context_relevance", "judge": "nli", "auroc": 1.0, "auroc_ci": (None, None),
                "why_none": {"auroc_ci": "every resample gives 1.000: a zero-width CI would read as certainty"},
                "truncated_share": None, "truncated_reason": "not counted: 5 scored pairs reach a model whose inputs "
                                                             "this scorer does not expose", "flags": []}]
    notes = footnotes(results)
    assert notes[0].startswith("not measured")
    assert ("  context_relevance nli: AUROC CI: every resample gives 1.000: a zero-width CI would read as certainty"
            in notes)
    assert any(n.startswith("  context_relevance nli: cut: not counted") for n in notes)
    assert footnotes([{"metric": "g", "judge": "x", "why_none": {}, "flags": []}]) == []


def test_a_wilson_ci_in_place_of_a_zero_width_one_is_said_under_the_table():
    results = [{"metric": "groundedness", "judge": "nli", "pairwise_accuracy": 0.0, "pairwise_accuracy_ci": (0, 0.11),
                "why_none": {}, "ci_notes": {"pairwise_accuracy_ci": "Wilson interval over 30 pairs (every resample "
                                                                     "gives 0.000)"}, "flags": []}]
    assert footnotes(results) == ["CIs that are no bootstrap's (every resample gave one value):",
                                  "  groundedness nli: pairwise CI: Wilson interval over 30 pairs (every resample "
                                  "gives 0.000)"]


def test_the_wilson_note_on_the_vs_lexical_difference_is_said_under_the_table():
    """results.json's vs_lexical.note (a Wilson interval in place of the difference's zero-width CI) was never
    printed: the footnotes read only ci_notes."""
    report = _report_of({"lexical": [0.9, 0.8, 0.7, 0.6, 0.1, 0.2, 0.3, 0.4],
                         "embedding": [0.1, 0.2, 0.3, 0.4, 0.9, 0.8, 0.7, 0.6]}, [1.0] * 4 + [0.0] * 4)
    cmp = report["results"][1]["vs_lexical"]
    assert cmp["verdict"] == "loses" and cmp["note"].startswith("Wilson interval over 4 records of the smaller class")
    out = render_report(report)
    assert f"  groundedness embedding: vs lexical: {cmp['note']}" in out.splitlines()


def test_a_ci_with_a_negative_end_reads_unambiguously():
    from ragdoctor.table import ci_text

    assert ci_text(-1.0, -1.0) == "-1.000..-1.000" and ci_text(-0.88, 0.091) == "-0.880..0.091"
    assert ci_text(0.1, 0.5) == "0.100-0.500" and ci_text(None, 0.5) == "-"  # positive CIs as before
