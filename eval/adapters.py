"""Every external format is adapted into a Trace here, at the edge: ragdoctor traces, a generic JSONL of (question,
contexts, answer, reference?, relevant ids?), ragas's EvaluationDataset rows (user_input, retrieved_contexts, response,
reference), and, for the Python API, rows as dicts or a DataFrame, a ragas ``EvaluationDataset`` and llama-index
``Response`` objects with their source nodes. In a file the format is detected per line; a bad line becomes a one-line
error naming the file, line and field, and the other lines are still scored.

Ids: a generic or ragas row without an ``id`` is ``line<N>``; a second row with an id already used is a bad line
(the first is kept). Traces are a run log: a later trace of a sample supersedes the earlier one (a rerun), and traces
from several pipeline configurations in one file are warned about. Fields no format knows are warned about (a typo
such as ``refrence`` would otherwise silently leave a metric not applicable)."""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from corpora import openinference
from corpora.errors import InputError, warn
from corpora.jsonl import parse_records, read_records
from corpora.records import Chunk, Trace, answerable_problem, qrels_problem
from corpora.run_folder import latest
from rag.prompt import EMPTY_RESPONSE

GENERIC_FIELDS = frozenset({"id", "question", "contexts", "answer", "reference", "relevant_ids", "relevant_doc_ids",
                            "outcome", "metadata", "error", "reference_context_ids"})
RAGAS_FIELDS = frozenset({"id", "user_input", "retrieved_contexts", "response", "reference", "relevant_ids", "metadata",
                          "reference_contexts", "retrieved_context_ids", "reference_context_ids", "multi_responses",
                          "rubrics", "persona_name", "query_style", "query_length"})
# ragas v0.1's names for what ragdoctor reads as 'reference' (its question/answer/contexts are the generic row's): said
# when ignored, so that every reference-needing metric is not left "not applicable" without a word why
RAGAS_V01 = {"ground_truth": "ragas v0.1's name for 'reference': rename it",
             "ground_truths": "ragas v0.1's list of references: give one of them as 'reference'"}


class FieldError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _ident(value: Any, field: str) -> str | None:
    """An id: a non-empty string, or an integer (as its decimal string; a whole float too, as pandas makes an integer
    column with a missing cell)."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise FieldError(field, f"must be a string or an integer, got {type(value).__name__}")
    text = str(value)
    if not text.strip():
        raise FieldError(field, "is empty")
    return text


def _misspelt(obj: dict, name: str) -> str | None:
    """A key of ``obj`` that is ``name`` but for case and surrounding spaces ("Question ", "ANSWER"); None when
    ``name`` itself is there or no key is."""
    if name in obj:
        return None
    return next((k for k in obj if isinstance(k, str) and k.strip().lower() == name), None)


def _text(obj: dict, key: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            near = _misspelt(obj, key)
            raise FieldError(key, "missing required field" + (f" (there is a field {near!r}: field names are exact, "
                                                              f"in lower case)" if near else ""))
        return None
    if not isinstance(value, str):
        raise FieldError(key, f"must be a string, got {type(value).__name__}")
    return value


# set by the adapters of objects that always report their retrieval (a llama-index Response's source nodes): their
# empty contexts list means "retrieved nothing" (contexts []), not "did not say" (None); never read from a file
COMPLETE = "\x00contexts complete"
BAD = "\x00bad"  # (field, problem) of an object row that cannot be read: reported at its position like any bad row


def _contexts(value: Any, field: str) -> list[Chunk] | None:
    """None when absent, null or an empty list: the record says nothing about what was retrieved."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise FieldError(field, "must be a list of strings or of objects with 'text'")
    out = []
    for i, c in enumerate(value):
        where = f"{field}[{i}]"
        if isinstance(c, str):
            out.append(Chunk(chunk_id=f"ctx{i + 1}", text=c, rank=i + 1))
            continue
        if not isinstance(c, dict):
            raise FieldError(where, "must be a string or an object with 'text'")
        text = c.get("text", c.get("content"))
        if not isinstance(text, str):
            raise FieldError(f"{where}.text", "missing or not a string")
        rank, score = c.get("rank"), c.get("score")
        rank = i + 1 if rank is None else rank  # null: the list's order, as when absent
        if isinstance(rank, numbers.Real) and not isinstance(rank, bool) and float(rank).is_integer():
            rank = int(float(rank))  # 1.0 (a pandas column), numpy integers
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise FieldError(f"{where}.rank", f"must be a whole number >= 1, got {rank!r}")
        if score is not None and (isinstance(score, bool) or not isinstance(score, numbers.Real)
                                  or not math.isfinite(float(score))):
            raise FieldError(f"{where}.score", f"must be a finite number, got {score!r}")
        cid = _ident(c.get("id", c.get("chunk_id")), f"{where}.id") or f"ctx{i + 1}"
        out.append(Chunk(chunk_id=cid, text=text, doc_id=_ident(c.get("doc_id"), f"{where}.doc_id"), rank=rank,
                         score=None if score is None else float(score)))
    ids = [c.chunk_id for c in out]
    if len(set(ids)) < len(ids):  # citations and per-chunk verdicts would be ambiguous
        i = next(i for i, cid in enumerate(ids) if cid in ids[:i])
        raise FieldError(f"{field}[{i}].id", f"chunk id '{ids[i]}' used twice: each chunk once")
    ranks = [c.rank for c in out]
    if len(set(ranks)) < len(ranks):  # which chunk came first would be decided by list order, in silence
        twice = next(r for r in ranks if ranks.count(r) > 1)
        raise FieldError(field, f"two contexts have rank {twice}: each rank once")
    return sorted(out, key=lambda c: c.rank) or None  # rank order: what precision@k and AP read


