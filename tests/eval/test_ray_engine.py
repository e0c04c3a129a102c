"""--engine ray on real Ray: a local runtime (loopback) and a two-node cluster on this machine. The same input gives the
same verdicts as --engine local; a worker killed mid-run (Ray retries its task) and a driver killed mid-run (the rerun
resumes) lose nothing and duplicate nothing in results.jsonl. The default engine never imports Ray."""
from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from corpora.run_folder import RunFolder
from eval.adapters import load_traces
from eval.judges.labels import LabelsJudge
from eval.judges.lexical import LexicalScorer
from eval.judges.scorer import ScorerJudge
from eval.judging import evaluate, judge_failed
from ragdoctor import flow
from tests.eval.test_judging import CTX, write_jsonl
from tests.files import complete_lines, complete_records

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "ragdoctor.cli"]
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the test's judge builders travel to the workers
METRICS = ["groundedness", "context_precision", "answer_relevance", "context_recall", "answer_correctness", "recall@5"]
ANSWERS = ["The KV cache stores keys and values for every token [kv#0].",
           "The KV cache stores optimizer momentum on the CPU.",
           "FlashAttention tiles the attention computation to avoid HBM traffic.",
           "I don't know based on the provided documents.",
           "It grows with sequence length, and FlashAttention avoids HBM traffic."]


def many_rows(n: int) -> list[dict]:
    return [{"id": f"s{i:04d}", "question": "What does the KV cache store?" if i % 2 else "What tiles attention?",
             "contexts": CTX, "answer": f"{ANSWERS[i % len(ANSWERS)]} ({i})", "reference": "Keys and values.",
             "relevant_ids": ["kv"] if i % 3 else ["fa"]} for i in range(n)]


def verdicts(judgements) -> dict:
    """Everything a judgement says, but the seconds it took."""
    return {j.sample_id: [r.model_dump(exclude={"seconds"}) for r in j.results] for j in judgements}


