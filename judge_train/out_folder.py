"""The folder a judge command writes (``judge train``, ``combine``, ``refit``, ``interpolate``, the device unpack):
each replaces its ``--out`` whole, so it is checked before any work is done.

It must be new, empty, or a folder these commands wrote (one of ``MARKERS`` at its top: corpora.paths.output_folder),
so a mistyped ``--out`` (a home folder, a project, a model downloaded by hand) is refused, never deleted. And it must
not be one of the command's inputs, hold one (replacing it would delete the input before it is read), or lie inside
one (the model or pool would be changed under the files that record it)."""
from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from corpora.errors import UsageError
from corpora.paths import output_folder
from corpora.paths import UNFINISHED, refuse_symlink_loop, resolved

# UNFINISHED (corpora.paths) is written first and removed last: a folder a judge command stopped writing (killed, or
# failed on its input) is still one it may replace on the rerun, and no reader takes it for a finished stage or judge;
# what every folder these commands write holds at its top: a stage's recipe record, a judge folder's package record
MARKERS = ("training_config.json", "package.json", UNFINISHED)


def fresh(out: Path) -> Path:
    """``out`` emptied (replaceable_out allowed it) and marked unfinished until ``finished``."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / UNFINISHED).write_text("a ragdoctor judge command is writing this folder, or stopped before it finished\n")
    return out


def finished(out: Path) -> None:
    (out / UNFINISHED).unlink(missing_ok=True)


def unfinished(folder: Path) -> str | None:
    """Why ``folder`` cannot be read: a judge command stopped before it finished writing it (None when it did)."""
    return f"{folder}: a judge command stopped before it finished writing it" if (folder / UNFINISHED).exists() else None


def replaceable_out(out: str | Path, inputs: Iterable[str | Path | None] = (), *, what: str = "judge folder") -> Path:
    """``out`` as a folder this command may replace; InputError or UsageError (one line, exit 2) when it may not.
    ``inputs``: the folders and files the command reads (None entries: options not given)."""
    refuse_symlink_loop(out)  # before the link check below resolves it (a loop: RuntimeError on Python 3.11)
    if Path(out).is_symlink():  # replacing it would follow the link, or fail on it with a message naming nothing
        raise UsageError(f"--out {out} is a symbolic link (to {Path(out).resolve()}): give a folder itself")
    target = resolved(out)
    for given in inputs:
        if given is None or str(given) == "":
            continue
        src = resolved(given)
        if target == src or target in src.parents:
            raise UsageError(f"--out {out} would be replaced before its input {given} is read: choose another folder")
        if src in target.parents:
            raise UsageError(f"--out {out} lies inside the input {given}: choose a folder outside it")
    return output_folder(out, markers=MARKERS, what=what)
