"""The CLI as a user runs it, in subprocesses (network-guarded too): index -> run -> eval -> diagnose -> gate."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.fake_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]


def ragdoctor(*args, cwd, check=True, timeout=600):
    proc = subprocess.run([sys.executable, "-m", "ragdoctor.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": os.pathsep.join([os.environ["PYTHONPATH"], str(ROOT)])})
    if check and proc.returncode != 0:
        raise AssertionError(f"ragdoctor {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_full_flow_with_fake_models(tmp_path):
    common = ["--embedder", "fake", "--index-dir", str(tmp_path / "idx")]
    out = ragdoctor("index", *common, cwd=tmp_path).stdout
    assert "index built" in out and "56 documents" in out
    assert "up to date" in ragdoctor("index", *common, cwd=tmp_path).stdout
    with FakeOpenAIServer() as srv:
        run = ragdoctor("run", *common, "--base-url", srv.base_url, "--name", "e2e", "--limit", "12", cwd=tmp_path)
        assert "recall@5" in run.stdout and "p95 ms" in run.stdout and "12 new" in run.stdout
        traces = tmp_path / "runs" / "e2e" / "traces.jsonl"
        assert len(traces.read_text().splitlines()) == 12
        again = ragdoctor("run", *common, "--base-url", srv.base_url, "--name", "e2e", "--limit", "12", cwd=tmp_path)
        assert "0 new, 12 resumed" in again.stdout
        ev = ragdoctor("eval", str(traces), "--judges", "lexical,labels", cwd=tmp_path)
        assert "groundedness" in ev.stdout and "95% CI" in ev.stdout
        run_dir = traces.parent
        assert {"results.jsonl", "results.parquet", "summary.json", "config.json"} <= {p.name for p in run_dir.iterdir()}
        diag = ragdoctor("diagnose", str(run_dir), *common, "--base-url", srv.base_url, "--probes",
                         "--probe-judge", "lexical", "--probe-limit", "3", cwd=tmp_path)
        assert "category" in diag.stdout and "count" in diag.stdout
    report = json.loads((run_dir / "diagnosis.json").read_text())
    assert sum(c["count"] for c in report["categories"]) == 12
    probed = [json.loads(line) for line in (run_dir / "diagnoses.jsonl").read_text().splitlines()]
    assert any(d["probe"] for d in probed) or all(d["category"] == "ok" for d in probed)
    js = json.loads(ragdoctor("diagnose", str(run_dir), "--format", "json", cwd=tmp_path).stdout)
    assert js["n_samples"] == 12
    ok = ragdoctor("gate", str(run_dir), "--min", "recall@5=0.5", "--max-unmeasured", "0.5", cwd=tmp_path, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = ragdoctor("gate", str(run_dir), "--min", "groundedness:lexical=1.01", cwd=tmp_path, check=False)
    assert bad.returncode == 2 and "must be within [0, 1]" in bad.stderr
    fail = ragdoctor("gate", str(run_dir), "--min", "answer_correctness=0.99", cwd=tmp_path, check=False)
    assert fail.returncode == 1 and "FAIL" in fail.stdout
    assert (run_dir / "gate.xml").exists()


def test_demo_runs_the_whole_flow_with_fake_models(tmp_path):
    """`ragdoctor demo` chains index -> run -> eval -> gate -> diagnose through ragdoctor/flow.py."""
    (tmp_path / "pyproject.toml").write_text("[tool.ragdoctor.gate]\nmin = { \"recall@5\" = 0.1 }\n")
    with FakeOpenAIServer() as srv:
        p = ragdoctor("demo", "--limit", "3", "--embedder", "fake", "--index-dir", str(tmp_path / "idx"),
                      "--base-url", srv.base_url, "--judges", "lexical,labels", cwd=tmp_path)
    out = p.stdout
    for step in ("== 1/5 index ==", "== 3/5 evaluate ==", "== 4/5 gate", "== 5/5 diagnose ==", "gate: passed"):
        assert step in out, out
    run = tmp_path / "runs" / "demo"
    assert {"traces.jsonl", "results.jsonl", "summary.json", "diagnoses.jsonl", "gate.xml", "run_summary.json"} <= \
        {f.name for f in run.iterdir()}
    from corpora.bundled import demo_questions

    answered = [json.loads(line)["sample_id"] for line in (run / "traces.jsonl").read_text().splitlines()]
    assert answered == [q.id for q in demo_questions()[:3]]  # the stratified default set, not the first questions
    assert "== 2/5 answer the first 3 of 24 of the bundled questions, every planted kind (--full: all) (model " in out
    (tmp_path / "pyproject.toml").unlink()  # no thresholds: the demo says so, never "passed (0/0 checks)"
    with FakeOpenAIServer() as srv:
        again = ragdoctor("demo", "--limit", "3", "--embedder", "fake", "--index-dir", str(tmp_path / "idx"),
                          "--base-url", srv.base_url, "--judges", "lexical,labels", cwd=tmp_path).stdout
    assert "gate skipped: no thresholds" in again and "gate: passed" not in again
    (tmp_path / "pyproject.toml").write_text("[tool.ragdoctor.gate]\nmin = { \"recall@5\" = 0.1 }\n")
    with FakeOpenAIServer() as srv:  # a threshold these judges do not measure: the gate step says so, diagnose runs
        third = ragdoctor("demo", "--limit", "3", "--embedder", "fake", "--index-dir", str(tmp_path / "idx"),
                          "--base-url", srv.base_url, "--judges", "lexical", cwd=tmp_path).stdout
    assert "gate skipped: " in third and "recall@5" in third and "== 5/5 diagnose ==" in third


def test_one_line_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "b"}\n')
    p = ragdoctor("index", "--corpus", str(bad), "--embedder", "fake", "--index-dir", str(tmp_path / "i"), cwd=tmp_path,
                  check=False)
    assert p.returncode == 0  # the bad line is reported and skipped, the rest is indexed
    assert f"ragdoctor: skipped bad record: {bad}:2: field 'text': missing required field" in p.stderr.splitlines()
    bad.write_text('{"id": "b"}\n')
    p = ragdoctor("index", "--corpus", str(bad), "--embedder", "fake", "--index-dir", str(tmp_path / "i"), cwd=tmp_path,
                  check=False)
    assert p.returncode == 2
    assert p.stderr.strip() == (f"ragdoctor: error: {bad}: no valid documents (1 bad line skipped; first: line 1: "
                                "field 'text': missing required field)")
    ragdoctor("index", "--embedder", "fake", "--index-dir", str(tmp_path / "i2"), cwd=tmp_path)
    p = ragdoctor("ask", "what?", "--embedder", "minilm", "--index-dir", str(tmp_path / "i2"),
                  "--base-url", "http://127.0.0.1:9/v1", cwd=tmp_path, check=False)
    assert p.returncode == 2 and "built differently" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = ragdoctor("eval", str(tmp_path / "missing.jsonl"), cwd=tmp_path, check=False)
    assert p.returncode == 2 and "file not found" in p.stderr
    cfg = tmp_path / "c.toml"
    cfg.write_text("[pipeline.retrieval]\ntop_kk = 3\n")
    p = ragdoctor("index", "--config", str(cfg), cwd=tmp_path, check=False)
    assert p.returncode == 2 and "c.toml: field 'retrieval.top_kk': unknown field" in p.stderr


@pytest.mark.slow
@pytest.mark.model
def test_run_with_the_real_bundled_model(tmp_path):
    """`ragdoctor run` on a small slice with MiniLM and the bundled Qwen2.5-0.5B GGUF served by xllamacpp."""
    p = ragdoctor("run", "--index-dir", str(tmp_path / "idx"), "--name", "real", "--limit", "3", cwd=tmp_path,
                  timeout=900)
    traces = [json.loads(line) for line in (tmp_path / "runs" / "real" / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 3, p.stdout + p.stderr
    for t in traces:
        assert t["outcome"] in ("answered", "refused"), t.get("error")
        assert t["answer"].strip() and t["generator"].startswith("qwen2.5-0.5b")
        assert t["latency_ms"]["generate"] > 0 and len(t["contexts"]) == 4
    assert "recall@5" in p.stdout


@pytest.mark.parametrize(("raised", "code", "line"), [
    (OSError(28, "No space left on device", "lab.json"), 2, "ragdoctor: error: lab.json: No space left on device"),
    (OSError(18, "Invalid cross-device link", "a.tmp", None, "a"), 2,
     "ragdoctor: error: a.tmp -> a: Invalid cross-device link"),
    (OSError(40, "Too many levels of symbolic links", "loop1"), 2,
     "ragdoctor: error: loop1: is a symbolic link loop: its links point at each other; give a real path"),
    (RuntimeError("Symlink loop from '/w/loop1'"), 2,
     "ragdoctor: error: /w/loop1: is a symbolic link loop: its links point at each other; give a real path"),
    (RuntimeError("something else"), 3, "ragdoctor: internal error: RuntimeError: something else; rerun with --debug "
                                        "for the traceback"),
])
def test_a_file_system_error_is_one_line_naming_its_file(raised, code, line, monkeypatch, capsys):
    """The file system saying no is the user's path, not a bug (exit 2), and the line names the file(s)."""
    import ragdoctor.cmd_diagnose
    from ragdoctor.cli import main

    def fail(args):
        raise raised
    monkeypatch.setattr(ragdoctor.cmd_diagnose, "cmd_diagnose", fail)
    assert main(["diagnose", "r"]) == code
    assert capsys.readouterr().err.splitlines() == [line]


def test_a_path_that_is_not_utf8_is_printed_escaped_not_a_crash(monkeypatch, capsys):
    """A name from a shell with a byte that is not UTF-8 (a lone surrogate): printed on a strict UTF-8 stream after
    the work is done, it must not turn a success into an internal error."""
    import ragdoctor.cmd_diagnose
    from ragdoctor.cli import main

    def show(args):
        print("index built idx\udcff")
        return 0
    monkeypatch.setattr(ragdoctor.cmd_diagnose, "cmd_diagnose", show)
    assert main(["diagnose", "r"]) == 0
    assert capsys.readouterr().out == "index built idx\\udcff\n"