def _flat(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _flat(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _flat(v, f"{path}[{i}]")
    else:
        yield path, x


def assert_same_verdicts(got, want, score_tol: float = 0.002) -> None:
    """Every field of every judgement equal (verdicts, values, chunks, sentences, notes), except that a claim's
    ``score`` may differ by ``score_tol``: the nli judge in bf16 (its default on CPUs with native bf16) gives scores
    that agree to about 1e-3 between processes, not bit for bit (in int8 they are bit-identical)."""
    a = {j.sample_id: dict(_flat([r.model_dump(exclude={"seconds"}) for r in j.results])) for j in got}
    b = {j.sample_id: dict(_flat([r.model_dump(exclude={"seconds"}) for r in j.results])) for j in want}
    assert a.keys() == b.keys()
    for sid in a:
        assert a[sid].keys() == b[sid].keys(), sid
        for key, v in a[sid].items():
            w = b[sid][key]
            if key.endswith(".score") and isinstance(v, float) and isinstance(w, float):
                assert abs(v - w) <= score_tol, (sid, key, v, w)
            else:
                assert v == w, (sid, key, v, w)


def log_ids(run_dir: Path) -> list[str]:
    return [r["sample_id"] for r in complete_records(run_dir / "results.jsonl")]


class SlowLexical(ScorerJudge):
    """The lexical judge, a little slower per batch (so a test can kill something while a run is in flight); records
    the process that judged each batch."""

    def __init__(self, delay: float, record: str | None):
        super().__init__(LexicalScorer(), config_id="lexical:v1")
        self.delay, self.record = delay, record

    def judge(self, metric, traces):
        if self.record:
            with open(self.record, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()} {ray.get_runtime_context().get_node_id() if ray.is_initialized() else '-'}\n")
        time.sleep(self.delay)
        return super().judge(metric, traces)


@contextmanager
def slow_judges(delay: float = 0.0, record: str | None = None):
    yield [SlowLexical(delay, record), LabelsJudge()]


def judged_with(engine, traces, run_dir, batch_size=2, **kw):
    with slow_judges(**kw) as judges:
        return evaluate(traces, metrics=METRICS, judges=judges, run=run_dir, batch_size=batch_size, progress=False,
                        engine=engine)


@pytest.fixture
def traces(tmp_path):
    got, errors = load_traces(write_jsonl(tmp_path / "in.jsonl", many_rows(24)))
    assert errors == []
    return got


def test_local_engine_never_imports_ray(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", many_rows(3))
    code = ("import sys; from ragdoctor.cli import main; "
            f"rc = main(['eval', {str(src)!r}, '--judges', 'lexical,labels', '--out', {str(tmp_path / 'run')!r}]); "
            "assert rc == 0, rc; assert 'ray' not in sys.modules, 'ray imported'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_ray_engine_gives_the_local_verdicts_and_run_folder(ray_local, traces, tmp_path):
    from eval.ray_engine import RayEngine

    local = judged_with(None, traces, tmp_path / "local")
    remote = judged_with(RayEngine(slow_judges, num_workers=2), traces, tmp_path / "ray")
    assert remote.new == len(traces) and verdicts(remote.judgements) == verdicts(local.judgements)
    assert sorted(log_ids(tmp_path / "ray")) == sorted(t.sample_id for t in traces)  # each once
    for key in ("metrics", "unmeasured_share", "run_key"):
        assert remote.summary[key] == local.summary[key]
    assert RunFolder(tmp_path / "ray").config()["engine"] == "ray"
    assert verdicts(RunFolder(tmp_path / "ray").judgements()) == verdicts(local.judgements)


def test_ray_engine_resumes_a_local_run(ray_local, traces, tmp_path):
    from eval.ray_engine import RayEngine

    judged_with(None, traces[:10], tmp_path / "run")
    again = judged_with(RayEngine(slow_judges), traces, tmp_path / "run")
    assert (again.new, again.resumed) == (len(traces) - 10, 10)
    assert Counter(log_ids(tmp_path / "run")) == Counter(t.sample_id for t in traces)


def test_workers_must_build_the_drivers_judges(ray_local, traces, tmp_path):
    from corpora.errors import UsageError
    from eval.ray_engine import RayEngine

    @contextmanager
    def other():
        yield [ScorerJudge(LexicalScorer(), config_id="lexical:v0"), LabelsJudge()]

    with pytest.raises(UsageError, match="other judges than the driver"):
        judged_with(RayEngine(other), traces[:4], tmp_path / "run")


class GatedLexical(SlowLexical):
    """The lexical judge, held on the batch of ``held`` until the file ``gate`` exists (at most a minute)."""

    def __init__(self, held: str, gate: str):
        super().__init__(0.0, None)
        self.held, self.gate = held, gate

    def judge(self, metric, traces):
        deadline = time.monotonic() + 60
        while any(t.sample_id == self.held for t in traces) and not os.path.exists(self.gate) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        return super().judge(metric, traces)


@contextmanager
def gated_judges(held: str = "", gate: str = ""):
    yield [GatedLexical(held, gate), LabelsJudge()]


def test_a_finished_batch_is_written_before_a_slow_one_finishes(ray_local, traces, tmp_path):
    """One worker is held on its first batch while the other judges the rest: each of those is in results.jsonl as
    soon as it is judged, not when the held batch lets it through (Ray Data's output order, a block of several
    batches, a block queued behind the held one on its actor, or the iterator's prefetching would each hold one back
    until the gate's minute is up)."""
    from eval.ray_engine import RayEngine

    gate, run_dir = tmp_path / "gate", tmp_path / "run"
    held = traces[0].sample_id
    seen: list[int] = []

    def open_gate_once_the_rest_is_written() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not gate.exists():
            seen.append(len(set(log_ids(run_dir)) if (run_dir / "results.jsonl").exists() else set()))
            if seen[-1] >= len(traces[:8]) - 1:
                gate.touch()
            time.sleep(0.05)

    opener = threading.Thread(target=open_gate_once_the_rest_is_written, daemon=True)
    opener.start()
    try:
        build = functools.partial(gated_judges, held=held, gate=str(gate))
        with gated_judges() as judges:
            got = evaluate(traces[:8], metrics=METRICS, judges=judges, run=run_dir, batch_size=1, progress=False,
                           engine=RayEngine(build, num_workers=2))
    finally:
        gate.touch()
        opener.join(timeout=30)
    assert got.new == 8 and max(seen) == 7, f"the finished batches reached results.jsonl late (saw {max(seen)} of 7)"
    assert log_ids(run_dir)[-1] == held and Counter(log_ids(run_dir)) == Counter(t.sample_id for t in traces[:8])


def test_an_index_build_in_the_same_process_leaves_eval_unordered(ray_local, traces, tmp_path):
    """The index asks Ray Data for its shards in order; that is its dataset's setting, not the process's."""
    import ray.data

    from rag.ray_runtime import dataset_options

    before = ray.data.DataContext.get_current().execution_options.preserve_order
    ordered = dataset_options(ray.data.from_items([{"a": 1}]), preserve_order=True)
    assert ordered.context.execution_options.preserve_order is True
    assert ray.data.DataContext.get_current().execution_options.preserve_order == before
    assert dataset_options(ray.data.from_items([{"a": 1}]), preserve_order=False).context.execution_options \
        .preserve_order is False


@pytest.mark.slow
def test_nli_verdicts_are_identical_on_ray(ray_local, traces, tmp_path):
    from eval.judges.registry import default_nli_path

    if default_nli_path() is None:
        pytest.skip("the shipped NLI judge is not installed")
    src = write_jsonl(tmp_path / "in.jsonl", many_rows(6))
    selection = flow.Selection.of("nli,labels", "groundedness,answer_correctness,context_recall")
    local = flow.evaluate_file(src, tmp_path / "local", selection, batch_size=4, progress=False)
    remote = flow.evaluate_file(src, tmp_path / "ray", selection, batch_size=4, progress=False, engine="ray",
                                ray=flow.RayOptions(num_workers=1))
    assert_same_verdicts(remote.judgements, local.judgements)
    assert any(r.measured and r.judge == "nli" for j in remote.judgements for r in j.results)


@pytest.mark.slow
def test_two_node_cluster_shards_and_survives_a_killed_worker(two_nodes, traces, tmp_path):
    from eval.ray_engine import RayEngine

    record = tmp_path / "workers.txt"
    build = functools.partial(slow_judges, delay=0.1, record=str(record))
    run_dir = tmp_path / "ray"
    killed: list[int] = []
    finished = threading.Event()

    def kill_one_worker() -> None:  # once a few batches are in, SIGKILL a judging actor's process
        # both files are read while workers and the driver append to them: only their complete lines count (a
        # half-written results line is no JSON yet, a half-written "pid node" line may hold a truncated pid)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed and not finished.is_set():
            done = len(complete_lines(run_dir / "results.jsonl"))
            pids = {int(line.split()[0]) for line in complete_lines(record)}
            if done >= 4 and pids:
                pid = max(pids)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_worker, daemon=True)
    killer.start()
    try:
        remote = judged_with(RayEngine(build, num_workers=2), traces, run_dir, batch_size=1)
    finally:
        finished.set()  # a kill after the run would prove nothing
        killer.join(timeout=30)
    assert killed, "no worker was killed mid-run"
    nodes = {line.split()[1] for line in record.read_text().splitlines()}
    assert len(nodes) == 2, f"the batches ran on {len(nodes)} node(s), not both"
    assert Counter(log_ids(run_dir)) == Counter(t.sample_id for t in traces)  # nothing lost, nothing duplicated
    local = judged_with(None, traces, tmp_path / "local", batch_size=1)
    assert verdicts(remote.judgements) == verdicts(local.judgements)


@pytest.mark.slow
def test_a_killed_driver_resumes_without_loss_or_duplicates(tmp_path):
    n = 400
    src = write_jsonl(tmp_path / "in.jsonl", many_rows(n))
    run_dir = tmp_path / "run"
    args = [*CLI, "eval", str(src), "--judges", "lexical,labels", "--out", str(run_dir), "--engine", "ray",
            "--batch-size", "1", "--num-workers", "1"]
    err = tmp_path / "driver.stderr"  # a file, not a pipe nobody drains: Ray's logging could fill one and stall it
    with open(err, "wb") as err_fh:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err_fh, start_new_session=True)
    results = run_dir / "results.jsonl"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and results.read_bytes().count(b"\n") >= 5:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the run ended before it could be killed: {err.read_text()[-1500:]!r}"
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and everything it started (its private Ray runtime)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    first = results.read_bytes().count(b"\n")  # complete lines (a torn last one is dropped and redone)
    assert 0 < first < n
    rerun = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"({n - first} judged, {first} resumed" in rerun.stdout
    assert Counter(log_ids(run_dir)) == Counter(f"s{i:04d}" for i in range(n))
    local = flow.evaluate_file(src, tmp_path / "local", flow.Selection.of("lexical,labels"), batch_size=1,
                               progress=False)
    assert verdicts(RunFolder(run_dir).judgements()) == verdicts(local.judgements)


# Ray 2.60's core worker logs this once per driver process (RAY_LOG_ONCE_PER_PROCESS(ERROR), core_worker.cc) for any
# actor restartable with arguments in the object store: Ray Data passes its own (the DataContext and the map function,
# ray.put) to every pool actor, so each `--engine ray` run prints it; only patching Ray (or its C++ logging, whose
# RAY_BACKEND_LOG_LEVEL prints a line of its own) would hide it
RAY_DATA_ACTOR_NOTE = re.compile(r"^\[[^\]]* E \d+ \d+\] core_worker\.cc:\d+: Actor with class name: 'MapWorker\(MapBatches\("
                                 r"JudgeWorker\)\)' and ID: '[0-9a-f]+' has constructor arguments in the object store "
                                 r"and max_restarts > 0\. .*$")


def test_a_run_that_goes_well_prints_nothing_of_rays_on_stderr(tmp_path):
    """No token-authentication note, no Ray Data progress, start or statistics lines, no workers' output, no Python
    warning from Ray's modules: stderr is for what went wrong (but the one core-worker line above)."""
    src = write_jsonl(tmp_path / "in.jsonl", many_rows(6))
    args = [*CLI, "eval", str(src), "--judges", "lexical,labels", "--out", str(tmp_path / "run"), "--engine", "ray",
            "--batch-size", "2", "--num-workers", "2"]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rest = [line for line in out.stderr.splitlines() if not RAY_DATA_ACTOR_NOTE.match(line)]
    assert rest == [], out.stderr[-2000:]
    assert len(out.stderr.splitlines()) <= 1
    assert "(6 judged, 0 resumed" in out.stdout


@contextmanager
def judges_that_cannot_load():
    raise RuntimeError("cannot build judges on this node")
    yield []  # pragma: no cover - never reached


def test_a_worker_that_cannot_build_its_judges_is_one_line_with_the_cause(ray_local, traces, tmp_path):
    from eval.ray_engine import RayEngine
    from rag.ray_runtime import WorkerFailure

    with pytest.raises(WorkerFailure) as exc:
        judged_with(RayEngine(judges_that_cannot_load), traces[:2], tmp_path / "run")
    line = str(exc.value)
    assert "\n" not in line and "\x1b" not in line
    assert line.endswith("RuntimeError: cannot build judges on this node")


def test_worker_request_counts_are_added_up_by_the_driver():
    """Each worker returns its LLM judges' cumulative counts with every batch; the driver keeps each worker's
    latest and adds them up (not the driver's own zeros: its judges never send)."""
    from eval.ray_engine import JudgeWorker
    from rag.fleet import RequestStats, merge_request_counts

    @contextmanager
    def counting(request_stats=None):
        stats = RequestStats()
        request_stats.append(stats)
        stats.started("http://a/v1")
        stats.finished("http://a/v1", None)
        yield [ScorerJudge(LexicalScorer(), config_id="lexical:v1")]

    worker = JudgeWorker(counting, ["groundedness"])
    got, _ = load_traces_rows(many_rows(2))
    import json

    import numpy as np

    out = worker({"traces": np.array([json.dumps([t.model_dump_json() for t in got])], dtype=object)})
    sent = json.loads(out["requests"][0])
    assert sent["worker"] == worker.worker and sent["counts"][0]["requests"] == sent["counts"][0]["ok"] == 1
    merged = merge_request_counts([sent["counts"][0], {**sent["counts"][0], "max_in_flight": 3}])
    assert merged["requests"] == 2 and merged["max_in_flight"] == 3
    assert merged["endpoints"]["http://a/v1"]["requests"] == 2


def load_traces_rows(rows):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        return load_traces(write_jsonl(Path(d) / "in.jsonl", rows))


@contextmanager
def one_request_judges(request_stats=None):
    """Lexical, and one request counted as its LLM client would (per worker, at build)."""
    from rag.fleet import RequestStats

    stats = RequestStats()
    stats.started("http://a/v1")
    stats.finished("http://a/v1", None)
    if request_stats is not None:
        request_stats.append(stats)
    yield [ScorerJudge(LexicalScorer(), config_id="lexical:v1")]


def test_the_driver_adds_up_the_workers_request_counts_after_a_run(ray_local, traces, tmp_path):
    from eval.ray_engine import RayEngine

    engine = RayEngine(one_request_judges, num_workers=2)
    with one_request_judges() as judges:
        evaluate(traces[:8], metrics=["groundedness"], judges=judges, run=tmp_path / "run", batch_size=2,
                 progress=False, engine=engine)
    counts = engine.request_counts
    assert counts is not None and 1 <= counts["requests"] == counts["ok"] <= 2  # one per worker that judged
    assert counts["endpoints"]["http://a/v1"]["requests"] == counts["requests"]


class CrashingLexical(SlowLexical):
    """The lexical judge, whose process dies (as out of memory or a segfault would end it) on the batch of ``held``."""

    def __init__(self, held: str):
        super().__init__(0.0, None)
        self.held = held

    def judge(self, metric, traces):
        if any(t.sample_id == self.held for t in traces):
            os._exit(3)
        return super().judge(metric, traces)


@contextmanager
def crashing_judges(held: str = ""):
    yield [CrashingLexical(held), LabelsJudge()]


def test_a_batch_that_kills_its_worker_is_unmeasured_with_the_cause_and_the_rest_judged(ray_local, traces,
                                                                                           tmp_path):
    """Ray retries the batch on fresh workers, which die too: its samples are then judged one at a time, and only
    the one that kills a worker alone is unmeasured with the cause (a judge failure: a rerun judges it again); every
    other sample, the one batched with it included, is judged as locally. Before, the whole run stopped there, and
    every rerun stopped at the same batch: the evaluation could never finish; then the sample batched with the one
    that kills its worker was unmeasured on every rerun (a rerun batches them together again)."""
    from eval.ray_engine import RayEngine

    held, run_dir = traces[3].sample_id, tmp_path / "ray"
    build = functools.partial(crashing_judges, held=held)
    with crashing_judges() as judges:
        got = evaluate(traces[:8], metrics=METRICS, judges=judges, run=run_dir, batch_size=2, progress=False,
                       engine=RayEngine(build, num_workers=2))
    assert got.new == 8 and Counter(log_ids(run_dir)) == Counter(t.sample_id for t in traces[:8])
    failed = {j.sample_id for j in got.judgements if judge_failed(j)}
    assert failed == {held}  # not traces[2], the other sample of its batch of two
    for j in got.judgements:
        for r in j.results:
            if j.sample_id in failed and r.status == "unmeasured" and r.judge == "lexical":
                assert r.reason.startswith("judge failed: WorkerFailure: a Ray worker failed on this batch: "), r
                assert r.reason.endswith("its worker process died (killed, out of memory or crashed: the Ray "
                                         "session's logs say which)"), r.reason
    local = judged_with(None, traces[:8], tmp_path / "local")
    assert {k: v for k, v in verdicts(got.judgements).items() if k not in failed} == \
        {k: v for k, v in verdicts(local.judgements).items() if k not in failed}
    again = judged_with(RayEngine(slow_judges), traces[:8], run_dir)  # the failed batch is judged again
    assert (again.new, again.resumed, again.retried) == (1, 7, 1)
    assert verdicts(again.judgements) == verdicts(local.judgements)


def test_the_batches_no_worker_judged_name_every_cause(traces):
    from eval.ray_engine import RayEngine, failed_batches_allowed

    with slow_judges() as judges:
        got = [j for b in RayEngine._unjudged([traces[:2], traces[2:4], traces[4:6]], {t.sample_id for t in traces[:2]},
                                              ["ValueError: a", "ValueError: b", "ValueError: a"], METRICS, judges)
               for j in b]
    assert [j.sample_id for j in got] == [t.sample_id for t in traces[2:6]]
    assert {judge_failed(j) for j in got} == {"judge failed: WorkerFailure: 2 batches failed on Ray workers, for: "
                                            "ValueError: a | ValueError: b"}
    assert failed_batches_allowed(10) == 3 and failed_batches_allowed(10_000) == 100


def _live_in_group(pgid: int) -> list[str]:
    """The processes of process group ``pgid`` that still run (zombies waiting to be reaped left out)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        state, _, group = text[text.rindex(")") + 2 :].split()[:3]
        if int(group) == pgid and state != "Z":
            live.append(text[: text.rindex(")") + 1])
    return live


def _group_gone(pgid: int, within: float = 20.0) -> list[str]:
    """[] once nothing of the group runs (within ``within`` seconds), else what still does."""
    deadline = time.monotonic() + within
    while (live := _live_in_group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return live


def test_sigterm_mid_run_stops_as_ctrl_c_does_and_a_rerun_resumes(tmp_path):
    """SIGTERM (a supervisor, `kill`) to the driver: before, Ray's handler printed a crash report and exited 15; now
    the run stops as Ctrl+C does (one line, exit 130), the private Ray runtime is shut down (nothing of the driver's
    process group is left) and a rerun resumes without loss or duplicates."""
    n = 200
    src = write_jsonl(tmp_path / "in.jsonl", many_rows(n))
    run_dir = tmp_path / "run"
    args = [*CLI, "eval", str(src), "--judges", "lexical,labels", "--out", str(run_dir), "--batch-size", "1"]
    err = tmp_path / "driver.stderr"
    with open(err, "wb") as err_fh:
        proc = subprocess.Popen([*args, "--engine", "ray"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err_fh,
                                start_new_session=True)
    results = run_dir / "results.jsonl"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and results.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the run ended before it could be stopped: {err.read_text()[-1500:]!r}"
        proc.send_signal(signal.SIGTERM)  # the driver alone, as `kill PID` does
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    said = err.read_text()
    assert rc == 130, said[-2000:]
    assert "ragdoctor: interrupted; completed records are saved and a rerun resumes" in said
    assert "SIGTERM received" not in said and "Traceback" not in said, said[-2000:]
    assert _group_gone(proc.pid) == [], "Ray's processes outlived the driver"
    first = len(complete_lines(results))
    assert 0 < first < n
    rerun = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)  # local: resumes Ray's records
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"({n - first} judged, {first} resumed" in rerun.stdout
    assert Counter(log_ids(run_dir)) == Counter(f"s{i:04d}" for i in range(n))


def _within(seconds: float, fn):
    """fn() in a thread: its result, its exception, or a failure when it is still running after ``seconds`` (a hang
    would otherwise hold the test run)."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:g} s: a hang"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.parametrize("allowed, restarts", [(1, None), (5, 3)])
def test_workers_that_die_on_every_batch_stop_the_run_in_one_line(ray_local, traces, tmp_path, monkeypatch, allowed,
                                                                  restarts):
    """Past the batches a run may drop, or once an actor's restarts are used up (Ray Data would wait for that actor
    for ever: the pool of one would hang), the run stops with one line; what was delivered is saved."""
    from eval import ray_engine
    from rag.ray_runtime import WorkerFailure

    monkeypatch.setattr(ray_engine, "failed_batches_allowed", lambda n: allowed)
    if restarts is not None:
        monkeypatch.setattr(ray_engine, "POOL_RESTARTS", restarts)
    engine = ray_engine.RayEngine(all_crashing_judges, num_workers=1)
    with pytest.raises(WorkerFailure, match=r"^a Ray worker could not judge \(the judgements made so far are saved; "
                                            r"a rerun resumes\): its worker process died"):
        with slow_judges() as judges:
            _within(150, lambda: evaluate(traces[:4], metrics=["groundedness"], judges=judges, run=tmp_path / "run",
                                          batch_size=1, progress=False, engine=engine))


class AllCrashingLexical(SlowLexical):
    def __init__(self):
        super().__init__(0.0, None)

    def judge(self, metric, traces):
        os._exit(3)


@contextmanager
def all_crashing_judges():
    yield [AllCrashingLexical(), LabelsJudge()]
