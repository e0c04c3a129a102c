"""OpenInference spans read from a file: the file's shape detected by content, each span parsed into a Span (its
attributes flattened to dotted keys); a malformed span is reported and skipped. Pure JSON: no OpenTelemetry import;
corpora/openinference.py assembles the spans into traces. Two shapes are read, detected by content:

    OTLP JSON     the OTLP/JSON protobuf mapping: ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``,
                  attributes as ``{"key", "value": {"stringValue" | "intValue" | "doubleValue" | "arrayValue" ...}}``,
                  ids hex (the collector) or base64 (protobuf's MessageToJson); one export per file, or one per line
                  (the OpenTelemetry collector's file exporter)
    Phoenix spans a Phoenix spans export (``get_spans_dataframe()`` written with ``to_json(orient="records")``, lines or
                  an array, or ``to_parquet``): one span per row with ``context.span_id``, ``parent_id``, ``span_kind``,
                  ``start_time``, ``end_time``, ``status_code`` and ``attributes.*`` (flat, or nested as Phoenix keeps
                  ``retrieval.documents`` as a list of ``{"document.id", ...}``); also the Phoenix REST API's page
                  ``{"data": [rows], "next_cursor": ...}``

A malformed span is reported (``file:line`` or the span's place in the export, and its id) and skipped."""
from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import math
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from corpora.errors import InputError, warn
from corpora.jsonl import loads_strict
from corpora.paths import input_file


@dataclass
class Span:
    """One span, its attributes flattened to dotted keys (``retrieval.documents.0.document.id``)."""

    span_id: str
    parent_id: str | None
    trace_id: str
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    status: str = ""
    status_message: str = ""
    where: str = ""  # file:line or the span's place in the export, for messages
    children: list[Span] = field(default_factory=list)
    dropped: int = 0  # attributes the exporter dropped (OTLP's droppedAttributesCount): what it recorded is incomplete
    remote_parent: bool | None = None  # OTLP's span flags: the parent is in another process (None: not said)

    @property
    def kind(self) -> str:
        """The OpenInference span kind, upper case; "" for none (Phoenix writes UNKNOWN for a span without one, such
        as an HTTP server span: the same span as an OTLP export without the attribute)."""
        kind = str(self.attrs.get("openinference.span.kind") or "").upper()
        return "" if kind == "UNKNOWN" else kind

    @property
    def ms(self) -> float | None:
        """The span's duration; None when it ends before it starts (a clock or export error: no duration, never 0)."""
        return (self.end_ns - self.start_ns) / 1e6 if self.end_ns >= self.start_ns else None


# --- reading a file ----------------------------------------------------------------------------------------------

DETECT_BYTES = 16 << 20  # what detect reads at most: a first line this long is scanned for markers, not parsed


def detect(path: str | Path) -> str | None:
    """"otlp" or "phoenix" when the file holds OpenInference spans in one of the shapes read here, else None. The
    first line is parsed whole when it is one JSON value (a JSONL export, a one-line document: a Phoenix row with long
    documents is far over any fixed head); else (a pretty-printed document, or a first line over DETECT_BYTES) the
    first DETECT_BYTES are scanned for the keys of the shapes, wherever they stand (``partialSuccess`` before
    ``resourceSpans``). Never more than DETECT_BYTES in memory: load reads the file afterwards."""
    p = Path(path)
    if p.suffix == ".parquet":  # Phoenix's spans dataframe, by its columns (a table of rows is not spans)
        return "phoenix" if p.is_file() and _is_phoenix_row(dict.fromkeys(_parquet_columns(p))) else None
    try:
        with _open(p) as fh:
            raw = fh.readline(DETECT_BYTES)
            whole = raw.endswith(b"\n") or len(raw) < DETECT_BYTES
            head = raw.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
            if re.match(r'\[?\s*\{\s*"resourceSpans"\s*:', head):
                return "otlp"
            if whole and head:
                try:
                    return _shape_of(json.loads(head))
                except ValueError:
                    pass  # not one JSON value on its line: pretty-printed, or not JSON
            head += fh.read(DETECT_BYTES - len(raw)).decode("utf-8", errors="replace")
    except (OSError, EOFError, zlib.error):  # unreadable, or a .gz that is not gzip: not a span export
        return None
    return _shape_by_markers(head)