def _ids(value: Any, field: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise FieldError(field, "must be a list of document ids")
    out = []
    for i, v in enumerate(value):
        ident = _ident(v, f"{field}[{i}]")
        if ident is None:
            raise FieldError(f"{field}[{i}]", "is null")
        out.append(ident)
    return out


def _row(obj: dict[str, Any], default_id: str, *, ragas: bool) -> Trace:
    q, ctx, ans = ("user_input", "retrieved_contexts", "response") if ragas else ("question", "contexts", "answer")
    question = _text(obj, q, required=True)
    if not question.strip():  # type: ignore[union-attr]
        raise FieldError(q, "is blank")
    contexts = _contexts(obj.get(ctx), ctx)
    if contexts is None and obj.get(COMPLETE) and obj.get(ctx) == []:
        contexts = []
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise FieldError("metadata", "must be an object")
    given = {k: _ids(obj.get(k), k) for k in ("relevant_ids", "relevant_doc_ids", "reference_context_ids")
             if obj.get(k) is not None}
    if len({tuple(sorted(set(v or []))) for v in given.values()}) > 1:  # two labels that disagree: neither in silence
        raise FieldError(next(iter(given)), f"{' and '.join(given)} name different documents: give one")
    relevant = next(iter(given.values()), None)
    if contexts and ragas and obj.get("retrieved_context_ids") is not None:  # ragas: the ids of retrieved_contexts
        ids = _ids(obj["retrieved_context_ids"], "retrieved_context_ids") or []
        if len(ids) != len(contexts):
            raise FieldError("retrieved_context_ids", f"{len(ids)} ids for {len(contexts)} retrieved_contexts")
        contexts = [c.model_copy(update={"doc_id": d, "chunk_id": d}) for c, d in zip(contexts, ids)]
    why = answerable_problem(metadata)
    if why:
        raise FieldError("metadata.answerable", why)
    why = qrels_problem(metadata, relevant)
    if why:
        raise FieldError("metadata.qrels", why)
    return Trace(sample_id=_ident(obj.get("id"), "id") or default_id, question=question, contexts=contexts,
                 answer=_text(obj, ans) or "", reference=_text(obj, "reference"),
                 relevant_doc_ids=relevant,
                 outcome=(obj.get("outcome") or "answered") if not ragas else "answered", metadata=metadata,
                 error=_text(obj, "error"), created_at="")


def parse_row(obj: dict[str, Any], default_id: str) -> Trace:
    """One row in any supported shape -> Trace (raises FieldError/ValidationError naming the field). A ragdoctor trace
    is taken as it is (an empty ``contexts`` list: the pipeline retrieved and found nothing); a generic or ragas row
    without contexts (absent, null or []) says nothing about what was retrieved (``contexts`` None)."""
    if BAD in obj:
        raise FieldError(*obj[BAD])
    trace = Trace.model_validate(obj) if "sample_id" in obj else _row(obj, default_id, ragas=_is_ragas(obj))
    bad = _unwritable(trace)
    if bad is not None:
        raise bad
    return trace


def _is_ragas(obj: dict[str, Any]) -> bool:
    """A ragas row: it has ``user_input``, or (its ``user_input`` missing) ragas's other names and no ``question``,
    so that its error names the field it lacks."""
    return "user_input" in obj or ("question" not in obj and not {"retrieved_contexts", "response"}.isdisjoint(obj))


def _unwritable(trace: Trace) -> FieldError | None:
    """A value of the trace's free-form fields (metadata, guardrails) that JSON cannot hold (an object of the user's
    own class): neither its content hash nor the run folder could be written. None when all can be."""
    for name in ("metadata", "guardrails"):
        for key, value in getattr(trace, name).items():
            try:
                to_jsonable_python(value)
            except (PydanticSerializationError, TypeError, ValueError):
                return FieldError(f"{name}.{key}", f"a value of type {type(value).__name__} cannot be written as "
                                                   f"JSON (give a string, a number, a list or an object)")
    return None


def unknown_fields(obj: dict[str, Any]) -> set[str]:
    if "sample_id" in obj:
        return set()  # traces are validated strictly (extra="forbid")
    return set(obj) - (RAGAS_FIELDS if _is_ragas(obj) else GENERIC_FIELDS) - {COMPLETE, BAD}


def _unknown_hint(obj: dict[str, Any], key: str) -> str:
    """What an ignored field probably meant: a known field's name but for case or spaces, or a ragas v0.1 name."""
    near = key.strip().lower()
    if near in (RAGAS_FIELDS if _is_ragas(obj) else GENERIC_FIELDS) and near not in obj:
        return f" (did you mean '{near}'? field names are exact, in lower case)"
    return f" ({RAGAS_V01[key]})" if key in RAGAS_V01 and "reference" not in obj else ""


def _read(source: str | Path, items: Iterable[tuple[int, dict[str, Any]]] | None,
          warnings: list[str] | None) -> tuple[list[Trace], list[InputError]]:
    """The rows of a file (``items`` None: its lines) or of ``items``, as traces; see load_traces."""
    errors: list[InputError] = []
    first_line: dict[str, tuple[int, bool]] = {}  # id -> (line, is a trace)
    unknown: dict[str, list[int]] = {}
    hints: dict[str, str] = {}
    superseded = 0

    def parse(obj: dict[str, Any], lineno: int) -> tuple[bool, Trace]:
        nonlocal superseded
        try:
            s = parse_row(obj, default_id=f"line{lineno}")
        except FieldError as exc:
            raise InputError(source, str(exc), line=lineno, field=exc.field) from None
        is_trace = "sample_id" in obj
        if s.sample_id in first_line:
            line, was_trace = first_line[s.sample_id]
            if not (is_trace and was_trace):
                raise InputError(source, f"duplicate id '{s.sample_id}' (first on line {line}; this line is skipped)",
                                 line=lineno, field="id")
            superseded += 1
        first_line[s.sample_id] = (lineno, is_trace)
        for key in unknown_fields(obj):
            unknown.setdefault(key, []).append(lineno)
            hints.setdefault(key, _unknown_hint(obj, key))
        return is_trace, s

    rows = (read_records(source, parse, what="records", errors=errors) if items is None else
            parse_records(source, items, parse, what="records", errors=errors))
    current = latest(s for _, s in rows)  # a later trace of a sample supersedes it, in the order of its last line
    notes = []
    if superseded:
        notes.append(f"{source}: {superseded} trace line(s) superseded by a later trace of the same sample (a rerun); "
                     "the latest is scored")
    configs = sorted({s.config_hash for t, s in rows if t and current[s.sample_id] is s})
    if len(configs) > 1:
        names = ", ".join(c or "?" for c in configs)
        notes.append(f"{source}: traces from {len(configs)} pipeline configurations ({names}): the scores mix them; "
                     "run each configuration into its own folder to compare them")
    for key, lines in sorted(unknown.items()):
        more = f" (here and on {len(lines) - 1} more line{'s' * (len(lines) > 2)})" if len(lines) > 1 else ""
        notes.append(f"{source}:{lines[0]}: field '{key}' is not one ragdoctor reads: ignored{more}{hints[key]}")
    for note in notes:
        warnings.append(note) if warnings is not None else warn(note)
    return list(current.values()), errors


def load_traces(path: str | Path, warnings: list[str] | None = None) -> tuple[list[Trace], list[InputError]]:
    """All good rows of a JSONL file as traces, plus one error per bad row (the run goes on without them). A file with
    no good row raises InputError. Ambiguities (superseded traces, several pipeline configurations, unknown fields) go
    to ``warnings``, or are warned about (corpora.errors.warn) when no list is given. An OpenInference span export
    (OTLP JSON or a Phoenix spans export, detected by content: corpora/openinference.py) gives one trace per root span,
    its malformed spans as the errors."""
    path = Path(path).expanduser()
    if openinference.detect(path):
        return openinference.load(path)
    if path.suffix == ".parquet" and path.is_file():  # a table of rows (a ragas or generic export): row N is "line" N
        return _read(path, list(enumerate((_row_of(r) for r in _parquet_rows(path)), 1)), warnings)
    return _read(path, None, warnings)


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    import pandas as pd  # noqa: PLC0415 - lazy: only a .parquet input needs it

    try:
        return pd.read_parquet(path).to_dict("records")
    except (OSError, ValueError) as exc:
        raise InputError(path, f"cannot be read as parquet ({' '.join(str(exc).split())[:200]})") from None


# --- objects, for the Python API (ragdoctor.evaluate) ----------------------------------------------------------------

def _plain(value: Any, *, cell: bool = True) -> Any:
    """A DataFrame cell as JSON would hold it: NaN/None missing, numpy arrays and scalars as Python values, also inside
    its lists and dicts (a context's numpy doc id, metadata's numpy bool). Only a whole cell's NaN is pandas' "missing";
    a NaN inside is kept, for the field's own check to refuse. pandas' NA and NaT (nullable and datetime dtypes) are
    missing wherever they are (inside, the field's own check refuses the null)."""
    if type(value).__name__ in ("NAType", "NaTType"):  # pd.NA, pd.NaT, without importing pandas
        return None
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v, cell=False) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, cell=False) for v in value]
    return None if cell and isinstance(value, float) and math.isnan(value) else value


