"""`ragdoctor` command line: a thin front door; every command calls into the library.

Exit status means one thing each: 0 success, 1 the gate's quality verdict failed (only ``gate``), 2 a usage or input
error (printed as one line, ``ragdoctor: error: ...``), 3 an internal error (a bug: one line too, ``--debug`` shows
the traceback), 130 interrupted. Skipped input records and warnings are printed once each on stderr."""
from __future__ import annotations

import argparse
import errno
import logging
import os
import re
import sys
import traceback

from corpora.errors import NOTICES, InputError
from eval.judges.base import JudgeUnavailable
from judge_train import cli as cmd_judge
from rag.llm import LLMError
from rag.manifest import IndexMismatch
from rag.models import ModelUnavailable
from rag.offline import set_offline_env
from rag.ray_runtime import WorkerFailure
from ragdoctor import (
    __version__,
    cmd_dashboard,
    cmd_demo,
    cmd_diagnose,
    cmd_eval,
    cmd_import,
    cmd_index_lab,
    cmd_labels,
    cmd_meta_eval,
    cmd_pipeline,
    cmd_retrieval_lab,
)
from ragdoctor.options import all_parsers, checked_numbers, once_only, pipeline_options

set_offline_env()
EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors in the project's shape (exit 2)."""

    def error(self, message: str):  # type: ignore[override]
        command = self.prog.partition(" ")[2]
        print(f"ragdoctor: error: {command + ': ' if command else ''}{message} (see `{self.prog} --help`)",
              file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="ragdoctor", description="Offline RAG pipeline, evaluation and diagnostics.")
    parser.add_argument("--version", action="version", version=f"ragdoctor {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error")
    sub = parser.add_subparsers(dest="command", required=True)
    for register in (cmd_pipeline.register, cmd_eval.register, cmd_diagnose.register, cmd_meta_eval.register,
                     cmd_demo.register, cmd_dashboard.register, cmd_labels.register, cmd_import.register,
                     cmd_judge.register, cmd_index_lab.register, cmd_retrieval_lab.register):
        register(sub, pipeline_options)
    for p in list(all_parsers(parser))[1:]:  # --debug after the command works too
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for p in all_parsers(parser):  # `gate --max 0.5` is no flag, not --max-unmeasured guessed from a prefix
        p.allow_abbrev = False
    return once_only(checked_numbers(parser))


class _Notices(logging.Handler):
    """Prints each distinct skipped-record line and warning once, on stderr."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg not in self.seen:
            self.seen.add(msg)
            print(f"ragdoctor: {msg}", file=sys.stderr)


def _install_notices() -> _Notices:
    for h in list(NOTICES.handlers):
        if isinstance(h, _Notices):
            NOTICES.removeHandler(h)
    handler = _Notices()
    NOTICES.addHandler(handler)
    NOTICES.propagate = False
    return handler


KNOWN_ERRORS = (InputError, IndexMismatch, JudgeUnavailable, LLMError, ModelUnavailable, WorkerFailure)  # exit 2


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _os_error(exc: OSError) -> str:
    """An OSError as one line naming its file(s): ``path: No space left on device``; a link loop says so."""
    names = [os.fsdecode(n) if isinstance(n, bytes) else str(n) for n in (exc.filename, exc.filename2)
             if n not in (None, "")]
    what = "is a symbolic link loop: its links point at each other; give a real path" if exc.errno == errno.ELOOP \
        else exc.strerror or _first_line(exc)
    return f"{' -> '.join(names) + ': ' if names else ''}{what}"


def _internal(exc: BaseException, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"ragdoctor: internal error: {type(exc).__name__}: {_first_line(exc)}; rerun with --debug for the "
          "traceback", file=sys.stderr)
    return EXIT_INTERNAL


# Path.resolve() on a symbolic link loop (Python < 3.13): a path the user gave, not a bug in the tool
_LOOP = re.compile(r"^Symlink loop from (.+)$")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the command that does not take them, with its own --help
        words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
        command = max((p for p in all_parsers(parser) if p.prog.split()[1:] == words[:len(p.prog.split()) - 1]),
                      key=lambda p: len(p.prog.split()))
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    debug = bool(getattr(args, "debug", False))
    _install_notices()
    for stream in (sys.stdout, sys.stderr):  # a path with bytes that are not UTF-8 (from a shell) is printed escaped,
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):  # never a crash after work
            stream.reconfigure(errors="backslashreplace")
    try:
        code = int(args.func(args) or 0)
    except KNOWN_ERRORS as exc:
        print(f"ragdoctor: error: {_first_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        said = ("a judge folder it was writing stays marked unfinished; a rerun starts the command again"
                if getattr(args, "command", None) == "judge" else "completed records are saved and a rerun resumes")
        print(f"ragdoctor: interrupted; {said}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # the file system said no (a path the user gave, a full disk): not a bug in the tool
        print(f"ragdoctor: error: {_os_error(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as exc:
        if (loop := _LOOP.match(_first_line(exc))) is None:
            return _internal(exc, debug)
        print(f"ragdoctor: error: {loop.group(1).strip(chr(39))}: is a symbolic link loop: its links point at each "
              "other; give a real path", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a bug: one line, its own exit status, never the gate's 1
        return _internal(exc, debug)
    if code == EXIT_GATE_FAILED and args.command != "gate":  # only the gate's quality verdict may exit 1
        return EXIT_INTERNAL
    return code


if __name__ == "__main__":
    sys.exit(main())