def _open(path: Path) -> io.BufferedIOBase:
    """The file's bytes; a ``.gz`` file decompressed (as every JSONL input is read)."""
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115 - the caller closes it


def _shape_of(obj: Any) -> str | None:
    """The shape of a file's first JSON value: an OTLP export, a Phoenix row (or an array or REST page of them)."""
    if isinstance(obj, list) and obj:
        obj = obj[0]
    if isinstance(obj, dict) and _is_rest_page(obj):
        return _shape_of(obj["data"][:1])
    if isinstance(obj, dict):
        return "otlp" if "resourceSpans" in obj else ("phoenix" if _is_phoenix_row(obj) else None)
    return None


def _shape_by_markers(head: str) -> str | None:
    """The shape of a JSON document from its keys in ``head`` (a JSON string that holds a key's text has its quotes
    escaped, so a quoted name followed by a colon is a key): OTLP's ``resourceSpans``, or a Phoenix row's span id
    (``context.span_id``, or ``span_id`` in its ``context`` object; or its ``context.trace_id``, a row that lost its
    span id: load says how to write it) with its ``span_kind`` or ``parent_id``."""
    if not head.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        return None
    if re.search(r'"resourceSpans"\s*:', head):
        return "otlp"
    span_id = re.search(r'"context\.(?:span|trace)_id"\s*:|"context"\s*:\s*\{[^{}]*"span_id"\s*:', head)
    return "phoenix" if span_id and re.search(r'"(?:span_kind|parent_id)"\s*:', head) else None


def _parquet_columns(path: Path) -> list[str]:
    """The column names of a parquet file (nested struct fields as dotted names); [] when it cannot be read as one."""
    import pyarrow.parquet as pq  # noqa: PLC0415 - lazy: only a .parquet input needs it

    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError):
        return []
    return list(schema.names)


def _is_rest_page(obj: dict) -> bool:
    """A page of Phoenix's REST API (``GET /v1/projects/{id}/spans``): ``{"data": [rows], "next_cursor": ...}``."""
    return isinstance(obj.get("data"), list) and "resourceSpans" not in obj and not _is_phoenix_row(obj)


def _is_phoenix_row(obj: dict) -> bool:
    keys = set(obj)
    return bool({"context.span_id", "context", "context.trace_id"} & keys) and bool(
        {"span_kind", "parent_id", "attributes"} & keys or any(k.startswith("attributes.") for k in keys))


def _documents(path: Path) -> Iterator[tuple[int | None, Any]]:
    """(line number or None, JSON value) per record of the file: the whole file when it is one JSON document, else per
    line. A line that is not JSON raises InputError (a span file with a torn line is reported, the rest read)."""
    with _open(path) as fh:
        text = fh.read().decode("utf-8", errors="strict").lstrip("\ufeff")
    try:
        yield None, loads_strict(text)
        return
    except ValueError:
        pass
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield lineno, loads_strict(line)
        except ValueError as exc:
            yield lineno, InputError(path, f"malformed JSON: {exc}", line=lineno)


def _hex_id(value: Any, what: str) -> str:
    """An OTLP id as lower-case hex: hex as the spec writes it, or base64 as protobuf's JSON mapping writes bytes."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} missing or not a string")
    if re.fullmatch(r"[0-9a-fA-F]{16}|[0-9a-fA-F]{32}", value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} {value!r} is neither hex nor base64") from None
    if len(raw) not in (8, 16):
        raise ValueError(f"{what} {value!r} is {len(raw)} bytes, not 8 or 16")
    return raw.hex()


def _parent_hex(value: Any, what: str) -> str | None:
    """A parent span id as hex, or None for no parent: absent, empty, or all zero (OpenTelemetry's invalid span id,
    which some exporters write for a root span, in hex or base64)."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return None
    parent = _hex_id(value, what)
    return None if not parent.strip("0") else parent


