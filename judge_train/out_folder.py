"""The folder a judge command writes (``judge train``, ``combine``, ``refit``, ``interpolate``, the device unpack):
each replaces its ``--out`` whole, so it is checked before any work is done.

It must be new, empty, or a folder these commands wrote (one of ``MARKERS`` at its top: corpora.paths.output_folder),
so a mistyped ``--out`` (a home folder, a project, a model downloaded by hand) is refused, never deleted. And it must
not be one of the command's inputs, hold one (replacing it would delete the input before it is read), or lie inside
one (the model or pool would be changed under the files that record it)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from corpora.errors import UsageError
from corpora.paths import output_folder

# what every folder these commands write holds at its top: a stage's recipe record, a judge folder's package record
MARKERS = ("training_config.json", "package.json")


def replaceable_out(out: str | Path, inputs: Iterable[str | Path | None] = (), *, what: str = "judge folder") -> Path:
    """``out`` as a folder this command may replace; InputError or UsageError (one line, exit 2) when it may not.
    ``inputs``: the folders and files the command reads (None entries: options not given)."""
    target = Path(out).resolve()
    for given in inputs:
        if given is None or str(given) == "":
            continue
        src = Path(given).resolve()
        if target == src or target in src.parents:
            raise UsageError(f"--out {out} would be replaced before its input {given} is read: choose another folder")
        if src in target.parents:
            raise UsageError(f"--out {out} lies inside the input {given}: choose a folder outside it")
    return output_folder(out, markers=MARKERS, what=what)
