"""The evaluation runner: score samples with (metric, judge) pairs in batches, append each sample's Judgement to
``results.jsonl`` as soon as its batch is done, then write ``results.parquet`` and ``summary.json``.

Kill it at any point and rerun: a sample already judged with the same metrics, judges and content is not judged
again; an edited sample, or a changed configuration, is (eval/run_log.py says how the log is keyed and read)."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from corpora.errors import InputError
from corpora.jsonl import append_json_line, repair_torn_tail
from eval.records import EvalSample, Judgement, MetricResult
from eval.rules import no_contexts
from eval.run_log import LOG, eval_folder, read_judgements, read_log_lines, resumable, sample_hash, write_config
from eval.summary import results_frame, summarize

__all__ = ["EvalRun", "evaluate", "eval_hash", "judge_batch", "precheck", "read_judgements", "write_outputs"]

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
    warnings: list[str] = field(default_factory=list)


# Bump when what a metric means changes (claim splitting, premises, rules): older results are then judged again
# instead of being resumed.
METRICS_VERSION = 4  # 4: Unicode tokens, unmeasured without contexts, [] relevant ids are not "unanswerable"


def eval_hash(metrics: list[str], judges: list) -> str:
    key = {"metrics": sorted(metrics), "judges": sorted(getattr(j, "config_id", j.name) for j in judges),
           "version": METRICS_VERSION}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def precheck(sample: EvalSample, metric: str, judge_name: str) -> MetricResult | None:
    """Inputs no judge should be asked about: failed generations and oversized texts become unmeasured here."""
    if (missing := no_contexts(metric, sample, judge_name)) is not None:
        return missing
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


def evaluate(samples: list[EvalSample], *, metrics: list[str], judges: list, run_dir: str | Path,
             batch_size: int = 16, input_errors: list[InputError] | None = None, source: str | None = None,
             progress: bool = True, warnings: list[str] | None = None) -> EvalRun:
    if batch_size < 1:
        raise InputError(None, f"batch size must be at least 1, got {batch_size}", field="batch_size")
    seen: set[str] = set()
    for s in samples:
        if s.id in seen:
            raise InputError(None, f"duplicate sample id '{s.id}': every sample needs its own id", field="id")
        seen.add(s.id)
    run_dir = eval_folder(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    h = eval_hash(metrics, judges)
    log = run_dir / LOG
    repair_torn_tail(log)
    index = resumable(read_log_lines(run_dir))  # before anything is written: a foreign log is refused untouched
    hashes = [sample_hash(s) for s in samples]
    done = {s.id: index[(s.id, h, sh)] for s, sh in zip(samples, hashes) if (s.id, h, sh) in index}
    config = {"metrics": metrics, "judges": [getattr(j, "config_id", j.name) for j in judges], "eval_hash": h,
              "source": source, "n_samples": len(samples), "batch_size": batch_size,
              "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    key = write_config(run_dir, config, samples, hashes)
    errors = [str(e) for e in (input_errors or [])]
    notes = list(dict.fromkeys(warnings or []))
    (run_dir / "input_errors.txt").write_text("".join(e + "\n" for e in errors), encoding="utf-8")
    (run_dir / "warnings.txt").write_text("".join(w + "\n" for w in notes), encoding="utf-8")
    todo = [(s, sh) for s, sh in zip(samples, hashes) if s.id not in done]
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc="judging", unit="sample", leave=False, disable=None)
    new: dict[str, Judgement] = {}
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        for j, (_, sh) in zip(judge_batch([s for s, _ in chunk], metrics, judges), chunk):
            j.eval_hash, j.sample_hash = h, sh
            append_json_line(log, j)
            new[j.sample_id] = j
        if bar:
            bar.update(len(chunk))
    if bar:
        bar.close()
    judgements = [new.get(s.id) or done[s.id] for s in samples]
    summary = write_outputs(run_dir, judgements, errors, notes, run_key=key)
    return EvalRun(run_dir, judgements, summary, len(new), len(samples) - len(todo), errors, notes)


def write_outputs(run_dir: Path, judgements: list[Judgement], input_errors: list[str],
                  warnings: list[str] | None = None, run_key: str | None = None) -> dict:
    results_frame(judgements).to_parquet(run_dir / "results.parquet", index=False)
    summary = summarize(judgements)
    if run_key:
        summary["run_key"] = run_key  # the gate checks it against config.json's
    summary["input_errors"] = input_errors
    summary["warnings"] = list(warnings or [])
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary
