"""Line-oriented JSON reading and writing with one-line errors that name the file, line and field."""
from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from corpora.errors import InputError

M = TypeVar("M", bound=BaseModel)


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _parse_line(path: Path, lineno: int, raw: bytes) -> dict[str, Any] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not valid UTF-8 (byte {exc.start})", line=lineno) from None
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {exc.msg} at column {exc.colno}", line=lineno) from None
    if not isinstance(obj, dict):
        raise InputError(path, f"expected a JSON object, got {type(obj).__name__}", line=lineno)
    return obj


def iter_json_lines(path: str | Path, on_error: Callable[[InputError], None] | None = None
                    ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line. A bad line raises :class:`InputError`, or, with
    ``on_error``, is handed to it and skipped so the remaining lines are still read."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    with _open_text(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                obj = _parse_line(path, lineno, raw)
            except InputError as exc:
                if on_error is None:
                    raise
                on_error(exc)
                continue
            if obj is not None:
                yield lineno, obj


def validation_error(path: str | Path, lineno: int | None, exc: ValidationError) -> InputError:
    """Turn pydantic's multi-line error into one line naming the first offending field."""
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err.get("loc", ())) or None
    msg = err.get("msg", "invalid value")
    if err.get("type") == "missing":
        msg = "missing required field"
    elif err.get("type") == "extra_forbidden":
        msg = "unknown field"
    return InputError(path, msg, line=lineno, field=field)


def parse_model(model: type[M], obj: dict[str, Any], path: str | Path, lineno: int | None) -> M:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise validation_error(path, lineno, exc) from None


def read_models(path: str | Path, model: type[M]) -> list[M]:
    return [parse_model(model, obj, path, lineno) for lineno, obj in iter_json_lines(path)]


def append_json_line(path: str | Path, record: BaseModel | dict[str, Any]) -> None:
    """Append one record and flush it to disk, so a killed run keeps everything written so far."""
    data = record.model_dump_json() if isinstance(record, BaseModel) else json.dumps(record, ensure_ascii=False)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(data + "\n")
        fh.flush()


def read_json_lines_tolerant(path: str | Path) -> Iterator[dict[str, Any]]:
    """Read an append-only log written by this project, ignoring a torn last line left by a kill."""
    path = Path(path)
    if not path.exists():
        return
    lines = path.read_bytes().split(b"\n")
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            yield json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            if i >= len(lines) - 2:  # torn final write: drop it, it will be redone
                continue
            raise InputError(path, "malformed JSON in run log", line=i + 1) from None


def repair_torn_tail(path: str | Path) -> None:
    """Drop a half-written last line (a kill mid-write) so the next append starts on a fresh line."""
    path = Path(path)
    if path.exists() and path.stat().st_size:
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            path.write_bytes(data[: data.rfind(b"\n") + 1])
