"""Paths a user types, checked before anything is read or written: an input must be a readable file, and a command
writes only into a folder that is new, empty, or one this project wrote (it never overwrites what it did not create)."""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from corpora.errors import InputError

# shared/data beside the checkout (human-labelled dev sets, the judge training pool in train/): found from the
# repository, never from the current folder
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def input_file(path: str | Path) -> Path:
    """``path`` as a readable file, else InputError (missing, a folder, unreadable)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise InputError(path, "file not found")
    if path.is_dir():
        raise InputError(path, "is a folder, not a file")
    if not os.access(path, os.R_OK):
        raise InputError(path, "permission denied")
    return path


def _parent_ok(path: Path) -> None:
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(parent, "is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise InputError(parent, "permission denied (cannot write here)")
            return


def output_folder(path: str | Path, *, markers: Iterable[str], what: str = "run folder") -> Path:
    """A folder this command may write into: absent (created later), empty, or holding one of ``markers`` (files this
    project writes). Anything else is refused, so a mistyped ``--out`` never overwrites a user's own files."""
    path = Path(path).expanduser()
    if path.exists():
        if not path.is_dir():
            raise InputError(path, f"exists and is not a folder (expected a {what})")
        markers = tuple(markers)
        if any(path.iterdir()) and not any((path / m).exists() for m in markers):
            raise InputError(path, f"is not empty and is not a ragdoctor {what} (none of {', '.join(markers)}): "
                                   "refusing to write into it; choose a new or empty folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(path, "permission denied (cannot write here)")
    else:
        _parent_ok(path)
    return path


def output_file(path: str | Path, *, what: str = "output file", signature: str | None = None) -> Path:
    """A file this command may create or replace: not a folder, its parent a folder (created later when missing).
    ``signature``: for a file that is replaced whole (a report), text its own kind of file holds near its start: an
    existing non-empty file without it is not one this command wrote (a run's results log, a user's file) and is
    refused, never overwritten. Logs a command appends to pass no signature."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise InputError(path, f"is a folder (expected a path for the {what})")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(path, "permission denied")
    if signature is not None and path.is_file() and path.stat().st_size:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", errors="replace")
        if signature not in head:
            raise InputError(path, f"exists and is not a ragdoctor {what}: refusing to replace it; choose a new "
                                   "path")
    _parent_ok(path)
    return path
