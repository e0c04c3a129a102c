"""Kill and resume (issue 12): `ragdoctor run` and `ragdoctor eval` are SIGKILLed at seeded random points several
times, some records are edited between the kills, and the finished run must hold every record once, nothing lost,
nothing duplicated, and no stale verdict (an edited record is answered or judged again). Also: a killed index build
leaves the old index intact. Subprocesses (network-guarded); fake embedder and a slow fake LLM server."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpora.run_folder import RunFolder
from eval.adapters import load_traces
from eval.judges.labels import LabelsJudge
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.judging import evaluate
from rag.fake_server import FakeOpenAIServer
from rag.llm import FakeLLM
from tests.files import complete_records

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ["PYTHONPATH"], str(ROOT)])}
CLI = [sys.executable, "-m", "ragdoctor.cli"]
TOPICS = ["kv cache", "flash attention", "lora rank", "ring allreduce", "speculative decoding", "paged attention"]


class SlowLLM(FakeLLM):
    def chat(self, messages, **kw):
        time.sleep(0.02)
        return super().chat(messages, **kw)


lines = complete_records  # the log's complete records: a line a SIGKILL tore mid-write is redone, not counted


def kill_after_growth(cmd: list[str], cwd: Path, log: Path, grow: int, jitter: float) -> bool:
    """Start ``cmd``; once ``log`` has ``grow`` more lines (or the command ends) wait ``jitter`` s and SIGKILL it.
    True when it was killed (False: it finished first)."""
    start = log.read_bytes().count(b"\n") if log.exists() else 0
    proc = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if log.exists() and log.read_bytes().count(b"\n") >= start + grow:  # complete lines
            time.sleep(jitter)
            break
        time.sleep(0.002)
    if proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return True


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_run_killed_at_random_points_resumes_without_loss_duplicates_or_stale_answers(tmp_path):
    rng = random.Random(1212)
    corpus = [{"id": f"d{i}", "text": f"Note {i} explains {TOPICS[i % 6]} in detail, with marker{i}."} for i in range(24)]
    questions = [{"id": f"q{i:02d}", "question": f"What does note {i % 24} say about {TOPICS[i % 6]}?",
                  "relevant_doc_ids": [f"d{i % 24}"]} for i in range(40)]
    write_jsonl(tmp_path / "corpus.jsonl", corpus)
    write_jsonl(tmp_path / "q.jsonl", questions)
    out = tmp_path / "run" / "traces.jsonl"
    edited: set[str] = set()
    with FakeOpenAIServer(SlowLLM()) as srv:
        cmd = [*CLI, "run", "--embedder", "fake", "--index-dir", "idx", "--corpus", "corpus.jsonl", "--base-url",
               srv.base_url, "--questions", "q.jsonl", "--out", str(out)]
        assert subprocess.run([*CLI, "index", *cmd[4:10]], cwd=tmp_path, env=ENV, capture_output=True).returncode == 0
        kills = 0
        for _ in range(5):
            kills += kill_after_growth(cmd, tmp_path, out, rng.randint(1, 6), rng.uniform(0, 0.03))
            done = [t["sample_id"] for t in lines(out)]
            if done:  # edit a question that was already answered: it must be answered again
                victim = rng.choice(done)
                edited.add(victim)
                questions = [{**q, "question": q["question"] + " (edited)"} if q["id"] == victim else q
                             for q in questions]
                write_jsonl(tmp_path / "q.jsonl", questions)
        assert kills >= 3
        final = subprocess.run(cmd, cwd=tmp_path, env=ENV, capture_output=True, text=True)
        assert final.returncode == 0, final.stderr
        again = subprocess.run(cmd, cwd=tmp_path, env=ENV, capture_output=True, text=True)
        assert "0 new, 40 resumed" in again.stdout, again.stdout + again.stderr
    latest = RunFolder.of_traces(out).latest_traces()
    assert sorted(latest) == [q["id"] for q in questions]  # nothing lost
    by_id = {q["id"]: q for q in questions}
    assert all(t.question == by_id[sid]["question"] for sid, t in latest.items())  # nothing stale
    per_id: dict[str, int] = {}
    for t in lines(out):
        per_id[t["sample_id"]] = per_id.get(t["sample_id"], 0) + 1
    for sid, n in per_id.items():  # once each, plus once per edit that superseded an earlier answer
        assert n <= 1 + (sid in edited) * 5, (sid, n)
    assert all(n == 1 for sid, n in per_id.items() if sid not in edited)


def _rows(n: int) -> list[dict]:
    rows = []
    for i in range(n):
        ctx = [{"id": f"c{i}-{k}", "doc_id": f"d{(i + k) % 50}",
                "text": f"Document {(i + k) % 50} says {TOPICS[(i + k) % 6]} matters for case {i}. " * 3}
               for k in range(3)]
        rows.append({"id": f"s{i:03d}", "question": f"Why does {TOPICS[i % 6]} matter for case {i}?", "contexts": ctx,
                     "answer": f"{TOPICS[i % 6].title()} matters for case {i}. It is documented.",
                     "reference": f"{TOPICS[i % 6]} matters for case {i}.", "relevant_ids": [f"d{i % 50}"]})
    return rows


def test_eval_killed_at_random_points_resumes_without_loss_duplicates_or_stale_verdicts(tmp_path):
    rng = random.Random(2121)
    rows = _rows(300)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, rows)
    run_dir = tmp_path / "run"
    cmd = [*CLI, "eval", str(src), "--judges", "lexical,labels", "--out", str(run_dir), "--batch-size", "2"]
    log = run_dir / "results.jsonl"
    edits: dict[str, int] = {}
    kills = 0
    for _ in range(5):
        kills += kill_after_growth(cmd, tmp_path, log, rng.randint(5, 60), rng.uniform(0, 0.01))
        judged = [j["sample_id"] for j in lines(log)]
        for victim in rng.sample(judged, min(2, len(judged))):  # edit judged records: they must be judged again
            edits[victim] = edits.get(victim, 0) + 1
            rows = [{**r, "answer": r["answer"] + " It was edited."} if r["id"] == victim else r for r in rows]
        write_jsonl(src, rows)
    assert kills >= 3
    final = subprocess.run(cmd, cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    again = subprocess.run(cmd, cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert "(0 judged, 300 resumed" in again.stdout, again.stdout

    samples, _ = load_traces(src)
    current = {s.sample_id: s for s in samples}
    got = {j.sample_id: j for j in RunFolder(run_dir).judgements()}
    assert sorted(got) == sorted(current)  # nothing lost
    assert all(j.sample_hash == current[sid].content_hash() for sid, j in got.items())  # nothing stale
    fresh = evaluate(samples, metrics=json.loads((run_dir / "config.json").read_text())["metrics"],
                     judges=[ScorerJudge(LexicalScorer(), config_id="lexical:v1"), LabelsJudge()],
                     run=tmp_path / "fresh", progress=False)
    for j in fresh.judgements:  # the resumed verdicts are the ones a clean run gives
        assert [(r.metric, r.status, r.value) for r in got[j.sample_id].results] == \
               [(r.metric, r.status, r.value) for r in j.results], j.sample_id
    count: dict[tuple[str, str], int] = {}
    for j in lines(log):
        key = (j["sample_id"], j["sample_hash"])
        count[key] = count.get(key, 0) + 1
    assert max(count.values()) == 1  # no (sample, content) judged twice: nothing duplicated


def test_a_killed_index_build_leaves_the_old_index_intact(tmp_path):
    rng = random.Random(7)
    docs = [{"id": f"d{i}", "text": f"Note {i} about {TOPICS[i % 6]}. " * 40} for i in range(400)]
    write_jsonl(tmp_path / "corpus.jsonl", docs[:20])
    base = [*CLI, "index", "--embedder", "fake", "--index-dir", "idx", "--corpus", "corpus.jsonl"]
    assert subprocess.run(base, cwd=tmp_path, env=ENV, capture_output=True).returncode == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir() if p.is_file()}
    write_jsonl(tmp_path / "corpus.jsonl", docs)  # a bigger corpus: a rebuild, killed part way
    for _ in range(3):
        proc = subprocess.Popen(base, cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        after = {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir() if p.is_file()}
        manifest = json.loads(after["manifest.json"])
        assert after == before or manifest["n_documents"] == 400  # the old index, or the complete new one
    p = subprocess.run([*CLI, "ask", "What about lora rank?", *base[2:], "--base-url", "http://127.0.0.1:9/v1"],
                       cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert "rebuild the index" not in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("verb, module", [("eval", "cmd_eval"), ("diagnose", "cmd_diagnose")])
def test_internal_errors_are_one_line_exit_3_and_debug_shows_the_traceback(tmp_path, verb, module):
    """A bug is never the gate's 1 nor a traceback: one line and exit 3; --debug adds the traceback."""
    code = (f"import sys, ragdoctor.{module} as m, ragdoctor.cli as c\n"
            "def bad(args):\n    raise ZeroDivisionError('planted bug')\n"
            f"m.{module} = bad\nsys.exit(c.main(sys.argv[1:]))\n")
    p = subprocess.run([sys.executable, "-c", code, verb, "x"], cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert p.returncode == 3
    assert p.stderr.strip() == ("ragdoctor: internal error: ZeroDivisionError: planted bug; rerun with --debug for "
                                "the traceback")
    p = subprocess.run([sys.executable, "-c", code, verb, "x", "--debug"], cwd=tmp_path, env=ENV, capture_output=True,
                       text=True)
    assert p.returncode == 3 and "Traceback (most recent call last)" in p.stderr and "planted bug" in p.stderr
