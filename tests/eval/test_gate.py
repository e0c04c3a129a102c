"""The CI gate (eval/gate.py): checks against thresholds, thresholds from pyproject, the CLI's exit codes and JUnit."""

import errno
import math
import os
from pathlib import Path

import pytest

from corpora.errors import InputError, UsageError
from eval.adapters import load_traces
from eval.gate import (
    Check,
    GateConfig,
    check,
    check_metric_name,
    given_minimums,
    load_gate_config,
    parse_threshold,
    unit_threshold,
    write_junit,
)
from eval.judging import evaluate
from ragdoctor.cli import main
from tests.eval.test_judging import JUDGES, METRICS, rows, write_jsonl


def _summary(mean, n=10, unmeasured=0.0):
    return {"metrics": [{"metric": "groundedness", "judge": "nli", "n": n, "mean": mean, "ci_low": mean - 0.1,
                         "ci_high": mean + 0.1}], "unmeasured_share": unmeasured}


def test_gate_logic():
    cfg = GateConfig({"groundedness": 0.8}, max_unmeasured=0.05)
    assert all(c.passed for c in check(_summary(0.85), cfg))
    failed = [c for c in check(_summary(0.7), cfg) if not c.passed]
    assert len(failed) == 1 and "FAIL by 0.100" in failed[0].message and "95% CI 0.600-0.800" in failed[0].message
    assert not all(c.passed for c in check(_summary(0.85), GateConfig({"groundedness": 0.8}, use_ci_lower=True)))
    assert not all(c.passed for c in check(_summary(0.9, unmeasured=0.2), cfg))
    nothing = check({"metrics": [{"metric": "groundedness", "judge": "nli", "n": 0, "mean": None}],
                     "unmeasured_share": 1.0}, GateConfig(max_unmeasured=1.0))
    assert not all(c.passed for c in nothing)  # a run with no measured values never passes
    unmeasured_only = {"metrics": [*_summary(0.9)["metrics"], {"metric": "context_precision", "judge": "nli", "n": 0,
                                                               "mean": None, "ci_low": None, "ci_high": None}],
                       "unmeasured_share": 0.5}
    (_, failed) = check(unmeasured_only, GateConfig({"groundedness": 0.5, "context_precision": 0.5}))
    assert not failed.passed and "no measured values for this metric" in failed.message  # evaluated, none measured


def test_a_threshold_on_what_the_run_never_evaluated_is_a_usage_error_not_a_failed_verdict():
    """A metric (or metric:judge) with no row at all in the summary is a configuration mistake (wrong --judges or
    --metrics in CI): a UsageError naming what the run did evaluate, never a FAIL that reads as a regression."""
    with pytest.raises(UsageError, match=r"threshold 'context_precision': the run did not evaluate context_precision "
                                         r"\(it evaluated groundedness \(nli\)\)"):
        check(_summary(0.9), GateConfig({"context_precision": 0.5}))
    with pytest.raises(UsageError, match=r"'groundedness:lexical': the run did not evaluate groundedness with the "
                                         r"lexical judge"):
        check(_summary(0.9), GateConfig({"groundedness:lexical": 0.5}))


def test_an_empty_judge_after_the_colon_is_an_error_never_a_second_threshold(tmp_path):
    """'groundedness:' (an unset ``metric:$JUDGE``) is refused: it was a second, distinct threshold beside
    'groundedness', so a metric named twice went unnoticed."""
    for name in ("groundedness:", "groundedness: "):
        with pytest.raises(UsageError, match="names no judge after ':'"):
            check_metric_name(name, "--min")
    with pytest.raises(UsageError, match=r"--min: 'groundedness:' names no judge"):
        parse_threshold("groundedness:=0.9")
    p = tmp_path / "pyproject.toml"
    p.write_text('[tool.ragdoctor.gate]\nmin = { groundedness = 0.5, "groundedness:" = 0.9 }\n')
    with pytest.raises(UsageError, match=r"min: 'groundedness:' names no judge after ':'"):
        load_gate_config(p)
    with pytest.raises(UsageError, match="names no judge"):
        given_minimums({"groundedness": 0.5, "groundedness:": 0.9}, "thresholds")


def test_a_negative_zero_threshold_is_zero():
    name, value = parse_threshold("groundedness=-0")
    assert (name, value) == ("groundedness", 0.0) and math.copysign(1, value) == 1
    assert math.copysign(1, unit_threshold(-0.0, "max_unmeasured")) == 1
    (c,) = check(_summary(0.9), GateConfig(max_unmeasured=-0.0))
    assert "needs <= 0.000" in c.message and "-0" not in c.message
    (c,) = check(_summary(0.9), GateConfig({"groundedness": -0.0}))
    assert "needs >= 0.000" in c.message and "-0" not in c.message


def test_a_share_the_summary_does_not_give_is_never_invented():
    """Every result not applicable: the summary's unmeasured share is null. The run still fails (nothing measured),
    but the share check reports no value, never 1.000, and every check carries an estimate for JUnit."""
    summary = {"metrics": [{"metric": "context_recall", "judge": "lexical", "n": 0, "mean": None}],
               "unmeasured_share": None}
    checks = check(summary, GateConfig(max_unmeasured=0.05))
    share = next(c for c in checks if c.name == "unmeasured share")
    assert share.observed is None and "1.000" not in share.message and "not applicable" in share.message
    assert not all(c.passed for c in checks) and all(c.estimate for c in checks)