def _any_value(v: Any) -> Any:
    """An OTLP AnyValue as a plain value."""
    if not isinstance(v, dict):
        raise ValueError("attribute value is not an AnyValue object")
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        if isinstance(v["intValue"], bool) or not isinstance(v["intValue"], (int, str)):
            raise ValueError(f"intValue {v['intValue']!r} is not an integer")
        try:
            return int(v["intValue"])
        except ValueError:
            raise ValueError(f"intValue {v['intValue']!r} is not an integer") from None
    if "doubleValue" in v:
        try:
            return float(v["doubleValue"])
        except (TypeError, ValueError):
            raise ValueError(f"doubleValue {v['doubleValue']!r} is not a number") from None
    if "arrayValue" in v:
        return [_any_value(x) for x in _values(v["arrayValue"], "arrayValue")]
    if "kvlistValue" in v:
        kvs = _values(v["kvlistValue"], "kvlistValue")
        if not all(isinstance(kv, dict) and isinstance(kv.get("key"), str) for kv in kvs):
            raise ValueError("a kvlistValue entry is not a {key, value} object")
        return {kv["key"]: _any_value(kv.get("value", {})) for kv in kvs}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _values(container: Any, what: str) -> list:
    """The ``values`` list of an OTLP ArrayValue or KeyValueList."""
    values = (container or {}).get("values", []) if isinstance(container, dict) or container is None else None
    if not isinstance(values, list):
        raise ValueError(f"{what} is not an object with a 'values' list")
    return values


def flatten(obj: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested dicts and lists as dotted keys with list indices (``a.b.0.c``); embedding vectors are left out."""
    out = {} if out is None else out
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        obj = obj.tolist()
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if ".embedding.vector" in key or key.endswith("embedding.vector"):
                continue
            flatten(v, key, out)
    elif isinstance(obj, (list, tuple)) and prefix and not all(isinstance(x, (int, float)) for x in obj):
        for i, v in enumerate(obj):
            flatten(v, f"{prefix}.{i}", out)
    elif prefix:
        out[prefix] = obj
    return out


def _datetime_ns(when: datetime) -> int:
    """Exact nanoseconds since the epoch (a time without a zone is read as UTC)."""
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


def _time_ns(value: Any, what: str) -> int:
    """A time as nanoseconds since the epoch: OTLP's nanosecond strings, Phoenix's ISO strings, epoch numbers in ms (as
    pandas writes them), µs, ns or s, or a pandas Timestamp."""
    if hasattr(value, "value") and hasattr(value, "tz_localize"):  # a pandas Timestamp (NaT: a missing time)
        if value != value:  # noqa: PLR0124 - NaT is the one Timestamp not equal to itself
            raise ValueError(f"{what} missing")
        return int(value.value)
    if isinstance(value, datetime):
        return _datetime_ns(value)
    if isinstance(value, str) and re.fullmatch(r"\d+", value):
        value = int(value)
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{what} missing")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{what} {value!r} is not a time")
        scale = 1 if value > 1e17 else 1000 if value > 1e14 else 1_000_000 if value > 1e11 else 1_000_000_000
        return value * scale if isinstance(value, int) else int(value * scale)  # exact for integers (epoch ms)
    if isinstance(value, str):
        try:
            return _datetime_ns(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            raise ValueError(f"{what} {value!r} is not a time") from None
    raise ValueError(f"{what} is a {type(value).__name__}, not a time")


def _unix_nano(value: Any, what: str) -> int:
    """OTLP's fixed64 nanoseconds (a decimal string in OTLP JSON, or a number)."""
    if isinstance(value, str) and re.fullmatch(r"\d+", value):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"{what} {value!r} is not a time" if value is not None else f"{what} missing")


