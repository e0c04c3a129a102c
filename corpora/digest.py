"""Content digests of files and folders (sha256, read in blocks): index manifests, model checks, data manifests and
the names of judges whose verdicts a resume may reuse."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

_BLOCK = 1 << 20


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as src:
        while block := src.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def folder_digest(folder: str | Path, skip: Iterable[str] = ()) -> str:
    """A 12-hex digest of every file under ``folder`` (relative path and bytes), except those whose relative path
    starts with one of ``skip`` (documentation that changes no verdict). Cached per folder state (paths, sizes and
    modification times), so asking again costs one directory walk."""
    root = Path(folder).resolve()
    skip = tuple(skip)
    state = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith(skip):
            st = p.stat()
            state.append((rel, st.st_size, st.st_mtime_ns))
    return _digest(root, tuple(state))


@lru_cache(maxsize=32)
def _digest(root: Path, state: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for rel, _size, _mtime in state:
        digest.update(rel.encode("utf-8") + b"\0" + sha256_file(root / rel).encode() + b"\0")
    return digest.hexdigest()[:12]