def _is_llama_response(obj: Any) -> bool:
    return hasattr(obj, "source_nodes") and hasattr(obj, "response")


def llama_index_row(question: str, response: Any, **fields: Any) -> dict[str, Any]:
    """A llama-index ``Response`` (its text and source nodes: id, text, score, source document) as a generic row."""
    contexts = []
    for rank, hit in enumerate(response.source_nodes, 1):
        node = getattr(hit, "node", hit)
        doc = getattr(node, "ref_doc_id", None) or (getattr(node, "metadata", None) or {}).get("doc_id")
        contexts.append({"id": node.node_id, "text": node.get_content(), "rank": rank,
                         "score": getattr(hit, "score", None), **({"doc_id": doc} if doc else {})})
    answer = str(response.response or "")
    if answer.strip() == EMPTY_RESPONSE:  # llama-index's placeholder when nothing was retrieved or the LLM said nothing
        why = "no node was retrieved" if not contexts else "the LLM returned no text"
        note = f"the engine returned llama-index's placeholder {EMPTY_RESPONSE!r}, not an answer ({why})"
        metadata = {**(fields.pop("metadata", None) or {}), "error": note}
        return {"question": question, "answer": "", "contexts": contexts, "outcome": "error", "error": note,
                "metadata": metadata, COMPLETE: True, **fields}
    return {"question": question, "answer": answer, "contexts": contexts, COMPLETE: True, **fields}


