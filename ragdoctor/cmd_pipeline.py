"""`ragdoctor index | ask | run`: build the index, answer one question, answer a question set into traces."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def _cfg(args):
    from ragdoctor.cli import config_from_args

    return config_from_args(args)


def cmd_index(args) -> int:
    from rag.session import embedder_for, open_index

    cfg = _cfg(args)
    store, built = open_index(cfg, embedder_for(cfg), rebuild=args.rebuild)
    m = store.manifest
    verb = "built" if built else "up to date:"
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in store.build_seconds.items())
    print(f"index {verb} {store.index_dir}: {m.n_documents} documents, {m.n_chunks} chunks, {m.factory} "
          f"({m.dim}-d, {m.embedder_id}) on {store.device}{'; ' + timing if timing else ''}")
    return 0


def fact_check_for(cfg, embedder=None):
    """The guardrails' output rail judge (the compact NLI judge when installed, else lexical). Built here, in the CLI
    layer, because rag/ must not import eval/."""
    if not (cfg.guardrails.enabled and cfg.guardrails.output):
        return None
    from eval.guard_adapter import make_fact_check

    return make_fact_check("auto", embedder=embedder)


def cmd_ask(args) -> int:
    from corpora.errors import UsageError
    from rag.session import open_pipeline

    if not args.question.strip():
        raise UsageError("ask: the question is blank")
    cfg = _cfg(args)
    with open_pipeline(cfg, fact_check=fact_check_for(cfg)) as pipe:
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
    for c in trace.contexts:
        print(f"  [{c.rank}] {c.chunk_id}  score={c.score:.3f}  {c.title}")
    print(f"  ({trace.outcome}; retrieve {trace.latency_ms['retrieve']:.0f} ms, generate {trace.latency_ms['generate']:.0f} ms)")
    return 0


def default_run_dir(name: str | None, cfg) -> Path:
    from ragdoctor.cmd_eval import run_name

    return Path("runs") / (run_name(name) if name else f"run-{cfg.config_hash()}")


def run_pipeline(cfg, *, out: Path, limit: int | None = None, llm=None, progress: bool = True):
    from corpora.errors import report_skipped
    from corpora.jsonl import read_log
    from rag.runner import run_samples
    from rag.session import load_samples, open_pipeline
    from rag.trace import Trace

    read_log(out, Trace, what="traces log")  # refuse a file that is not ours before building anything
    errors: list = []
    samples = load_samples(cfg, errors)[: limit or None]
    for e in errors:
        report_skipped(e)
    with open_pipeline(cfg, llm=llm, fact_check=fact_check_for(cfg)) as pipe:
        store = getattr(pipe, "store", None) or pipe.pipeline.store
        warn_unknown_labels(cfg.questions, samples, {n.metadata["doc_id"] for n in store.nodes})
        result = run_samples(lambda s: pipe.answer(s.question, s), samples, out, config_hash=pipe.config_hash,
                             progress=progress, salt=store.manifest.corpus_checksum)
    write_if_ours(out.parent / "input_errors.txt", "".join(f"{e}\n" for e in errors), ours=lambda text: True)
    return result


def warn_unknown_labels(source: str, samples, corpus_ids: set[str]) -> None:
    """Relevance labels naming documents the corpus does not hold can never be retrieved: say so, once."""
    from corpora.errors import warn

    unknown = sorted({d for s in samples for d in (s.relevant_doc_ids or []) if d not in corpus_ids})
    if unknown:
        shown = ", ".join(repr(d) for d in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
        warn(f"{source}: {len(unknown)} relevant document id(s) are not in the corpus ({shown}): retrieval can never "
             "find them, so their questions' recall is 0 until the labels or the corpus are fixed")


def write_if_ours(path: Path, text: str, *, ours) -> bool:
    """Write ``path`` unless a file is there that this project did not write (then warn and leave it)."""
    from corpora.errors import warn

    if path.exists():
        try:
            mine = path.is_file() and ours(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            mine = False
        if not mine:
            warn(f"{path} exists and was not written by ragdoctor: left as it is")
            return False
    path.write_text(text, encoding="utf-8")
    return True


def _is_run_summary(text: str) -> bool:
    data = json.loads(text)
    return isinstance(data, dict) and {"questions", "outcomes", "retrieval"} <= set(data)


def cmd_run(args) -> int:
    from corpora.errors import UsageError
    from ragdoctor.run_report import render_summary, summarize_traces

    if args.out and args.name:
        raise UsageError("run: give --out or --name, not both")
    cfg = _cfg(args)
    out = Path(args.out) if args.out else default_run_dir(args.name, cfg) / "traces.jsonl"
    result = run_pipeline(cfg, out=out, limit=args.limit)
    summary = summarize_traces(result.traces)
    write_if_ours(out.parent / "run_summary.json", json.dumps(summary, indent=2), ours=_is_run_summary)
    print(render_summary(summary))
    print(f"\ntraces: {out} ({result.new} new, {result.resumed} resumed)")
    failed = [t for t in result.traces if t.outcome == "error"]
    if result.traces and len(failed) == len(result.traces):
        print(f"ragdoctor: error: every question failed (first: {failed[0].error}); the traces are saved in {out}",
              file=sys.stderr)
        return 2
    return 0


def register(sub, pipeline_options) -> None:
    p = sub.add_parser("index", help="build (or check) the faiss + BM25 index over a corpus")
    pipeline_options(p)
    p.add_argument("--rebuild", action="store_true", help="rebuild even if the saved index is current")
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