def test_a_bare_metric_is_read_from_the_most_trusted_judge_whatever_the_listing_order():
    row = lambda judge, mean, n=10: {"metric": "groundedness", "judge": judge, "n": n, "mean": mean,  # noqa: E731
                                     "ci_low": mean, "ci_high": mean}
    cfg = GateConfig({"groundedness": 0.8})
    for order in ([row("lexical", 0.5), row("nli", 0.9)], [row("nli", 0.9), row("lexical", 0.5)]):
        (c,) = check({"metrics": order, "unmeasured_share": 0.0}, cfg)
        assert c.passed and "(judge nli, n=10)" in c.message, c.message
    unmeasured_nli = [row("nli", 0.0, n=0), row("lexical", 0.5)]  # the most trusted that measured anything
    (c,) = check({"metrics": unmeasured_nli, "unmeasured_share": 0.5}, cfg)
    assert not c.passed and "(judge lexical, n=10)" in c.message
    (c,) = check({"metrics": [row("mine", 0.9), row("lexical", 0.5)], "unmeasured_share": 0.0}, cfg)
    assert "(judge lexical, n=10)" in c.message  # a judge the project does not rank comes after the ranked ones


def test_gate_config_from_pyproject(tmp_path):
    p = tmp_path / "pyproject.toml"
    p.write_text('[tool.ragdoctor.gate]\nmin = { groundedness = 0.8, "answer_relevance:embedding" = 0.5 }\nmax_unmeasured = 0.05\n')
    cfg = load_gate_config(p)
    assert cfg.minimums == {"groundedness": 0.8, "answer_relevance:embedding": 0.5} and cfg.max_unmeasured == 0.05
    p.write_text('[tool.ragdoctor.gate]\nminimum = 1\n')
    with pytest.raises(Exception, match="unknown key"):
        load_gate_config(p)


def test_gate_cli_exit_codes_and_junit(tmp_path, capsys):
    samples, _ = load_traces(write_jsonl(tmp_path / "in.jsonl", rows()))
    evaluate(samples, metrics=METRICS, judges=JUDGES(), run=tmp_path / "run", progress=False)
    run = str(tmp_path / "run")
    assert main(["gate", run, "--min", "groundedness=0.5", "--pyproject", os.devnull]) == 0
    assert main(["gate", run, "--min", "groundedness=0.99", "--pyproject", os.devnull]) == 1
    out = capsys.readouterr().out
    assert "FAIL  groundedness" in out and "FAIL by" in out
    xml = (tmp_path / "run" / "gate.xml").read_text()
    assert 'failures="1"' in xml and "<failure" in xml
    assert main(["gate", run, "--min", "groundedness=abc", "--pyproject", os.devnull]) == 2
    assert main(["gate", str(tmp_path / "missing"), "--min", "groundedness=0.5"]) == 2
    err = capsys.readouterr().err
    assert "no summary.json" in err and err.count("\n") == 2


def test_write_junit_escapes(tmp_path):
    write_junit([Check('a<b "c"', False, 0.1, 0.5, "min")], tmp_path / "j.xml")
    assert "&lt;" in (tmp_path / "j.xml").read_text()


def test_a_report_write_that_fails_is_an_input_error_naming_the_file(tmp_path, monkeypatch):
    """A full disk: one line naming the report, not a bare "No space left on device"."""
    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(InputError, match=r"j\.xml: cannot write the JUnit report \(No space left on device\)"):
        write_junit([Check("a", True, 0.9, 0.5, "min")], tmp_path / "j.xml")


def test_ci_lower_bound_of_one_sample_is_no_certainty(tmp_path, capsys):
    """One measured sample of 1.0 once had the CI [1.0, 1.0], so --ci-lower passed on n=1."""
    import json

    ctx = [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values for every token."}]
    rows_file = tmp_path / "one.jsonl"
    rows_file.write_text(json.dumps({"id": "a", "question": "What does the KV cache store?", "contexts": ctx,
                                     "answer": "The KV cache stores keys and values for every token."}) + "\n")
    run = tmp_path / "run"
    assert main(["eval", str(rows_file), "--judges", "lexical", "--metrics", "groundedness", "--out", str(run)]) == 0
    summary = json.loads((run / "summary.json").read_text())
    g = next(m for m in summary["metrics"] if m["metric"] == "groundedness")
    assert g["n"] == 1 and g["mean"] == 1.0 and g["ci_low"] < 0.25 and g["ci_high"] == 1.0
    capsys.readouterr()
    assert main(["gate", str(run), "--pyproject", os.devnull, "--min", "groundedness=0.95", "--ci-lower"]) == 1
    assert main(["gate", str(run), "--pyproject", os.devnull, "--min", "groundedness=0.95"]) == 0


def test_a_torn_summary_says_where_in_one_line(tmp_path):
    from corpora.errors import InputError
    from eval.gate import load_summary

    (tmp_path / "summary.json").write_text('{"a": "unterminated')
    with pytest.raises(InputError) as err:
        load_summary(tmp_path)
    assert str(err.value).endswith("summary.json:1: malformed JSON: Unterminated string starting at column 7")
