"""`ragdoctor import`: an OpenInference span export (OTLP JSON, a Phoenix spans export) into a run folder's
traces.jsonl, one trace per root span, ready for `ragdoctor eval RUN/traces.jsonl` (corpora/openinference.py)."""
from __future__ import annotations

import argparse
from pathlib import Path


def cmd_import(args: argparse.Namespace) -> int:
    from corpora.errors import report_skipped  # noqa: PLC0415 - lazy in every command: see cmd_eval
    from corpora.openinference import import_file  # noqa: PLC0415
    from ragdoctor import flow  # noqa: PLC0415

    got = import_file(args.file, args.out)
    for e in got.errors:
        report_skipped(e)
    flow.write_run_summary(got.run, list(got.run.latest_traces().values()))
    no_retrieval = sum(t.contexts is None for t in got.traces)
    note = f"; {no_retrieval} without a retrieval span: their context metrics are unmeasured" if no_retrieval else ""
    print(f"imported {len(got.traces)} traces from {args.file} ({got.new} new, {len(got.traces) - got.new} already "
          f"there; {len(got.errors)} spans skipped{note})\ntraces: {got.run.traces.path}\n"
          f"next: ragdoctor eval {got.run.traces.path}")
    return 0


def register(sub: argparse._SubParsersAction, pipeline_options) -> None:  # noqa: ARG001 - import runs no pipeline
    p = sub.add_parser("import", help="OpenInference spans (OTLP JSON, a Phoenix export) into a run folder's traces")
    p.add_argument("file", help="an OTLP JSON export (one document, or one per line as the collector's file exporter "
                                "writes), or a Phoenix spans export (JSON lines, a JSON array or parquet)")
    p.add_argument("--out", required=True, type=Path, help="run folder: its traces.jsonl is created or appended to")
    p.set_defaults(func=cmd_import)
