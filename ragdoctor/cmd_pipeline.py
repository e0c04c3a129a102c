"""`ragdoctor index | ask | run`: build the index, answer one question, answer a question set into traces."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from corpora.errors import UsageError
from corpora.records import question_problem
from corpora.run_folder import TRACES, RunFolder
from rag.config import PipelineConfig
from rag.fleet import render_requests
from ragdoctor.options import config_from_args
from ragdoctor.run_report import render_summary

if TYPE_CHECKING:
    from corpora.records import Trace
    from rag.store import IndexStore


def render_index(store: IndexStore, built: bool) -> str:
    m = store.manifest
    verb = "built" if built else "up to date:"
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in store.build_seconds.items())
    return (f"index {verb} {store.index_dir}: {m.n_documents} documents, {m.n_chunks} chunks, {m.factory} "
            f"({m.dim}-d, {m.embedder_id}{', ' + m.embedding_backend if m.embedding_backend != 'torch' else ''}) "
            f"on {store.device}{'; ' + timing if timing else ''}")


def checked_config(args: argparse.Namespace) -> PipelineConfig:
    """The pipeline configuration, its index folder's name checked before any work (rag.index_dir.check_index_name)."""
    from rag.index_dir import check_index_name  # noqa: PLC0415 - lazy: see cmd_index

    cfg = config_from_args(args)
    check_index_name(cfg.index_dir, on_disk=cfg.index.on_disk)
    return cfg


def cmd_index(args: argparse.Namespace) -> int:
    from ragdoctor import flow  # noqa: PLC0415 - lazy in every command: the library loads when one runs
    from ragdoctor.cmd_eval import ray_options  # noqa: PLC0415 - the same --engine ray flags as `eval`

    cfg = checked_config(args)
    if args.refine is not None and cfg.index.kind != "ivfpq":
        raise UsageError(f"index: --refine applies to --kind ivfpq (the index kind is {cfg.index.kind})")
    print(render_index(*flow.index(cfg, rebuild=args.rebuild, engine=args.engine, ray=ray_options(args))))
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    try:
        args.question.encode("utf-8")
    except UnicodeEncodeError:  # bytes from the shell that are no UTF-8
        raise UsageError("ask: the question is not valid UTF-8 text") from None
    if (why := question_problem(args.question)) is not None:
        raise UsageError(f"ask: {why}")
    from ragdoctor import flow  # noqa: PLC0415 - lazy: see cmd_index

    with flow.pipeline(checked_config(args)) as pipe:
        trace = pipe.answer(args.question)
    if args.json:
        print(trace.model_dump_json(indent=2))
    if trace.outcome == "error":
        print(f"ragdoctor: error: generation failed: {trace.error}", file=sys.stderr)
        return 2
    if args.json:
        return 0
    print(trace.answer)
    print()
    for c in trace.chunks:
        print(f"  [{c.rank}] {c.chunk_id}  score={c.score:.3f}  {c.title}")
    print(f"  ({outcome_line(trace)})")
    return 0


def outcome_line(trace: Trace) -> str:
    """The outcome and the time of each stage that ran: a question the guardrails blocked before retrieval has no
    retrieve or generate latency (never 0 ms), and says which rail stopped it."""
    g = trace.guardrails or {}
    outcome: str = trace.outcome
    if outcome == "blocked" and g.get("blocked_by"):
        outcome += f" by the {g['blocked_by']} rail: {g.get('category') or '?'}"
    stages = [f"{k} {trace.latency_ms[k]:.0f} ms" for k in ("retrieve", "rerank", "generate") if k in trace.latency_ms]
    return outcome + ("; " + ", ".join(stages) if stages else "")


def run_name(name: str) -> str:
    """A --name is one folder under runs/: not a path."""
    if not name.strip() or name in (".", "..") or "/" in name or "\\" in name:
        raise UsageError(f"--name: {name!r} is not a folder name (no '/', not '.' or '..'); use --out for a path")
    return name


def default_run_dir(name: str | None, cfg: PipelineConfig) -> Path:
    return Path("runs") / (run_name(name) if name else f"run-{cfg.config_hash()}")


def traces_out(out: str) -> Path:
    """``run --out``: the traces file. A path that names a folder by its spelling (``newd/``, ``newd/.``) is refused
    as an existing folder is, never written as a file ``newd`` with the run's other files beside it."""
    if os.path.basename(out) in ("", ".", ".."):
        raise UsageError(f"run: --out {out} names a folder; --out is the traces file (e.g. "
                         f"{os.path.normpath(os.path.join(out, TRACES))}), or give --name for runs/NAME/{TRACES}")
    return Path(out)


def cmd_run(args: argparse.Namespace) -> int:
    if args.out and args.name:
        raise UsageError("run: give --out or --name, not both")
    if args.out:
        traces_out(args.out)  # before the configuration is read and the index opened
    from ragdoctor import flow  # noqa: PLC0415 - lazy: see cmd_index

    cfg = checked_config(args)
    out = traces_out(args.out) if args.out else default_run_dir(args.name, cfg) / TRACES
    result = flow.answer_questions(cfg, out, limit=args.limit)
    summary = flow.write_run_summary(RunFolder.of_traces(out), result.traces, result.requests)
    print(render_summary(summary))
    if result.requests is not None:
        print(render_requests(result.requests))
    print(f"\ntraces: {out} ({result.new} new, {result.resumed} resumed)")
    failed = [t for t in result.traces if t.outcome == "error"]
    if result.traces and len(failed) == len(result.traces):
        print(f"ragdoctor: error: every question failed (first: {failed[0].error}); the traces are saved in {out}",
              file=sys.stderr)
        return 2
    return 0


def register(sub, pipeline_options) -> None:
    p = sub.add_parser("index", help="build (or check) the faiss + BM25 index over a corpus")
    pipeline_options(p, "index")
    p.add_argument("--rebuild", action="store_true", help="rebuild even if the saved index is current")
    p.add_argument("--on-disk", action="store_const", const=True, default=None,
                   help="--kind ivf/ivfpq: keep the inverted lists in a file searches mmap (faiss "
                        "OnDiskInvertedLists), built shard by shard, for corpora larger than memory")
    p.add_argument("--refine", choices=("none", "sq8", "flat"),
                   help="--kind ivfpq: re-rank each search's candidates with SQ8 (default) or exact (flat) vectors, or "
                        "not at all (index.refine; PQ alone loses recall, see the index lab)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="embed in this process (default) or on Ray Data actors (pip install 'ragdoctor[ray]')")
    p.add_argument("--ray-address", metavar="auto|ray://HOST:PORT",
                   help="--engine ray: the cluster to join (default: start Ray on this machine)")
    p.add_argument("--num-workers", type=int, metavar="N", help="--engine ray: embedding actors (default 1)")
    p.add_argument("--gpus-per-worker", type=float, metavar="G", help="--engine ray: GPUs per actor (default 0)")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("ask", help="answer one question and show the retrieved chunks")
    p.add_argument("question")
    p.add_argument("--json", action="store_true", help="print the whole trace as JSON")
    pipeline_options(p)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("run", help="answer a question set; traces are appended as JSONL (a rerun resumes)")
    p.add_argument("--questions", help="question-set JSONL (default: the bundled set)")
    p.add_argument("--name", help="run folder name under runs/ (default run-<config hash>)")
    p.add_argument("--out", help="traces file (default runs/<name>/traces.jsonl)")
    p.add_argument("--limit", type=int, help="only the first N questions (N >= 1)")
    pipeline_options(p)
    p.set_defaults(func=cmd_run)
