"""Line-oriented JSON reading and writing with one-line errors that name the file, line and field.

Two kinds of file are read here. *User input* (corpora, question sets, records to evaluate, labelled sets): a bad line
is reported (``file:line: field 'x': problem``) and skipped, the rest is read; a file with no valid line is an
error. *Run logs* this project appends to (traces, judgements): a torn last line (a kill mid-write) is dropped, any
other bad line is reported and skipped (its sample is redone on resume), and a file whose first record is not one of
ours is refused rather than appended to."""
from __future__ import annotations

import gzip
import json
import math
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from corpora.errors import InputError, report_skipped
from corpora.paths import input_file

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


def _open_binary(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key '{key}' in one object")
        obj[key] = value
    return obj


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _finite_int(text: str) -> int:
    """An integer that a float can hold: ``1`` followed by 400 zeros is as out of range as ``1e400`` (a score, a
    latency or a label is read as a float downstream, where it would overflow)."""
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise ValueError(f"number {text[:20]}{'...' if len(text) > 20 else ''} is out of range") from None
    return value


def loads_strict(text: str) -> Any:
    """``json.loads`` that refuses what JSON does not allow but Python accepts (NaN, Infinity, numbers that overflow to
    infinity, integers included) and duplicate keys."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite, parse_int=_finite_int,
                      object_pairs_hook=_no_duplicate_keys)


def decode_problem(exc: json.JSONDecodeError, always_where: bool = True) -> str:
    """json's message and its column: 'Expecting value at column 3'; 'Unterminated string starting at column 22'
    (json's own message ends in 'at' there: one 'at', not two). Without ``always_where`` the column is added only to
    a message that ends in 'at' (a whole file's problem says its line before: 'Extra data' stays as it is)."""
    if exc.msg.endswith(" at"):
        return f"{exc.msg} column {exc.colno}"
    return f"{exc.msg} at column {exc.colno}" if always_where else exc.msg


def _parse_line(path: Path, lineno: int, raw: bytes) -> dict[str, Any] | None:
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark (Windows editors)
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not valid UTF-8 (byte {exc.start})", line=lineno) from None
    if not text.strip():
        return None
    try:
        obj = loads_strict(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {decode_problem(exc)}", line=lineno) from None
    except RecursionError:
        raise InputError(path, "malformed JSON: nested too deeply", line=lineno) from None
    except ValueError as exc:
        raise InputError(path, f"malformed JSON: {exc}", line=lineno) from None
    if not isinstance(obj, dict):
        raise InputError(path, f"expected a JSON object, got {type(obj).__name__}", line=lineno)
    return obj


def iter_json_lines(path: str | Path, on_error: Callable[[InputError], None] | None = None
                    ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line. A bad line raises :class:`InputError`, or, with
    ``on_error``, is handed to it and skipped so the remaining lines are still read."""
    path = input_file(path)
    lineno = 0
    try:
        with _open_binary(path) as fh:
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
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputError(path, f"unreadable compressed file ({exc or type(exc).__name__})", line=lineno + 1) from None
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc), line=lineno + 1 if lineno else None) from None


BASIC_TAGS = {"str", "int", "float", "bool", "none", "list", "dict", "tuple", "set", "bytes"}


def json_object_problem(path: str | Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the JSON object in ``path``, None), or (None, why it cannot be read: missing, not UTF-8, malformed, not an
    object). For files written whole (a config, a model folder's JSON), not line by line."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "file not found"
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start})"
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON at line {exc.lineno}: {decode_problem(exc, always_where=False)}"
    except (OSError, ValueError) as exc:
        return None, f"unreadable ({' '.join(str(exc).split())})"
    if not isinstance(data, dict):
        return None, f"not a JSON object (a {type(data).__name__})"
    return data, None


def read_json_object(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path``; InputError naming the file when it cannot be read as one."""
    data, why = json_object_problem(path)
    if data is None:
        raise InputError(path, why or "unreadable")
    return data


def _is_union_tag(part: object) -> bool:
    """Whether a location part is the name pydantic gives a member of a union (``str``, ``list[str]``,
    ``function-after[...]``, a model's class name), not a field name, dict key or list index."""
    return isinstance(part, str) and (part in BASIC_TAGS or "[" in part or part[:1].isupper()
                                      or part.startswith(("function-", "constrained-", "literal")))


def _union_field(errors: list) -> tuple[tuple, list[str]]:
    """The location of the first error with a union's member tags cut off, and the messages of every member that
    failed there: ``evidence: 5`` against ``str | list[str]`` is a problem of field 'evidence', not 'evidence.str'."""
    loc = tuple(errors[0].get("loc", ()))
    for other in errors[1:]:
        o = tuple(other.get("loc", ()))
        k = next((i for i, (a, b) in enumerate(zip(loc, o)) if a != b), None)
        if k and _is_union_tag(loc[k]) and _is_union_tag(o[k]):
            msgs = [str(e.get("msg", "")) for e in errors if tuple(e.get("loc", ()))[:k] == loc[:k]]
            return loc[:k], list(dict.fromkeys(msgs))
    return loc, [str(errors[0].get("msg", "invalid value"))]


def validation_error(path: str | Path | None, lineno: int | None, exc: ValidationError) -> InputError:
    """Turn pydantic's multi-line error into one line naming the first offending field."""
    errors = exc.errors()
    err = errors[0]
    loc, msgs = _union_field(errors)
    field = ".".join(str(p) for p in loc) or None
    head = "Input should be "
    if len(msgs) > 1 and all(m.startswith(head) for m in msgs):
        msg = head + ", or ".join(m.removeprefix(head) for m in msgs)
    else:
        msg = "; or ".join(m.removeprefix("Value error, ") for m in msgs)
    if err.get("type") == "missing" and len(msgs) == 1:
        msg = "missing required field"
    elif err.get("type") == "extra_forbidden" and len(msgs) == 1:
        msg = "unknown field"
    return InputError(path, msg, line=lineno, field=field)


def record_error(path: str | Path, lineno: int | None, exc: Exception) -> InputError:
    """Any way a record can be wrong, as the one-line ``file:line: field 'x': problem``."""
    if isinstance(exc, InputError):
        return exc
    if isinstance(exc, ValidationError):
        return validation_error(path, lineno, exc)
    if isinstance(exc, KeyError):
        return InputError(path, "missing required field", line=lineno, field=str(exc.args[0]) if exc.args else None)
    if isinstance(exc, BadText):
        return InputError(path, str(exc), line=lineno, field=exc.field)
    return InputError(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__, line=lineno)


RECORD_ERRORS = (InputError, ValidationError, KeyError, ValueError, TypeError, ArithmeticError)


def parse_model(model: type[M], obj: dict[str, Any], path: str | Path, lineno: int | None) -> M:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise validation_error(path, lineno, exc) from None


class BadText(ValueError):
    """Text that UTF-8 cannot write, and the field that holds it ("contexts[1].text"; None: the value itself)."""

    def __init__(self, message: str, field: str | None):
        super().__init__(message)
        self.field = field


def _unencodable(obj: Any, where: str = "") -> tuple[str, str] | None:
    """(where, the bad character) of the first text in ``obj`` (keys included) that UTF-8 cannot write, or None."""
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError as exc:
            return where, exc.object[exc.start : exc.end]
        return None
    if isinstance(obj, dict):
        for key, value in obj.items():
            shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")  # a bad key is named escaped
            name = f"{where}.{shown}" if where else shown
            found = _unencodable(key, name) if isinstance(key, str) else None
            found = found or _unencodable(value, name)
            if found:
                return found
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            found = _unencodable(value, f"{where}[{i}]")
            if found:
                return found
    return None


def _valid_unicode(obj: Any) -> None:
    """A record whose text holds a lone surrogate (JSON's "\\ud800" escape, or a Python string built from bad bytes)
    cannot be written back as UTF-8 (the index, a hash, a log line): BadText (a ValueError) naming the field, so the
    record is reported and skipped instead of stopping the whole run later."""
    try:
        json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError as exc:
        where, bad = _unencodable(obj) or ("", exc.object[exc.start : exc.end])
        raise BadText(f"holds a lone surrogate ({bad!r}): not valid Unicode text", where or None) from None


def read_records(path: str | Path, parse: Callable[[dict[str, Any], int], R | None], *, what: str = "records",
                 errors: list[InputError] | None = None) -> list[R]:
    """Every record ``parse(obj, line)`` accepts (None: a line to leave out quietly, e.g. a blank id filter). A bad
    line is appended to ``errors``, or reported (corpora.errors.report_skipped) when no list is given, and skipped.
    A file with no valid record raises InputError, saying how many lines were bad and why the first was."""
    bad: list[InputError] = []
    return parse_records(path, iter_json_lines(path, on_error=bad.append), parse, what=what, errors=errors, bad=bad)


def parse_records(source: str | Path, items: Iterable[tuple[int, dict[str, Any]]],
                  parse: Callable[[dict[str, Any], int], R | None], *, what: str = "records",
                  errors: list[InputError] | None = None, bad: list[InputError] | None = None) -> list[R]:
    """read_records over (line or row number, object) pairs from anywhere (a file's lines, a list of dicts)."""
    bad = [] if bad is None else bad
    out: list[R] = []
    for lineno, obj in items:
        try:
            _valid_unicode(obj)
            rec = parse(obj, lineno)
        except RECORD_ERRORS as exc:
            bad.append(record_error(source, lineno, exc))
            continue
        if rec is not None:
            out.append(rec)
    if errors is not None:
        errors.extend(bad)
    elif out:  # with no valid record the error below says it all, in one line
        for e in bad:
            report_skipped(e)
    if not out:
        raise none_valid(source, what, bad) if bad else InputError(source, f"no {what} found")
    return out


def none_valid(source: str | Path, what: str, bad: list[InputError]) -> InputError:
    """The one line for a source none of whose records could be read: how many were bad, and the first one's place,
    field and problem."""
    first = bad[0]
    why = f"line {first.line}: " if first.line else ""
    field = f"field {first.field!r}: " if first.field else ""
    return InputError(source, f"no valid {what} ({len(bad)} bad line{'s' * (len(bad) > 1)} skipped; first: "
                              f"{why}{field}{first.message})")


def read_models(path: str | Path, model: type[M], *, what: str = "records",
                errors: list[InputError] | None = None) -> list[M]:
    return read_records(path, lambda obj, lineno: parse_model(model, obj, path, lineno), what=what, errors=errors)


def append_json_line(path: str | Path, record: BaseModel | dict[str, Any]) -> None:
    """Append one record and flush it to disk, so a killed run keeps everything written so far."""
    data = record.model_dump_json() if isinstance(record, BaseModel) else json.dumps(record, ensure_ascii=False)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(data + "\n")
        fh.flush()


def read_log(path: str | Path, model: type[M], *, what: str) -> list[M]:
    """The valid records of a run log this project writes, in file order. A torn last line (a kill mid-write) is
    dropped: it is redone. A log whose first line is not a ``model`` record is not ours: refused (InputError), so
    nothing is ever appended to a user's own file. A later bad line is reported and skipped (redone on resume)."""
    path = Path(path)
    if not path.exists():
        return []
    if path.is_dir():
        raise InputError(path, f"is a folder, not a {what}")
    data = path.read_bytes()
    lines = data.split(b"\n")
    out: list[M] = []
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            out.append(model.model_validate_json(raw))
        except ValidationError as exc:
            if i == len(lines):  # no newline after it: a torn final write
                continue
            err = validation_error(path, i, exc)
            if not out:
                raise InputError(path, f"not a ragdoctor {what} (line {i}: {err.message}): refusing to read or append "
                                       "to it; choose another path") from None
            report_skipped(InputError(path, f"invalid {what} record skipped ({err.message}); it is redone on resume",
                                      line=i, field=err.field))
    return out


def repair_torn_tail(path: str | Path, *, drop: bool = True) -> None:
    """Make the next append start on a fresh line: a last line without its newline is ended when it is a whole JSON
    object (a record written, or a file edited by hand, without the final newline: never dropped) and, when it is not
    (half a line, from a kill mid-write), dropped, or with ``drop`` False (a file people edit) ended and kept."""
    path = Path(path)
    if path.is_file() and path.stat().st_size:
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            start = data.rfind(b"\n") + 1
            try:
                whole = isinstance(loads_strict(data[start:].decode("utf-8")), dict)
            except (ValueError, UnicodeDecodeError):
                whole = False
            if whole or not drop:
                with path.open("ab") as f:
                    f.write(b"\n")
            else:
                path.write_bytes(data[:start])