def _row_of(item: Any) -> Any:
    if isinstance(item, Trace):
        bad = _unwritable(item)
        return item.model_dump(mode="json") if bad is None else {BAD: (bad.field, str(bad))}
    if isinstance(item, tuple) and len(item) == 2 and _is_llama_response(item[1]):
        return llama_index_row(item[0], item[1])
    if isinstance(item, dict):
        # a field name that is no string (a frame's column 0) is said as text, and ignored as any unknown field
        row = {k if isinstance(k, str) else str(k): _plain(v) for k, v in item.items()}
        if "sample_id" in row and hasattr(row.get("created_at"), "isoformat"):  # pd.read_json parsed a trace's time
            row["created_at"] = row["created_at"].isoformat()
        response = row.get("response", row.get("answer"))
        if _is_llama_response(response):
            if _is_llama_response(row.get("response")) and row.get("answer") not in (None, ""):
                return {BAD: ("answer", "given beside a llama-index Response in 'response', whose text is the "
                                        "answer: give one of them")}
            for key in ("contexts", "retrieved_contexts"):
                if row.get(key) not in (None, []):
                    return {BAD: (key, "given beside a llama-index Response, whose source nodes are the contexts: "
                                       "give one of them")}
            if row.get("question") not in (None, "") and row.get("user_input") not in (None, ""):
                return {BAD: ("user_input", "given beside 'question': give one of them")}
            row.pop("response", None), row.pop("answer", None)
            question = row.pop("question", None) or row.pop("user_input", None) or ""
            return llama_index_row(question, response, **row)
        return {k: v for k, v in row.items() if v is not None}
    if hasattr(item, "model_dump"):  # a ragas SingleTurnSample, or any pydantic row
        return {k: v for k, v in item.model_dump().items() if v is not None}
    return item


