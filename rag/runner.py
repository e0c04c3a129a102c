"""Run a question set through the pipeline, appending each Trace to a JSONL file as it completes.

A killed run resumes: a question already traced with the same pipeline configuration, the same index content and
the same question record (question, reference, labels, metadata) is not asked again; an edited question, a changed
config or a changed corpus is. The later trace of a sample supersedes the earlier (readers take the latest)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from corpora.errors import InputError
from corpora.jsonl import append_json_line, read_log, repair_torn_tail
from corpora.paths import output_file
from corpora.records import Sample
from rag.trace import Trace


@dataclass
class RunResult:
    traces: list[Trace]
    new: int
    resumed: int
    path: Path


def input_hash(sample: Sample, salt: str = "") -> str:
    """Hash of the question record and ``salt`` (the index's corpus checksum): what a trace was answered from."""
    data = json.dumps([sample.model_dump(mode="json"), salt], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def _legacy_match(t: Trace, s: Sample) -> bool:
    """A trace written before traces carried ``input_hash``: reused when it records the same question record."""
    return not t.input_hash and (t.question, t.reference, t.relevant_doc_ids, t.metadata) == \
        (s.question, s.reference, s.relevant_doc_ids, s.metadata)


def read_traces(path: str | Path) -> list[Trace]:
    """Traces from a run log; when a sample appears twice the later record wins."""
    return list({t.sample_id: t for t in read_log(path, Trace, what="traces log")}.values())


def run_samples(answer: Callable[[Sample], Trace], samples: Iterable[Sample], out_path: str | Path, *,
                config_hash: str, progress: bool = True, salt: str = "") -> RunResult:
    out_path = output_file(out_path, what="traces log")
    samples = list(samples)
    if len({s.id for s in samples}) != len(samples):
        raise InputError(out_path, "two questions share an id: every question needs its own id", field="id")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    repair_torn_tail(out_path)
    keys = {s.id: input_hash(s, salt) for s in samples}
    by_id = {s.id: s for s in samples}
    # only a sample's latest trace may be reused: it is the one every reader of the log takes
    done = {t.sample_id: t for t in read_traces(out_path) if t.sample_id in by_id and t.config_hash == config_hash
            and t.outcome != "error" and (t.input_hash == keys[t.sample_id] or _legacy_match(t, by_id[t.sample_id]))}
    todo = [s for s in samples if s.id not in done]
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc="answering", unit="q", leave=False, disable=None)
    new: dict[str, Trace] = {}
    for sample in todo:
        trace = answer(sample)
        trace.input_hash = keys[sample.id]
        append_json_line(out_path, trace)
        new[sample.id] = trace
        if bar:
            bar.update(1)
    if bar:
        bar.close()
    ordered = [new.get(s.id) or done[s.id] for s in samples]
    return RunResult(ordered, len(new), len(samples) - len(todo), out_path)
