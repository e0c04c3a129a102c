"""The wall time of each phase of `make demo` on a clean clone: git clone of this repository's HEAD into a temporary
folder, `make install` (a fresh venv), then `make demo` with an empty ragdoctor cache (no embeddings, no joined GGUF
from earlier runs: what a newcomer's first run pays; pip's own download cache is left as it is).

The demo's phases are read from its own output: each line it prints is time-stamped as it arrives, and the
"== i/5 ... ==" headers it prints between phases are the boundaries (index; answer, which includes starting the bundled
model; evaluate; gate; diagnose). Per-question latency (p50/p95 of each trace's total) comes from the run folder's
traces.jsonl. Prints a table and writes JSON.

    .venv/bin/python bench/demo_phases.py [--repo .] [--keep] [--out bench/results/demo_phases.json]
    .venv/bin/python bench/demo_phases.py --reuse-venv .venv --demo-args="--limit 2"   # checks the script only:
        # no install, this venv's code (not the clone's), so not a clean-clone measurement"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HEADER = re.compile(r"^== (\d)/5 (\w+)")
PHASES = {"1": "index", "2": "answer", "3": "evaluate", "4": "gate", "5": "diagnose"}
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "RAGAS_DO_NOT_TRACK": "true",
           "NEMO_GUARDRAILS_NO_USAGE_STATS": "1", "OMP_WAIT_POLICY": "PASSIVE", "PYTHONUNBUFFERED": "1"}


def timed(cmd: list[str], cwd: Path, env: dict, log: Path) -> tuple[float, int, list[tuple[float, str]]]:
    """Run ``cmd``; its seconds, exit status and stdout lines with the second each arrived (stderr to ``log``)."""
    lines: list[tuple[float, str]] = []
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.perf_counter() - start, line.rstrip("\n")))
        code = proc.wait()
    return time.perf_counter() - start, code, lines


def phase_times(lines: list[tuple[float, str]], total: float) -> dict[str, float]:
    """Seconds between the demo's phase headers; the last phase ends with the last line printed, and what follows
    until the command returns is "shutdown" (stopping the model server, the interpreter's exit)."""
    marks = [(t, PHASES[m.group(1)]) for t, text in lines if (m := HEADER.match(text)) and m.group(1) in PHASES]
    out: dict[str, float] = {}
    if not marks:
        return out
    out["start-up"] = marks[0][0]  # the interpreter, the imports and the config before the first header
    last = lines[-1][0]
    for (t, name), nxt in zip(marks, [*marks[1:], (last, "")]):
        out[name] = nxt[0] - t
    out["shutdown"] = total - last
    return out


def question_latency(run: Path) -> dict:
    path = run / "traces.jsonl"
    if not path.exists():
        return {"unmeasured": f"{path} not found"}
    totals = [json.loads(line)["latency_ms"].get("total") for line in path.read_text().splitlines() if line.strip()]
    totals = [t for t in totals if t is not None]
    if not totals:
        return {"unmeasured": "no trace recorded a total latency"}
    return {"questions": len(totals), "p50_s": float(np.percentile(totals, 50)) / 1000,
            "p95_s": float(np.percentile(totals, 95)) / 1000}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=str(ROOT), help="repository to clone (its HEAD; default: this one)")
    ap.add_argument("--keep", action="store_true", help="keep the clone (default: removed at the end)")
    ap.add_argument("--reuse-venv", help="skip `make install` and run the demo with this venv (checks the script only)")
    ap.add_argument("--demo-args", default="", help="extra `ragdoctor demo` arguments (then it is run directly, not "
                    "through make)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "demo_phases.json"))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ragdoctor-demo-phases-"))
    clone = tmp / "ragdoctor"
    env = {**os.environ, **OFFLINE, "RAGDOCTOR_CACHE": str(tmp / "cache")}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if "/.venv/" not in p + "/")
    result: dict = {"repo": args.repo, "loadavg_start": os.getloadavg(), "cpus": os.cpu_count(), "phases": {}}
    try:
        t0 = time.perf_counter()
        subprocess.run(["git", "clone", "-q", args.repo, str(clone)], check=True)
        result["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True,
                                          check=True).stdout.strip()
        result["phases"]["clone"] = time.perf_counter() - t0
        make_vars: list[str] = []
        if args.reuse_venv:
            venv = Path(args.reuse_venv).resolve()
            make_vars = [f"VENV={venv}"]
            result["reused_venv"] = str(venv)
        else:
            seconds, code, _ = timed(["make", "install"], clone, env, tmp / "install.log")
            result["phases"]["install"] = seconds
            if code != 0:
                print(f"demo_phases: make install exited {code}; see {tmp / 'install.log'}", file=sys.stderr)
                args.keep = True
                return 2
            venv = clone / ".venv"
        demo = [str(venv / "bin" / "ragdoctor"), "demo", *shlex.split(args.demo_args)] if args.demo_args \
            else ["make", "demo", *make_vars]
        seconds, code, lines = timed(demo, clone, env, tmp / "demo.log")
        (tmp / "demo.out").write_text("".join(f"{t:8.1f}  {text}\n" for t, text in lines), encoding="utf-8")
        result["demo_exit"] = code
        result["phases"]["demo"] = seconds
        result["demo_phases"] = phase_times(lines, seconds)
        result["per_question"] = question_latency(clone / "runs" / "demo")
        if code != 0:
            print(f"demo_phases: the demo exited {code}; see {tmp / 'demo.log'}", file=sys.stderr)
            args.keep = True
    finally:
        result["loadavg_end"] = os.getloadavg()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            result["kept"] = str(tmp)
    rows = [("clone", result["phases"]["clone"])]
    if "install" in result["phases"]:
        rows.append(("make install (fresh venv)", result["phases"]["install"]))
    rows += [(f"  demo: {name}", s) for name, s in result.get("demo_phases", {}).items()]
    rows.append(("demo total", result["phases"].get("demo")))
    rows.append(("clone + install + demo", sum(v for v in result["phases"].values())))
    pq = result.get("per_question", {})
    from_run = (f"per question (p50 / p95, {pq['questions']} questions): {pq['p50_s']:.1f} s / {pq['p95_s']:.1f} s"
                if "p50_s" in pq else f"per question: unmeasured ({pq.get('unmeasured', 'the demo did not run')})")
    width = max(len(r[0]) for r in rows)
    print(f"{'phase':<{width}}  {'wall s':>8}  {'min':>6}")
    print(f"{'-' * width}  {'-' * 8}  {'-' * 6}")
    for name, s in rows:
        print(f"{name:<{width}}  {s:8.1f}  {s / 60:6.1f}" if s is not None else f"{name:<{width}}  unmeasured")
    print(from_run)
    print(f"load average {result['loadavg_start'][0]:.1f} at start, {result['loadavg_end'][0]:.1f} at end, "
          f"{result['cpus']} CPUs; commit {result.get('commit', '?')[:10]}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0 if result.get("demo_exit") == 0 else 2


if __name__ == "__main__":
    sys.exit(main())
