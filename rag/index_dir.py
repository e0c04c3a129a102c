"""Where an index is written, safely: the folder is checked before anything happens (never a folder this project did
not write), the index is built in a temporary sibling, and the two are swapped in one atomic rename
(``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere two renames), so a killed build leaves the old index intact."""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from corpora import locks
from corpora.errors import InputError, warn
from corpora.paths import resolved, utf8_name
from rag.manifest import holds_our_index, unreadable


def check_index_target(index_dir: str | Path) -> Path:
    """The absolute folder an index may be (re)built in, or InputError: a file, the current folder or one of its
    parents, a symbolic link loop, or a non-empty folder without a ragdoctor index manifest (it is never replaced)."""
    target = resolved(index_dir)
    cwd = Path.cwd().resolve()
    if target == cwd or target in cwd.parents:
        raise InputError(index_dir, "the index folder cannot be the current folder or one of its parents "
                                    "(it is replaced on rebuild): choose a folder of its own, e.g. .ragdoctor/index")
    if target.exists():
        if not target.is_dir():
            raise InputError(index_dir, "exists and is not a folder")
        if (why := unreadable(target / "manifest.json")) is not None:  # neither ours nor foreign: nothing can tell
            raise InputError(Path(index_dir) / "manifest.json", f"{why}: give this process read access to the index "
                                                                "folder's files")
        if any(target.iterdir()) and not holds_our_index(target):  # a user's own manifest.json is no index
            raise InputError(index_dir, "is not empty and holds no ragdoctor index manifest: refusing to replace "
                                        "it; choose a new or empty folder")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(parent, "is a file, not a folder")
            break
    return target


def check_index_name(index_dir: str | Path, *, on_disk: bool) -> None:
    """An index folder whose path is not UTF-8 text (bytes from a shell) is written and read through Python file
    handles (rag/faiss_index.py), but faiss opens an on-disk index's lists file itself, by a name it takes only as
    UTF-8 text: such an index is refused up front (InputError), before any embedding."""
    if on_disk and not utf8_name(resolved(index_dir)):
        raise InputError(index_dir, "the index folder's path is not UTF-8 text, and faiss opens an on-disk index "
                                    "(index.on_disk) by that name: choose a UTF-8 folder name, or keep the lists in "
                                    "memory")


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _clear_leftovers(target: Path) -> None:
    """Temporary siblings a killed build of this index left behind (named by this module, nothing else)."""
    for prefix in (f".{target.name}.building-", f".{target.name}.old-"):
        for p in target.parent.glob(prefix + "*"):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)


_HELD: set[tuple[Path, int]] = set()  # (index folder, thread) holding its lock: re-entrant in one thread
_HELD_GUARD = threading.Lock()


def _index_lock_file(target: Path) -> Path:
    from rag.models import cache_dir  # noqa: PLC0415 - rag.models imports much; an index lock needs only this

    return cache_dir() / "locks" / f"index-{hashlib.sha256(os.fsencode(target)).hexdigest()[:16]}.lock"


def _say_waiting(index_dir: str | Path, lock: Path) -> None:
    if locks.kernel_released():
        warn(f"{index_dir}: another ragdoctor process (or thread) is building this index; waiting for it")
    else:  # the pid in the lock file decides, and a pid given to another process since would be waited for
        warn(f"{index_dir}: another ragdoctor process (or thread) is building this index ({locks.holder(lock)}); "
             f"waiting for it (if that process is no ragdoctor run, remove {lock})")


@contextmanager
def index_lock(index_dir: str | Path) -> Iterator[None]:
    """Hold the index folder's lock (corpora/locks.py, on a file named by the folder's absolute path, in the cache
    folder, removed when let go: nothing is left beside the index) for a check-and-build: two processes building one
    index wait for each other instead of deleting each other's work (the first builds, the second then finds it
    current). Re-entrant in one thread. With ``fcntl`` it is an exclusive ``flock`` the kernel releases when its holder
    dies; without (Windows) the file's exclusive creation with the holder's pid in it, and a lock whose process no
    longer runs is taken over, said in one line."""
    target = resolved(index_dir)
    key = (target, threading.get_ident())
    with _HELD_GUARD:
        held = key in _HELD
    if held:  # an outer frame of this thread holds it, and lets it go
        yield
        return
    try:
        lock = _index_lock_file(target)
        hold = locks.acquire(lock, "index build", wait=lambda: _say_waiting(index_dir, lock))
    except OSError as exc:  # a read-only or odd cache folder: build as before, unguarded, and say so
        warn(f"{index_dir}: no build lock (the cache folder: {exc.strerror or exc}); two builds at once may collide")
        yield
        return
    if hold.took_over:
        warn(f"{index_dir}: took over its build lock, left behind by a ragdoctor {hold.took_over} that no longer runs")
    with _HELD_GUARD:
        _HELD.add(key)
    try:
        yield
    finally:
        with _HELD_GUARD:
            _HELD.discard(key)
        hold.release()


@contextmanager
def building(index_dir: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary sibling of ``index_dir`` to write the index into; on a clean exit it replaces
    ``index_dir`` atomically, on an exception it is removed and ``index_dir`` is untouched. Holds the index's lock, so
    the leftovers it clears are a killed build's, never a live one's."""
    target = check_index_target(index_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with index_lock(target):
        yield from _build_in(target)


def _build_in(target: Path) -> Iterator[Path]:
    _clear_leftovers(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.building-", dir=target.parent))
    try:
        yield tmp
        if not target.exists():
            tmp.rename(target)
        elif _exchange(tmp, target):
            shutil.rmtree(tmp)  # now the old index
        else:
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            old.rmdir()
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
