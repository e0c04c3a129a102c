"""`ragdoctor gate` (ragdoctor/cmd_eval.py cmd_gate, flow.gate_run): the verdict is printed before any report is
written and is never lost to a report that cannot be written; a threshold or flag that could check nothing is a usage
error (exit 2), never a quality failure (exit 1) nor a silent no-op."""
import errno
import json
import os
import shutil
from pathlib import Path

import pytest

from ragdoctor import flow
from ragdoctor.cli import main

ROWS = [{"id": f"s{i}", "question": "What does the KV cache store?",
         "contexts": [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values for every token."}],
         "answer": "The KV cache stores keys and values for every token." if i else "It stores optimizer momentum.",
         "reference": "It stores the keys and values of every token.", "relevant_ids": ["kv"]} for i in range(3)]
NO_FILE = ["--pyproject", os.devnull]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    src = root / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    flow.evaluate_file(src, root / "run", flow.Selection.of("lexical", "groundedness,answer_relevance"),
                       progress=False)
    return root / "run"


@pytest.fixture
def run(evaluated, tmp_path):
    return shutil.copytree(evaluated, tmp_path / "run")


def gate(capsys, *argv: str) -> tuple[int, str, list[str]]:
    try:
        code = main(["gate", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, [ln for ln in err.splitlines() if ln.strip()]


def disk_full(monkeypatch):
    real = Path.write_text

    def write_text(self, *args, **kwargs):
        if self.suffix == ".xml":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)


def test_the_verdict_is_printed_before_the_report_and_survives_a_failed_write(run, tmp_path, capsys, monkeypatch):
    """--junit PATH on a full disk: the verdict comes first, then one line naming the report, exit 2 (a report asked
    for and not written is no success). The default RUN/gate.xml degrades to a warning and the verdict's status."""
    disk_full(monkeypatch)
    code, out, err = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=0.9", "--junit", str(tmp_path / "j.xml"))
    assert code == 2 and "FAIL  groundedness" in out and "gate: FAILED (0/1 checks)" in out
    assert err == [f"ragdoctor: error: {tmp_path / 'j.xml'}: cannot write the JUnit report (No space left on device)"]
    code, out, err = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=0.1", "--junit", str(tmp_path / "j.xml"))
    assert code == 2 and "gate: passed (1/1 checks)" in out and len(err) == 1 and "j.xml" in err[0]
    for minimum, status in (("0.9", 1), ("0.1", 0)):
        code, out, err = gate(capsys, str(run), *NO_FILE, "--min", f"groundedness={minimum}")
        assert code == status and "gate: " in out, (out, err)
        assert err == [f"ragdoctor: warning: no JUnit report written ({run / 'gate.xml'}: cannot write the JUnit "
                       "report (No space left on device)); pass --junit PATH for one"]


def test_the_verdict_is_shown_before_the_report_is_written(run, tmp_path):
    seen = []
    code, _ = flow.gate_run(run, flow.GateConfig({"groundedness": 0.1}), tmp_path / "j.xml",
                            show=lambda code, checks: seen.append((code, (tmp_path / "j.xml").exists())))
    assert code == 0 and seen == [(0, False)] and (tmp_path / "j.xml").exists()


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_junit_path_that_is_no_regular_file_is_refused_before_the_verdict(run, tmp_path, capsys, kind):
    """--junit FIFO blocked forever before the verdict; --junit /dev/full lost it. Both are refused up front."""
    if kind == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    else:
        path = "/dev/full" if os.path.exists("/dev/full") else "/dev/null"
    code, out, err = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=0.9", "--junit", path)
    assert code == 2 and out == "" and err == [f"ragdoctor: error: {path}: is not a regular file (a device, FIFO or "
                                               "socket): expected a path for the JUnit report"]


def test_an_unreadable_default_report_is_skipped_with_a_warning(run, capsys, monkeypatch):
    """RUN/gate.xml writable but unreadable (chmod 200): it cannot be told to be a report of ours, so it is skipped
    with a warning, as a read-only run folder is; the verdict and its status stand. (Root reads any mode: the read is
    made to fail.)"""
    (run / "gate.xml").write_text('<testsuite name="ragdoctor.gate" tests="0"/>\n')

    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("corpora.paths.open", unreadable, raising=False)
    code, out, err = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=0.9")
    assert code == 1 and "gate: FAILED" in out
    assert len(err) == 1 and err[0].startswith(f"ragdoctor: warning: no JUnit report written ({run / 'gate.xml'}: "
                                               "cannot be read to tell")


def test_a_run_that_cannot_be_read_is_blamed_on_its_summary_not_on_the_report(run, tmp_path, capsys):
    """The summary is read before the report path is checked: the error names what cannot be read."""
    (run / "summary.json").unlink()
    code, out, err = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=0.5", "--junit", str(tmp_path))
    assert code == 2 and len(err) == 1 and "summary.json: no summary.json" in err[0]


def test_an_unreadable_summary_is_named_not_the_report_beside_it(run, capsys, monkeypatch):
    """A summary the process may not read (simulated: root reads any mode) is the error, before gate.xml is looked at."""
    (run / "gate.xml").write_text("<testsuites/>")
    read_bytes = Path.read_bytes

    def denied(self):
        if self.name == "summary.json":
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    code, out, err = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=0.5")
    assert code == 2 and out == "" and err == [f"ragdoctor: error: {run / 'summary.json'}: Permission denied"]


def test_a_threshold_on_what_the_run_never_evaluated_exits_2(run, capsys):
    code, out, err = gate(capsys, str(run), *NO_FILE, "--min", "answer_relevance:nli=0.3")
    assert code == 2 and out == "" and len(err) == 1
    assert "threshold 'answer_relevance:nli': the run did not evaluate answer_relevance with the nli judge (it " \
           "evaluated groundedness (lexical), answer_relevance (lexical))" in err[0]
    code, _, err = gate(capsys, str(run), *NO_FILE, "--min", "context_precision=0.3")
    assert code == 2 and "did not evaluate context_precision" in err[0]


def test_a_metric_whose_every_result_was_unmeasured_is_still_a_quality_failure(run, capsys):
    summary = json.loads((run / "summary.json").read_text())
    row = next(m for m in summary["metrics"] if m["metric"] == "answer_relevance")
    row.update(n=0, mean=None, ci_low=None, ci_high=None)
    (run / "summary.json").write_text(json.dumps(summary))
    code, out, _ = gate(capsys, str(run), *NO_FILE, "--min", "answer_relevance=0.3")
    assert code == 1 and "answer_relevance: no value to check (no measured values for this metric)" in out


def test_an_empty_judge_after_the_colon_is_refused(run, tmp_path, capsys):
    code, out, err = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=0.5", "--min", "groundedness:=0.9")
    assert code == 2 and out == "" and err == ["ragdoctor: error: --min: 'groundedness:' names no judge after ':' "
                                               "(give metric:judge, or the metric alone)"]
    p = tmp_path / "p.toml"
    p.write_text('[tool.ragdoctor.gate]\nmin = { groundedness = 0.5, "groundedness:" = 0.9 }\n')
    code, _, err = gate(capsys, str(run), "--pyproject", str(p))
    assert code == 2 and len(err) == 1 and f"{p}: [tool.ragdoctor.gate] min: 'groundedness:' names no judge" in err[0]


@pytest.mark.parametrize("argv, message", [
    (["--max-unmeasured", "0.1", "--ppi"], "--ppi chooses what a minimum is compared with, and there is no minimum"),
    (["--max-unmeasured", "0.1", "--ci-lower"], "--ci-lower chooses what a minimum is compared with"),
    (["--min", "groundedness=0.5", "--ppi", "--ci-lower"], "--ci-lower would do nothing with --ppi"),
])
def test_a_flag_with_nothing_to_act_on_is_refused(run, capsys, argv, message):
    code, out, err = gate(capsys, str(run), *NO_FILE, *argv)
    assert code == 2 and out == "" and len(err) == 1 and message in err[0], err


def test_the_estimate_flags_that_do_act_are_accepted(run, tmp_path, capsys):
    # --ci-lower picks the judge's CI lower bound for --ppi-fallback (too few labels here)
    code, out, _ = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=0.1", "--ppi", "--ppi-fallback",
                        "--ci-lower")
    assert code in (0, 1) and "CI lower bound; no PPI estimate" in out
    p = tmp_path / "p.toml"  # the file's default estimate, overridden by an explicit --ppi
    p.write_text("[tool.ragdoctor.gate]\nmin = { groundedness = 0.1 }\nuse_ci_lower = true\n")
    code, out, _ = gate(capsys, str(run), "--pyproject", str(p), "--ppi")
    assert code == 1 and "no PPI-corrected estimate" in out


@pytest.mark.parametrize("toml, message", [
    ("max_unmeasured = 0.5\nuse_ppi = true\n", "use_ppi = true in {p} [tool.ragdoctor.gate] chooses what a minimum"),
    ("min = { groundedness = 0.1 }\nuse_ppi = true\nuse_ci_lower = true\n",
     "use_ci_lower = true in {p} [tool.ragdoctor.gate] would do nothing with use_ppi = true"),
])
def test_pyproject_settings_with_nothing_to_act_on_are_refused(run, tmp_path, capsys, toml, message):
    p = tmp_path / "p.toml"
    p.write_text("[tool.ragdoctor.gate]\n" + toml)
    code, _, err = gate(capsys, str(run), "--pyproject", str(p))
    assert code == 2 and len(err) == 1 and message.format(p=p) in err[0], err


def test_a_negative_zero_threshold_prints_as_zero(run, capsys):
    code, out, _ = gate(capsys, str(run), *NO_FILE, "--min", "groundedness=-0", "--max-unmeasured=-0.0")
    assert code == 0 and "needs >= 0.000" in out and "needs <= 0.000" in out and "-0.000" not in out
