"""One run folder, one writer at a time (RunFolder.claim): a second evaluation of the same folder, from another thread or
another process, is refused in one line naming the folder, never told that the folder is not a ragdoctor run folder."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from corpora.errors import InputError
from corpora.run_folder import LOCK, RESULTS, RunFolder

ROOT = Path(__file__).resolve().parents[2]
IN_USE = r"^{}: in use by another ragdoctor evaluation \(pid \d+, since [^)]+\): wait for it to finish, or choose " \
         r"another folder$"


def _in_thread(fn):
    """``fn()`` run in another thread: what it returned or raised."""
    box: dict = {}

    def go():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=go)
    t.start()
    t.join(30)
    return box


def _claimed_once(run: RunFolder) -> str:
    with run.claim():
        return "claimed"


def test_a_second_claim_from_another_thread_is_refused_in_one_line(tmp_path):
    run = RunFolder(tmp_path / "run")
    with run.claim():
        assert run.path.is_dir() and run.file(LOCK).is_file()
        (run.path / "config.json").write_text("{}")  # mid-evaluation: written, no results.jsonl yet
        box = _in_thread(lambda: _claimed_once(RunFolder(tmp_path / "run")))
        assert isinstance(box.get("error"), InputError)
        assert re.match(IN_USE.format(re.escape(str(run.path))), str(box["error"]))
        (run.path / RESULTS).touch()  # the evaluation goes on to judge
    assert not run.file(LOCK).exists()  # released: nothing left behind
    assert _in_thread(lambda: _claimed_once(RunFolder(tmp_path / "run"))) == {"value": "claimed"}


def test_a_claim_that_creates_the_folder_and_fails_leaves_no_folder(tmp_path):
    with pytest.raises(RuntimeError), RunFolder(tmp_path / "new").claim():
        raise RuntimeError("a judge could not load")
    assert not (tmp_path / "new").exists()  # nothing written: no empty folder left either


def test_a_lock_left_by_a_killed_run_does_not_block_and_its_folder_resumes(tmp_path):
    """A run killed after config.json and before its first result: its lock file stays (the kernel released the lock),
    and the folder is still one of ours, never refused as foreign."""
    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    run.file(LOCK).write_text(json.dumps({"pid": 999999, "what": "evaluation", "since": "earlier"}))
    run.write_json("config.json", {"eval_hash": "x", "samples": {}})
    run.check_eval_writable()
    with run.claim():
        assert run.file(LOCK).exists()
    assert not run.file(LOCK).exists()


def test_the_claim_holds_against_another_process(tmp_path):
    """`ragdoctor eval` into a folder an evaluation in another process holds: exit 2, one line naming the folder, and
    nothing written into it."""
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps({"id": "a", "question": "q?", "answer": "a", "contexts": ["a"]}) + "\n")
    run = RunFolder(tmp_path / "run")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with run.claim():
        before = sorted(p.name for p in run.path.iterdir())
        proc = subprocess.run([sys.executable, "-m", "ragdoctor.cli", "eval", str(src), "--out", str(run.path),
                               "--judges", "lexical", "--metrics", "groundedness"], capture_output=True, text=True,
                              timeout=300, env=env, cwd=ROOT)
        assert sorted(p.name for p in run.path.iterdir()) == before
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith(f"ragdoctor: error: {run.path}: in use by another ragdoctor evaluation (pid "), lines
    assert "Traceback" not in proc.stderr
    assert not (run.path / RESULTS).exists()


def test_writes_of_one_file_from_many_threads_never_collide(tmp_path):
    """Two writers replacing the same file (two diagnoses of one run at once) each write whole: neither fails on the
    other's temporary file, and no temporary file is left."""
    run = RunFolder(tmp_path / "run")
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def write(n: int) -> None:
        start.wait()
        try:
            for _ in range(30):
                run.write_json("diagnosis.json", {"writer": n, "pad": "x" * 2000})
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert json.loads(run.file("diagnosis.json").read_text())["pad"] == "x" * 2000
    assert [p.name for p in run.path.iterdir()] == ["diagnosis.json"]
