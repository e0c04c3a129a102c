"""`ragdoctor` command line: a thin front door; every command calls into the library.
Domain errors are printed as one line (``ragdoctor: error: ...``) with exit status 2."""
from __future__ import annotations

import argparse
import sys

from rag.offline import set_offline_env

set_offline_env()


def _pipeline_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("pipeline (override the config file and RAGDOCTOR_* variables)")
    g.add_argument("--config", help="TOML file with a [pipeline] table (see README)")
    g.add_argument("--corpus", help="'bundled', a JSONL file, a BEIR folder or a folder of .txt/.md")
    g.add_argument("--index-dir", help="where the index lives (default .ragdoctor/index)")
    g.add_argument("--embedder", help="'minilm' (bundled), 'fake', or a sentence-transformers folder")
    g.add_argument("--kind", choices=["flat", "ivf", "hnsw", "ivfpq", "sq8"], help="faiss index kind")
    g.add_argument("--mode", choices=["dense", "bm25", "hybrid"], help="retrieval mode")
    g.add_argument("--top-k", type=int, help="chunks given to the generator")
    g.add_argument("--base-url", help="OpenAI-compatible server (NIM, vLLM, Ollama, OpenAI); default: bundled model")
    g.add_argument("--model", help="bundled GGUF name/path, or the server's model name")
    g.add_argument("--guardrails", action=argparse.BooleanOptionalAction, default=None,
                   help="run the pipeline inside NeMo Guardrails (input, retrieval and fact-checking output rails)")


def config_from_args(args: argparse.Namespace):
    from rag.config import load_config, set_path

    over: dict = {}
    for dotted, value in [("corpus", args.corpus), ("index_dir", args.index_dir), ("embedding.model", args.embedder),
                          ("index.kind", args.kind), ("retrieval.mode", args.mode), ("retrieval.top_k", args.top_k),
                          ("generation.base_url", args.base_url), ("generation.model", args.model),
                          ("questions", getattr(args, "questions", None)),
                          ("guardrails.enabled", getattr(args, "guardrails", None))]:
        set_path(over, dotted, value)
    return load_config(args.config, over)


def build_parser() -> argparse.ArgumentParser:
    from ragdoctor import __version__, cmd_dashboard, cmd_demo, cmd_diagnose, cmd_eval, cmd_meta_eval, cmd_pipeline

    parser = argparse.ArgumentParser(prog="ragdoctor", description="Offline RAG pipeline, evaluation and diagnostics.")
    parser.add_argument("--version", action="version", version=f"ragdoctor {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    from judge_train import cli as cmd_judge

    for register in (cmd_pipeline.register, cmd_eval.register, cmd_diagnose.register, cmd_meta_eval.register,
                     cmd_demo.register, cmd_dashboard.register, cmd_judge.register):
        register(sub, _pipeline_options)
    return parser


def _known_errors() -> tuple[type[BaseException], ...]:
    from corpora.errors import InputError
    from rag.manifest import IndexMismatch

    errors: list[type[BaseException]] = [InputError, IndexMismatch]
    try:
        from rag.llm import LLMError
        from rag.models import ModelUnavailable

        errors += [LLMError, ModelUnavailable]
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except _known_errors() as exc:
        print(f"ragdoctor: error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ragdoctor: interrupted; completed records are saved and a rerun resumes", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
