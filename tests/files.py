"""Files in tests: a log another process appends to (or a SIGKILL cut mid-write), read by tests that watch a run
from outside; a file rewritten in place the way a later edit is; a symbolic link loop."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def complete_lines(path: Path) -> list[str]:
    """The non-blank lines up to the file's last newline: a line still being written, or torn by a kill, is left
    out (as the resume drops and redoes it). A missing file has none."""
    data = path.read_bytes() if path.exists() else b""
    return [ln for ln in data[: data.rfind(b"\n") + 1].decode("utf-8").splitlines() if ln.strip()]


def complete_records(path: Path) -> list[dict[str, Any]]:
    """The JSON records of the complete lines."""
    return [json.loads(ln) for ln in complete_lines(path)]


def rewrite(path: Path, data: bytes) -> None:
    """Write ``data`` over ``path`` with a newer mtime, as a later edit has. Two writes within one tick of a coarse
    filesystem clock (up to 10 ms on kernels without fine-grained timestamps) share an mtime, and a same-size rewrite
    then looks unchanged to a cache keyed on (size, mtime): the test would depend on how fast it ran."""
    before = path.stat().st_mtime_ns
    path.write_bytes(data)
    if path.stat().st_mtime_ns <= before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def symlink_loop(folder: Path) -> Path:
    """loop1 -> loop2 -> loop1 in ``folder`` (Path.resolve() raises RuntimeError on it on Python 3.11, exists() says
    False); returns loop1."""
    (folder / "loop1").symlink_to("loop2")
    (folder / "loop2").symlink_to("loop1")
    return folder / "loop1"