def _otlp_span(s: Any, where: str) -> Span:
    if not isinstance(s, dict):
        raise ValueError("not a span object")
    attrs: dict[str, Any] = {}
    for kv in s.get("attributes") or []:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise ValueError("an attribute is not a {key, value} object")
        try:
            flatten(_any_value(kv.get("value")), kv["key"], attrs)
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"attribute {kv['key']!r}: {exc}") from None
    status = s.get("status") or {}
    if not isinstance(status, dict):
        raise ValueError("status is not an object")
    span_id = _hex_id(s.get("spanId"), "spanId")  # before the parent's: a span without an id is reported as such
    flags = _count(s.get("flags"), "flags")
    return Span(span_id=span_id, parent_id=_parent_hex(s.get("parentSpanId"), "parentSpanId"),
                trace_id=_hex_id(s.get("traceId"), "traceId"), name=str(s.get("name") or ""),
                start_ns=_unix_nano(s.get("startTimeUnixNano"), "startTimeUnixNano"),
                end_ns=_unix_nano(s.get("endTimeUnixNano"), "endTimeUnixNano"), attrs=attrs,
                status=_status_code(status.get("code")), status_message=str(status.get("message") or ""), where=where,
                dropped=_count(s.get("droppedAttributesCount"), "droppedAttributesCount"),
                remote_parent=bool(flags & _PARENT_IS_REMOTE) if flags & _HAS_IS_REMOTE else None)


_HAS_IS_REMOTE, _PARENT_IS_REMOTE = 0x100, 0x200  # OTLP's SpanFlags: whether the parent's remoteness is known, and it


def _count(value: Any, what: str) -> int:
    """An OTLP uint32 (a number, or a decimal string); absent is 0."""
    if value is None:
        return 0
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"{what} {value!r} is not a count")


_STATUS_CODES = {0: "UNSET", 1: "OK", 2: "ERROR"}  # OTLP's StatusCode enum: the OTLP/JSON mapping writes it as a number


def _status_code(code: Any) -> str:
    if isinstance(code, int) and not isinstance(code, bool):
        return _STATUS_CODES.get(code, str(code))
    if isinstance(code, str) and code.isascii() and code.isdigit():
        return _STATUS_CODES.get(int(code), code)
    return str(code or "").upper().removeprefix("STATUS_CODE_")


def _phoenix_span(row: Any, where: str) -> Span:
    if not isinstance(row, dict):
        raise ValueError("not a span object")
    flat = flatten(row)
    attrs = {k[len("attributes."):]: v for k, v in flat.items() if k.startswith("attributes.") and v is not None
             and not (isinstance(v, float) and math.isnan(v))}
    if "span_kind" in flat and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = flat["span_kind"]
    span_id = flat.get("context.span_id", flat.get("span_id"))
    if span_id is None and "context.trace_id" in flat:
        raise ValueError("context.span_id missing (a spans DataFrame indexed by it, as df.set_index('context.span_id') "
                         "makes it, loses it in to_json(orient='records'): write df.reset_index())")
    return Span(span_id=_hex_id(span_id, "context.span_id"), parent_id=_parent_hex(flat.get("parent_id"), "parent_id"),
                trace_id=_hex_id(flat.get("context.trace_id"), "context.trace_id"), name=str(flat.get("name") or ""),
                start_ns=_time_ns(flat.get("start_time"), "start_time"),
                end_ns=_time_ns(flat.get("end_time"), "end_time"), attrs=attrs,
                status=_status_code(flat.get("status_code")),
                status_message=str(flat.get("status_message") or ""), where=where)


SKIPPED_SPAN = "skipped_span_id"  # the attribute of a span's InputError that holds the skipped span's id


def _span_error(path: Path, line: int | None, where: str, raw: Any, exc: Exception) -> InputError:
    sid = raw.get("spanId", raw.get("context.span_id", (raw.get("context") or {}).get("span_id"))) \
        if isinstance(raw, dict) and isinstance(raw.get("context", {}), dict) else None
    what = f"span {sid}: " if isinstance(sid, str) else ""
    err = InputError(path, f"{what}{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}; span skipped",
                     line=line, field=where or None)
    try:  # its id, so that the spans below it can say their parent was skipped, not missing
        setattr(err, SKIPPED_SPAN, _hex_id(sid, "span id"))
    except ValueError:
        pass
    return err


