"""The evaluation runner: score samples with (metric, judge) pairs in batches, append each sample's Judgement to
``results.jsonl`` as soon as its batch is done, then write ``results.parquet`` and ``summary.json``.

Kill it at any point and rerun: samples already judged with the same metrics and judges are not judged again."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from corpora.errors import InputError
from corpora.jsonl import append_json_line, read_json_lines_tolerant, repair_torn_tail
from eval.records import EvalSample, Judgement, MetricResult
from eval.summary import results_frame, summarize

MAX_ANSWER_CHARS = 20_000
MAX_CONTEXT_CHARS = 200_000


@dataclass
class EvalRun:
    run_dir: Path
    judgements: list[Judgement]
    summary: dict
    new: int
    resumed: int
    input_errors: list[str]


# Bump when what a metric means changes (claim splitting, premises, rules): older results are then judged again
# instead of being resumed.
METRICS_VERSION = 3  # 3: correctness premises are question-led windows, never the question alone


def eval_hash(metrics: list[str], judges: list) -> str:
    key = {"metrics": sorted(metrics), "judges": sorted(getattr(j, "config_id", j.name) for j in judges),
           "version": METRICS_VERSION}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def precheck(sample: EvalSample, metric: str, judge_name: str) -> MetricResult | None:
    """Inputs no judge should be asked about: failed generations and oversized texts become unmeasured here."""
    if sample.outcome == "error":
        return MetricResult.unmeasured(metric, judge_name, f"pipeline error: {sample.metadata.get('error', 'unknown')}")
    if len(sample.answer) > MAX_ANSWER_CHARS:
        return MetricResult.unmeasured(metric, judge_name,
                                       f"answer too long to judge ({len(sample.answer):,} > {MAX_ANSWER_CHARS:,} chars)")
    if sum(len(c.text) for c in sample.contexts) > MAX_CONTEXT_CHARS:
        return MetricResult.unmeasured(metric, judge_name, f"contexts too long to judge (> {MAX_CONTEXT_CHARS:,} chars)")
    return None


def judge_batch(samples: list[EvalSample], metrics: list[str], judges: list) -> list[Judgement]:
    per_sample: list[list[MetricResult]] = [[] for _ in samples]
    for judge in judges:
        for metric in metrics:
            if not judge.supports(metric):
                continue
            pre = [precheck(s, metric, judge.name) for s in samples]
            idx = [i for i, p in enumerate(pre) if p is None]
            t = time.perf_counter()
            try:
                got = judge.judge(metric, [samples[i] for i in idx]) if idx else []
                if len(got) != len(idx):
                    raise RuntimeError(f"judge returned {len(got)} results for {len(idx)} samples")
            except Exception as exc:  # a judge failure is data, not a crash of the run
                reason = f"judge failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
                got = [MetricResult.unmeasured(metric, judge.name, reason) for _ in idx]
            per_item = (time.perf_counter() - t) / max(1, len(idx))
            for i, r in zip(idx, got):
                pre[i] = r.model_copy(update={"seconds": round(per_item, 4)})
            for i, r in enumerate(pre):
                per_sample[i].append(r)  # type: ignore[arg-type]
    return [Judgement(sample_id=s.id, results=r, sample=s) for s, r in zip(samples, per_sample)]


def read_judgements(run_dir: str | Path) -> list[Judgement]:
    latest: dict[str, Judgement] = {}
    for obj in read_json_lines_tolerant(Path(run_dir) / "results.jsonl"):
        j = Judgement.model_validate(obj)
        latest[j.sample_id] = j
    return list(latest.values())


def evaluate(samples: list[EvalSample], *, metrics: list[str], judges: list, run_dir: str | Path,
             batch_size: int = 16, input_errors: list[InputError] | None = None, source: str | None = None,
             progress: bool = True) -> EvalRun:
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    h = eval_hash(metrics, judges)
    log = run_dir / "results.jsonl"
    repair_torn_tail(log)
    done = {j.sample_id: j for j in read_judgements(run_dir) if j.eval_hash == h}
    config = {"metrics": metrics, "judges": [getattr(j, "config_id", j.name) for j in judges], "eval_hash": h,
              "source": source, "n_samples": len(samples), "batch_size": batch_size,
              "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    (run_dir / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    errors = [str(e) for e in (input_errors or [])]
    (run_dir / "input_errors.txt").write_text("".join(e + "\n" for e in errors), encoding="utf-8")
    todo = [s for s in samples if s.id not in done]
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc="judging", unit="sample", leave=False)
    new: dict[str, Judgement] = {}
    for start in range(0, len(todo), batch_size):
        for j in judge_batch(todo[start : start + batch_size], metrics, judges):
            j.eval_hash = h
            append_json_line(log, j)
            new[j.sample_id] = j
        if bar:
            bar.update(min(batch_size, len(todo) - start))
    if bar:
        bar.close()
    judgements = [new.get(s.id) or done[s.id] for s in samples]
    return EvalRun(run_dir, judgements, write_outputs(run_dir, judgements, errors), len(new), len(samples) - len(todo),
                   errors)


def write_outputs(run_dir: Path, judgements: list[Judgement], input_errors: list[str]) -> dict:
    results_frame(judgements).to_parquet(run_dir / "results.parquet", index=False)
    summary = summarize(judgements)
    summary["input_errors"] = input_errors
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary
