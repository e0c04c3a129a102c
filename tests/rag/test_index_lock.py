"""The index build lock (rag/index_dir.py's index_lock, on corpora/locks.py) where Python has no fcntl (Windows),
simulated by patching it away: the lock file's exclusive creation is the lock, the holder's pid written in it. One
builder at a time (the second waits, then finds the index current), a lock left by a killed process taken over with
one notice, and a live holder never displaced."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from corpora.paths import resolved
from corpora.records import Document
from rag.config import ChunkingConfig, IndexConfig
from rag.embeddings import FakeEmbedder
from rag.index_dir import _index_lock_file, index_lock
from rag.store import ensure_index

ROOT = Path(__file__).resolve().parents[2]
DOCS = [Document(id=f"d{i}", title=f"t{i}", text=f"note {i} about topic{i} and marker{i}. " * 3) for i in range(8)]
CH = ChunkingConfig(chunk_size=64, chunk_overlap=8)


@pytest.fixture
def no_fcntl(monkeypatch, tmp_path):
    """The platform without fcntl, simulated (corpora/locks.py takes its fallback path), with a cache folder of the
    test's own, so its locks folder holds only this test's lock files (a child process inherits it)."""
    import corpora.locks

    monkeypatch.setattr(corpora.locks, "fcntl", None)
    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path / "cache"))
    return corpora.locks


def _lock_of(index_dir: Path) -> Path:
    return _index_lock_file(resolved(index_dir))


def _notices(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ragdoctor.notices"]


def _wait_until(cond, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def _locked_in_thread(index_dir: Path, events: list[str]) -> threading.Thread:
    """A thread that takes ``index_dir``'s lock (waiting for it as long as it must), notes it, and lets go."""
    def go():
        with index_lock(index_dir):
            events.append("second holds the lock")
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def test_without_fcntl_one_builder_at_a_time_and_the_second_finds_the_index_current(tmp_path, no_fcntl, caplog):
    """A build holding the lock (here: another thread) makes a second one wait, said once with who holds it; the
    second then finds the index current and builds nothing. The lock file names its holder while held and is gone
    once let go."""
    caplog.set_level("WARNING", logger="ragdoctor.notices")
    index = tmp_path / "i"
    lock = _lock_of(index)
    order: list[str] = []

    def first():
        with index_lock(index):
            held = json.loads(lock.read_text())
            assert held["pid"] == os.getpid() and held["what"] == "index build"
            with index_lock(index):  # re-entrant in one thread: no wait for itself
                order.append("first holds the lock")
            time.sleep(0.5)
            ensure_index(DOCS, index, FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
            order.append("first built")

    t = threading.Thread(target=first)
    t.start()
    _wait_until(lambda: order)
    _, built = ensure_index(DOCS, index, FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    t.join(30)
    assert order == ["first holds the lock", "first built"] and not built
    notices = _notices(caplog)
    assert len(notices) == 1, notices
    assert notices[0].startswith(f"warning: {index}: another ragdoctor process (or thread) is building this index "
                                 f"(index build (pid {os.getpid()}, since "), notices
    assert notices[0].endswith(f"; waiting for it (if that process is no ragdoctor run, remove {lock})")
    assert not lock.exists() and list(lock.parent.iterdir()) == []  # let go: nothing left behind
    assert not [p for p in tmp_path.iterdir() if ".building-" in p.name]


CHILD = """
import sys, time
import corpora.locks
corpora.locks.fcntl = None
from rag.index_dir import index_lock
with index_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


def test_without_fcntl_a_lock_left_by_a_killed_build_is_taken_over_with_one_notice(tmp_path, no_fcntl, caplog):
    """A build killed while it holds the lock leaves its lock file (nothing releases it there): while that process
    runs a second build waits for it; once it is gone the waiting build takes the lock over, said in one line."""
    caplog.set_level("WARNING", logger="ragdoctor.notices")
    index = tmp_path / "i"
    lock = _lock_of(index)
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(index)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    events: list[str] = []
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        child.stdout.close()
        t = _locked_in_thread(index, events)
        _wait_until(lambda: _notices(caplog))
        time.sleep(0.5)
        assert events == []  # a live holder: waited for
        assert json.loads(lock.read_text())["pid"] == child.pid
    finally:
        child.kill()
        child.wait(30)
    t.join(30)
    assert events == ["second holds the lock"]
    notices = _notices(caplog)
    assert len(notices) == 2, notices
    assert f"is building this index (index build (pid {child.pid}, since " in notices[0]
    assert notices[1].startswith(f"warning: {index}: took over its build lock, left behind by a ragdoctor index "
                                 f"build (pid {child.pid}, since "), notices
    assert notices[1].endswith("that no longer runs")
    assert not lock.exists()
    with index_lock(index):  # a stale lock is taken over once: the next build has nothing to say
        pass
    assert len(_notices(caplog)) == 2


@pytest.mark.parametrize("left", ["live-pid", "empty-and-new"])
def test_without_fcntl_a_live_holders_lock_is_never_displaced(tmp_path, no_fcntl, caplog, left):
    """A lock naming a process that runs (here: not even a ragdoctor one, as a reused pid would be), or one its creator
    is still writing, is waited for and left as it is; once that process is gone (or the empty file has not been
    written for a while: its creator died first) it is taken over."""
    caplog.set_level("WARNING", logger="ragdoctor.notices")
    index = tmp_path / "i"
    lock = _lock_of(index)
    lock.parent.mkdir(parents=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    text = json.dumps({"what": "index build", "pid": sleeper.pid, "since": "now"}) if left == "live-pid" else ""
    lock.write_text(text)
    events: list[str] = []
    try:
        t = _locked_in_thread(index, events)
        _wait_until(lambda: _notices(caplog))
        time.sleep(0.5)
        assert events == [] and lock.read_text() == text  # waited for, untouched
        assert _notices(caplog)[0].endswith(f"waiting for it (if that process is no ragdoctor run, remove {lock})")
    finally:
        sleeper.kill()
        sleeper.wait(30)
    if left == "empty-and-new":
        assert events == [] and lock.read_text() == ""  # the pid of no process named: still waited for
        old = time.time() - 60
        os.utime(lock, (old, old))
    t.join(30)
    assert events == ["second holds the lock"]
    notices = _notices(caplog)
    assert len(notices) == 2 and "took over its build lock" in notices[1], notices
    assert (f"(pid {sleeper.pid}, since now)" if left == "live-pid" else "run (no pid written)") in notices[1]
    assert not lock.exists()