def _rows(path: Path) -> Iterator[tuple[int | None, Any]]:
    if path.suffix == ".parquet":
        import pandas as pd  # noqa: PLC0415 - lazy: only a Phoenix parquet export needs it

        frame = pd.read_parquet(path)
        if any(name is not None and name not in frame.columns for name in frame.index.names):
            frame = frame.reset_index()  # indexed by context.span_id (as Phoenix's span queries are): its column back
        yield from enumerate(frame.to_dict("records"), 1)
        return
    yield from _documents(path)


def read_spans(path: str | Path, errors: list[InputError]) -> list[Span]:
    """Every well-formed span of the file; each malformed one is appended to ``errors`` and skipped."""
    path = input_file(path)
    spans: list[Span] = []
    try:
        docs = list(_rows(path))
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not valid UTF-8 (byte {exc.start})") from None
    except (OSError, ValueError, EOFError, zlib.error) as exc:
        raise InputError(path, f"unreadable span export ({str(exc) or type(exc).__name__})") from None
    for line, doc in docs:
        if isinstance(doc, InputError):
            errors.append(doc)
            continue
        for item, where in _items(path, line, doc):
            if isinstance(item, dict) and "resourceSpans" in item:
                spans.extend(_otlp_spans(path, line, item, errors))
            else:
                try:
                    spans.append(_phoenix_span(item, where))
                except (ValueError, TypeError, KeyError, AttributeError) as exc:
                    errors.append(_span_error(path, line, where, item, exc))
    return spans


def _items(path: Path, line: int | None, doc: Any) -> Iterator[tuple[Any, str]]:
    """(export or row, its place for messages) per item of one JSON document: the items of an array, the rows of a
    Phoenix REST page (a page with a ``next_cursor`` says that the spans of later pages are not in the file), or the
    document itself."""
    if isinstance(doc, dict) and _is_rest_page(doc):
        if doc.get("next_cursor"):
            warn(f"{path}{f':{line}' if line is not None else ''}: a Phoenix REST page with a next_cursor: the spans "
                 "of the later pages are not in the file (a span whose parent is there is reported)")
        yield from ((row, f"data[{i}]") for i, row in enumerate(doc["data"]))
    elif isinstance(doc, list):
        yield from ((item, "" if line is not None else f"[{i}]") for i, item in enumerate(doc))
    else:
        yield doc, "" if line is not None else "[0]"


def _otlp_spans(path: Path, line: int | None, export: dict, errors: list[InputError]) -> Iterator[Span]:
    def items(value: Any, field: str, of: str) -> list:
        """The list at ``field`` (absent: none); anything else is reported, never read as empty in silence."""
        if value is None or isinstance(value, list):
            return value or []
        errors.append(InputError(path, f"must be a list of {of}, got {type(value).__name__}", line=line, field=field))
        return []

    for r, rs in enumerate(items(export.get("resourceSpans"), "resourceSpans", "resource spans")):
        if not isinstance(rs, dict):
            errors.append(InputError(path, "must be an object", line=line, field=f"resourceSpans[{r}]"))
            continue
        key = "scopeSpans" if "scopeSpans" in rs else "instrumentationLibrarySpans"
        for s_i, ss in enumerate(items(rs.get(key), f"resourceSpans[{r}].{key}", "scope spans")):
            if not isinstance(ss, dict):
                errors.append(InputError(path, "must be an object", line=line,
                                         field=f"resourceSpans[{r}].{key}[{s_i}]"))
                continue
            for k, raw in enumerate(items(ss.get("spans"), f"resourceSpans[{r}].{key}[{s_i}].spans", "spans")):
                where = f"resourceSpans[{r}].{key}[{s_i}].spans[{k}]"
                try:
                    yield _otlp_span(raw, where)
                except (ValueError, TypeError, KeyError, AttributeError) as exc:
                    errors.append(_span_error(path, line, where, raw, exc))
