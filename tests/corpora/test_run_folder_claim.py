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


# --- without fcntl (Windows): the lock file's exclusive creation is the lock, the holder's pid written in it --------

@pytest.fixture
def no_fcntl(monkeypatch):
    """The platform without fcntl, simulated: the lock (corpora/locks.py, which corpora.run_folder holds) takes its
    fallback path."""
    import corpora.locks

    monkeypatch.setattr(corpora.locks, "fcntl", None)
    return corpora.locks


def _dead_pid() -> int:
    """The pid of a process that has run and been reaped."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def _notices(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ragdoctor.notices"]


def test_without_fcntl_one_writer_at_a_time_and_a_release_leaves_nothing(tmp_path, no_fcntl, caplog):
    run = RunFolder(tmp_path / "run")
    with run.claim():
        held = json.loads(run.file(LOCK).read_text())
        assert held["pid"] == os.getpid() and held["what"] == "evaluation"
        box = _in_thread(lambda: _claimed_once(RunFolder(tmp_path / "run")))  # this process, another thread
        assert isinstance(box.get("error"), InputError)
        assert re.match(IN_USE.format(re.escape(str(run.path))).removesuffix("$"), str(box["error"]))
        assert f"remove {run.file(LOCK)}" in str(box["error"]) and "\n" not in str(box["error"])
    assert not run.file(LOCK).exists()  # released: nothing left behind
    assert _in_thread(lambda: _claimed_once(RunFolder(tmp_path / "run"))) == {"value": "claimed"}
    assert _notices(caplog) == []  # nothing was stale


CHILD = """
import sys, time
import corpora.locks
import corpora.run_folder as rf
corpora.locks.fcntl = None
with rf.RunFolder(sys.argv[1]).claim():
    print("held", flush=True)
    time.sleep(120)
"""


def test_without_fcntl_a_lock_left_by_a_killed_run_is_taken_over_with_one_notice(tmp_path, no_fcntl, caplog):
    """A run killed while it holds the folder leaves its lock file (nothing releases it there): while that process
    runs the folder is refused naming its pid; once it is gone the next claim takes the lock over, said in one line,
    and the folder resumes."""
    run = RunFolder(tmp_path / "run")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(run.path)], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        child.stdout.close()
        with pytest.raises(InputError, match=rf"in use by another ragdoctor evaluation \(pid {child.pid}, since "):
            _claimed_once(run)
    finally:
        child.kill()
        child.wait(30)
    assert json.loads(run.file(LOCK).read_text())["pid"] == child.pid  # left behind
    caplog.set_level("WARNING")
    with run.claim():
        assert json.loads(run.file(LOCK).read_text())["pid"] == os.getpid()
    notices = _notices(caplog)
    assert len(notices) == 1 and notices[0].startswith(f"warning: {run.path}: took over its lock, left behind by a "
                                                       f"ragdoctor evaluation (pid {child.pid}, since "), notices
    assert notices[0].endswith("that no longer runs")
    assert not run.file(LOCK).exists()
    with run.claim():  # a stale lock is taken over once: the next claim has nothing to say
        pass
    assert len(_notices(caplog)) == 1


@pytest.mark.parametrize("left", ["dead-pid", "our-pid-not-held", "empty-and-old", "not-json-and-old"])
def test_without_fcntl_a_stale_lock_file_is_taken_over(tmp_path, no_fcntl, caplog, left):
    """A lock naming a process that no longer runs (or this process's pid, reused, where this process holds no such
    lock), or one whose creator died before writing who it was (empty or torn, not written for a while)."""
    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    lock = run.file(LOCK)
    pid = {"dead-pid": _dead_pid(), "our-pid-not-held": os.getpid()}.get(left)
    lock.write_text(json.dumps({"what": "evaluation", "pid": pid, "since": "earlier"}) if pid else
                    "" if left == "empty-and-old" else '{"what": "evalu')
    if pid is None:
        old = lock.stat().st_mtime - 60
        os.utime(lock, (old, old))
    caplog.set_level("WARNING")
    assert _claimed_once(run) == "claimed"
    notices = _notices(caplog)
    assert len(notices) == 1 and "took over its lock" in notices[0], notices
    assert (f"(pid {pid}, since earlier)" if pid else "run (no pid written)") in notices[0]
    assert not lock.exists()


@pytest.mark.parametrize("left", ["live-pid", "empty-and-new"])
def test_without_fcntl_a_lock_of_a_live_process_or_one_being_written_is_never_taken(tmp_path, no_fcntl, caplog,
                                                                                   left):
    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    lock = run.file(LOCK)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(json.dumps({"what": "evaluation", "pid": sleeper.pid, "since": "now"}) if left == "live-pid"
                        else "")
        with pytest.raises(InputError, match="in use by another ragdoctor") as err:
            _claimed_once(run)
    finally:
        sleeper.kill()
        sleeper.wait(30)
    assert str(err.value).startswith(f"{run.path}: in use by another ragdoctor ")
    assert lock.read_text() == (json.dumps({"what": "evaluation", "pid": sleeper.pid, "since": "now"})
                                if left == "live-pid" else "")  # untouched
    assert _notices(caplog) == []


def test_without_fcntl_a_stale_lock_is_no_reason_to_call_a_folder_in_use(tmp_path, no_fcntl):
    """A folder refused for what it holds (a summary.json no evaluation wrote) is refused for that, not as 'in use',
    when the lock file in it is a dead run's."""
    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    run.file(LOCK).write_text(json.dumps({"what": "evaluation", "pid": _dead_pid(), "since": "earlier"}))
    (run.path / "summary.json").write_text("{}")
    with pytest.raises(InputError) as err:
        _claimed_once(run)
    assert "in use" not in str(err.value) and "was not written by `ragdoctor eval`" in str(err.value)


@pytest.mark.skipif(sys.platform == "win32", reason="fcntl is POSIX")
def test_with_fcntl_the_kernel_lock_decides_never_the_pid_written(tmp_path):
    """The fallback's pid reading does not weaken the flock path: a lock file held by a live flock is refused even
    when the pid in it is a dead one, and one no flock holds is taken at once, without a notice."""
    import fcntl

    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    lock = run.file(LOCK)
    lock.write_text(json.dumps({"what": "evaluation", "pid": _dead_pid(), "since": "earlier"}))
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        box = _in_thread(lambda: _claimed_once(run))
        assert isinstance(box.get("error"), InputError) and "in use by another ragdoctor" in str(box["error"])
        assert "remove" not in str(box["error"])
    finally:
        os.close(fd)
    assert _claimed_once(run) == "claimed" and not lock.exists()
