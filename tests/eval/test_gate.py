"""The CI gate (eval/gate.py): checks against thresholds, thresholds from pyproject, the CLI's exit codes and JUnit."""

import os

import pytest

from eval.adapters import load_traces
from eval.gate import GateConfig, check, load_gate_config, write_junit
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
    assert not all(c.passed for c in check(_summary(0.9), GateConfig({"context_precision": 0.5})))


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
    from eval.gate import Check

    write_junit([Check('a<b "c"', False, 0.1, 0.5, "min")], tmp_path / "j.xml")
    assert "&lt;" in (tmp_path / "j.xml").read_text()


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
