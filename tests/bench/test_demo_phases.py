"""bench/demo_phases.py: the phases read from the demo's time-stamped output, and the per-question latency from the
run folder's traces."""
import json

from tests.bench import load_bench


def bench():
    mod = load_bench("demo_phases")
    return mod


def test_phases_are_the_intervals_between_the_demo_headers():
    lines = [(2.0, "== 1/5 index =="), (10.0, "index built"), (12.0, "== 2/5 answer 24 of the bundled questions"),
             (100.0, "== 3/5 evaluate =="), (130.0, "== 4/5 gate (thresholds ...) =="), (131.0, "== 5/5 diagnose =="),
             (135.0, "run folder: runs/demo")]
    got = bench().phase_times(lines, 140.0)
    assert got == {"start-up": 2.0, "index": 10.0, "answer": 88.0, "evaluate": 30.0, "gate": 1.0, "diagnose": 4.0,
                   "shutdown": 5.0}
    assert sum(got.values()) == 140.0
    assert bench().phase_times([(1.0, "ragdoctor: error: ...")], 2.0) == {}


def test_question_latency_from_the_traces(tmp_path):
    mod = bench()
    assert "unmeasured" in mod.question_latency(tmp_path)
    (tmp_path / "traces.jsonl").write_text("".join(json.dumps({"latency_ms": {"total": ms}}) + "\n"
                                                   for ms in (1000, 3000, 2000)))
    got = mod.question_latency(tmp_path)
    assert got["questions"] == 3 and got["p50_s"] == 2.0
