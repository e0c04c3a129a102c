"""The eval run folder's log, ``results.jsonl``: one Judgement per line, appended as each batch finishes.

A judgement is keyed by (sample id, eval hash, sample hash): the eval hash covers the metrics, the judges and their
configuration and the metric logic's version; the sample hash covers everything in the record (question, contexts,
answer, reference, labels, outcome, metadata). A resume reuses a judgement only when all three match, so an edited
record or a changed configuration is judged again; the new line supersedes the old one, which stays in the log.
``config.json`` names the run's current samples and their hashes; readers take, per sample, the latest line that
matches them (or, for logs written before it did, the latest line of the sample)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from corpora.errors import InputError
from corpora.jsonl import read_log
from corpora.paths import output_folder
from eval.records import EvalSample, Judgement

LOG = "results.jsonl"
CONFIG = "config.json"
RUN_MARKERS = (LOG, "traces.jsonl")  # a folder holding one of these is a ragdoctor run folder
WRITTEN = (CONFIG, "summary.json", "results.parquet", "warnings.txt")  # what an eval (re)writes as a whole


def eval_folder(run_dir: str | Path) -> Path:
    """The folder an eval may write into (corpora.paths.output_folder), and never over a config.json, summary.json,
    results.parquet or warnings.txt that an eval did not write: a folder that only holds a traces.jsonl (possibly a
    user's own export of that name) must not have them."""
    run_dir = output_folder(run_dir, markers=RUN_MARKERS)
    if (run_dir / LOG).exists() or current_keys(run_dir) is not None:
        return run_dir
    clash = [name for name in WRITTEN if (run_dir / name).exists()]
    if clash:
        raise InputError(run_dir / clash[0], "exists and was not written by `ragdoctor eval`: refusing to overwrite "
                                             "it; pass --out with a new folder")
    return run_dir


def sample_hash(s: EvalSample) -> str:
    """Content hash of everything a judge or the diagnostics read from the sample."""
    data = json.dumps(s.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def read_log_lines(run_dir: str | Path) -> list[Judgement]:
    return read_log(Path(run_dir) / LOG, Judgement, what="results log")


def resumable(lines: list[Judgement]) -> dict[tuple[str, str, str], Judgement]:
    """The latest judgement per (sample id, eval hash, sample hash)."""
    return {(j.sample_id, j.eval_hash, j.sample_hash): j for j in lines}


def current_keys(run_dir: str | Path) -> tuple[str, dict[str, str]] | None:
    """(eval hash, {sample id: sample hash}) of the run's current samples, from config.json; None when unknown."""
    path = Path(run_dir) / CONFIG
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("samples"), dict) or not cfg.get("eval_hash"):
        return None
    return cfg["eval_hash"], {str(k): str(v) for k, v in cfg["samples"].items()}


def read_judgements(run_dir: str | Path) -> list[Judgement]:
    """The run's current judgements: per current sample the latest line judged with the run's configuration on the
    sample's current content (samples not judged yet are left out). Without config.json: the latest line per id."""
    lines = read_log_lines(run_dir)
    keys = current_keys(run_dir)
    if keys is None:
        return list({j.sample_id: j for j in lines}.values())
    h, samples = keys
    index = resumable(lines)
    return [index[(sid, h, sh)] for sid, sh in samples.items() if (sid, h, sh) in index]


def run_key(eval_hash: str, samples: dict[str, str]) -> str:
    """One hash of what a run judges: its configuration and every current sample's content. config.json and
    summary.json both carry it, so a summary left by an earlier, different evaluation is never read as current."""
    data = json.dumps([eval_hash, sorted(samples.items())], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def write_config(run_dir: Path, config: dict, samples: list[EvalSample], hashes: list[str]) -> str:
    current = {s.id: sh for s, sh in zip(samples, hashes)}
    key = run_key(config["eval_hash"], current)
    config = {**config, "run_key": key, "samples": current}
    tmp = run_dir / (CONFIG + ".tmp")
    tmp.write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(run_dir / CONFIG)
    return key
