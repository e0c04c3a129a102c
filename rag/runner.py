"""Run a question set through the pipeline, appending each Trace to a JSONL file as it completes.
A killed run resumes: samples already traced with the same pipeline config are skipped."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from corpora.jsonl import append_json_line, read_json_lines_tolerant, repair_torn_tail
from corpora.records import Sample
from rag.trace import Trace


@dataclass
class RunResult:
    traces: list[Trace]
    new: int
    resumed: int
    path: Path


def read_traces(path: str | Path) -> list[Trace]:
    """Traces from a run log; when a sample appears twice the later record wins."""
    latest: dict[str, Trace] = {}
    for obj in read_json_lines_tolerant(path):
        t = Trace.model_validate(obj)
        latest[t.sample_id] = t
    return list(latest.values())


def run_samples(answer: Callable[[Sample], Trace], samples: Iterable[Sample], out_path: str | Path, *,
                config_hash: str, progress: bool = True) -> RunResult:
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    repair_torn_tail(out_path)
    done = {t.sample_id: t for t in read_traces(out_path) if t.config_hash == config_hash and t.outcome != "error"}
    samples = list(samples)
    todo = [s for s in samples if s.id not in done]
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc="answering", unit="q", leave=False)
    new: dict[str, Trace] = {}
    for sample in todo:
        trace = answer(sample)
        append_json_line(out_path, trace)
        new[sample.id] = trace
        if bar:
            bar.update(1)
    if bar:
        bar.close()
    ordered = [new.get(s.id) or done[s.id] for s in samples]
    return RunResult(ordered, len(new), len(samples) - len(todo), out_path)
