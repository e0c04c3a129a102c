"""Paths a user types, checked before anything is read or written: an input must be a readable file, and a command
writes only into a folder that is new, empty, or one this project wrote (it never overwrites what it did not create)."""
from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from corpora.errors import InputError

# the mark of a folder a `ragdoctor judge` command is writing, or stopped writing (judge_train/out_folder.py writes and
# removes it): whatever it holds may be from before the command's checks, so no reader takes it for a finished one
UNFINISHED = ".unfinished"
# shared/data beside the checkout (human-labelled dev sets, the judge training pool in train/): found from the
# repository, never from the current folder
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def symlink_loop(path: str | Path) -> Path | None:
    """The first link of ``path`` (``path`` itself, or a folder on the way to it) that is a symbolic link loop, else
    None. ``Path.exists()`` says False for one and ``Path.resolve()`` raises RuntimeError (Python 3.11), so a loop
    given as a path is asked for by name before anything resolves it or is written there."""
    path = Path(path)
    for candidate in (*reversed(path.parents), path):
        try:
            os.stat(candidate)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return candidate
        except ValueError:  # a NUL in the name: no such path, and no loop
            return None
    return None


def refuse_symlink_loop(path: str | Path) -> None:
    """InputError (one line, exit 2) when ``path`` is, or lies under, a symbolic link loop."""
    loop = symlink_loop(path)
    if loop is not None:
        where = "" if loop == Path(path) else f" (on the way to {path})"
        raise InputError(loop, f"is a symbolic link loop{where}: its links point at each other; give a real path")


def resolved(path: str | Path) -> Path:
    """``Path(path).expanduser().resolve()``, with a symbolic link loop an InputError instead of a RuntimeError."""
    path = Path(path).expanduser()
    refuse_symlink_loop(path)
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # a loop made since the check above
        raise InputError(path, "is a symbolic link loop: its links point at each other; give a real path") from None


def utf8_name(path: str | Path) -> bool:
    """Whether the path is UTF-8 text (a name with bytes that are not, from a shell, holds lone surrogates)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def write_whole(path: Path, text: str) -> None:
    """Replace ``path`` at once (a temporary sibling renamed over it: a reader never sees half of it; a failed write
    leaves no temporary file). Text that is not UTF-8 (a path from a shell with bytes that are not: lone surrogates)
    is written with those characters escaped (``\\udcff``: in JSON, the same string read back). An OSError names the
    file. The temporary file is this writer's own (process and thread): two writers of one file never share it."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_native_id()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8", errors="backslashreplace")
        tmp.replace(path)
    except BaseException as exc:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp)):  # a write error names no file
            exc.filename, exc.filename2 = str(path), None
        raise


def write_report(path: Path, text: str) -> None:
    """A report file (a lab's JSON) written in place, after its results were shown: an OSError (a full disk, a folder
    made read-only meanwhile) names the file, and the cli prints it as one line (exit 2)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
    except OSError as exc:
        if not getattr(exc, "filename", None):  # write() and close() errors carry no name
            exc.filename = str(path)
        raise


def input_file(path: str | Path) -> Path:
    """``path`` as a readable file, else InputError (missing, a folder, unreadable)."""
    path = Path(path).expanduser()
    refuse_symlink_loop(path)  # exists() says False for a loop: "file not found" would send the user looking for it
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
    refuse_symlink_loop(path)
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
    """A file this command may create or replace: absent or a regular file (never a folder, a device such as
    /dev/full, a FIFO or a socket: a report written there is lost or blocks forever), its parent a folder (created
    later when missing). ``signature``: for a file that is replaced whole (a report), text its own kind of file holds
    near its start: an existing non-empty file without it is not one this command wrote (a run's results log, a user's
    file) and is refused, never overwritten; so is one that cannot be read to tell. Logs a command appends to pass no
    signature. Every refusal is an InputError naming ``path`` (one line), never a bare OSError."""
    path = Path(path).expanduser()
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):  # absent (a file where a folder should be: _parent_ok names it)
        st = None
    except OSError as exc:  # a folder on the way that cannot be searched, a symbolic link loop
        raise InputError(path, f"cannot be used for the {what}: {exc.strerror or exc}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise InputError(path, f"is a folder (expected a path for the {what})")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, f"is not a regular file (a device, FIFO or socket): expected a path for the {what}")
        if not os.access(path, os.W_OK):
            raise InputError(path, "permission denied")
        if signature is not None and st.st_size:
            try:
                with open(path, "rb") as fh:
                    head = fh.read(4096).decode("utf-8", errors="replace")
            except OSError as exc:
                raise InputError(path, f"cannot be read to tell whether it is a ragdoctor {what} "
                                       f"({exc.strerror or exc}): refusing to replace it") from None
            if signature not in head:
                raise InputError(path, f"exists and is not a ragdoctor {what}: refusing to replace it; choose a new "
                                       "path")
    _parent_ok(path)
    return path