def _frame_rows(frame: Any) -> list[dict[str, Any]]:
    """A pandas DataFrame's rows as dicts. An index named as a field (``set_index("id")``) is that field, as a column
    would be; columns in levels (a MultiIndex) or a column name given twice are refused (pandas would keep one of the
    two in silence)."""
    if frame.columns.nlevels > 1:
        raise InputError("rows", f"the DataFrame's columns have {frame.columns.nlevels} levels (a MultiIndex): "
                                 f"flatten them to field names", field="data")
    twice = frame.columns[frame.columns.duplicated()]
    if len(twice):
        raise InputError("rows", "a column of this name is in the DataFrame twice: pandas would keep only one of them "
                                 "(rename or drop the other)", field=str(twice[0]))
    fields = GENERIC_FIELDS | RAGAS_FIELDS | {"sample_id"}
    named = [n for n in frame.index.names if n in fields and n not in frame.columns]
    if named:
        frame = frame.reset_index(level=named)
    return frame.to_dict("records")


def traces_from(data: Any, warnings: list[str] | None = None) -> tuple[list[Trace], list[InputError]]:
    """Anything ``ragdoctor.evaluate`` takes, as traces: a JSONL path; a pandas DataFrame or a list of dicts (generic,
    ragas or trace rows); a ragas ``EvaluationDataset``; Trace objects; llama-index ``Response`` objects as
    ``(question, response)`` pairs or in a dict's ``response``. Bad rows are errors (``rows:N: field ...``)."""
    if isinstance(data, (str, Path)):
        return load_traces(data, warnings)
    if hasattr(data, "to_dicts") and hasattr(data, "columns"):  # a polars DataFrame
        items: Iterable[Any] = data.to_dicts()
    elif hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        items = _frame_rows(data)
    elif hasattr(data, "samples") and type(data).__module__.startswith("ragas"):  # a ragas EvaluationDataset
        items = data.samples
    elif isinstance(data, Iterable) and not isinstance(data, (bytes, dict)):
        items = data
    else:  # None, a number, one dict: not a collection of records
        raise InputError(None, f"expected a JSONL path, a DataFrame or an iterable of records, got "
                               f"{type(data).__name__}", field="data")
    rows = [_row_of(x) for x in items]
    bad = [i for i, r in enumerate(rows, 1) if not isinstance(r, dict)]
    if bad:
        raise InputError("rows", f"row {bad[0]} is a {type(rows[bad[0] - 1]).__name__}, not a record", line=bad[0])
    return _read("rows", list(enumerate(rows, 1)), warnings)
