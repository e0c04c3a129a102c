"""What eval/ reads: rag/ traces, a generic JSONL of (question, contexts, answer, reference?, relevant ids?), or
ragas's EvaluationDataset rows (user_input, retrieved_contexts, response, reference). The format is detected per
line. A bad line becomes a one-line error naming the file, line and field; the other lines are still scored.

Ids: a generic or ragas row without an ``id`` is ``line<N>``; a second row with an id already used is a bad line
(the first is kept). Traces are a run log: a later trace of a sample supersedes the earlier one (a rerun), and traces
from several pipeline configurations in one file are warned about. Fields no format knows are warned about (a typo
such as ``refrence`` would otherwise silently leave a metric not applicable)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from corpora.errors import InputError, warn
from corpora.jsonl import read_records
from eval.records import Context, EvalSample
from rag.trace import Trace

GENERIC_FIELDS = frozenset({"id", "question", "contexts", "answer", "reference", "relevant_ids", "relevant_doc_ids",
                            "outcome", "metadata"})
RAGAS_FIELDS = frozenset({"id", "user_input", "retrieved_contexts", "response", "reference", "relevant_ids", "metadata",
                          "reference_contexts", "retrieved_context_ids", "reference_context_ids", "multi_responses",
                          "rubrics", "persona_name", "query_style", "query_length"})


def from_trace(t: Trace) -> EvalSample:
    return EvalSample(
        id=t.sample_id, question=t.question, answer=t.answer, reference=t.reference, relevant_ids=t.relevant_doc_ids,
        outcome=t.outcome, metadata={**t.metadata, "config_hash": t.config_hash, "latency_ms": t.latency_ms,
                                     "candidates": t.candidates, **({"error": t.error} if t.error else {}),
                                     **({"guardrails": t.guardrails} if t.guardrails else {})},
        contexts=[Context(id=c.chunk_id, text=c.text, doc_id=c.doc_id, rank=c.rank, score=c.score) for c in t.contexts],
        has_contexts=True,  # the pipeline retrieved: an empty list means it found nothing
    )


class FieldError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _ident(value: Any, field: str) -> str | None:
    """An id: a non-empty string, or an integer (as its decimal string)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise FieldError(field, f"must be a string or an integer, got {type(value).__name__}")
    text = str(value)
    if not text.strip():
        raise FieldError(field, "is empty")
    return text


def _text(obj: dict, key: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise FieldError(key, "missing required field")
        return None
    if not isinstance(value, str):
        raise FieldError(key, f"must be a string, got {type(value).__name__}")
    return value


def _contexts(value: Any, field: str) -> list[Context] | None:
    """None when absent, null or an empty list: the record says nothing about what was retrieved."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise FieldError(field, "must be a list of strings or of objects with 'text'")
    out = []
    for i, c in enumerate(value):
        where = f"{field}[{i}]"
        if isinstance(c, str):
            out.append(Context(id=f"ctx{i + 1}", text=c, rank=i + 1))
            continue
        if not isinstance(c, dict):
            raise FieldError(where, "must be a string or an object with 'text'")
        text = c.get("text", c.get("content"))
        if not isinstance(text, str):
            raise FieldError(f"{where}.text", "missing or not a string")
        rank, score = c.get("rank", i + 1), c.get("score")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise FieldError(f"{where}.rank", "must be an integer >= 1")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                  or not math.isfinite(score)):
            raise FieldError(f"{where}.score", "must be a finite number")
        cid = _ident(c.get("id", c.get("chunk_id")), f"{where}.id") or f"ctx{i + 1}"
        out.append(Context(id=cid, text=text, doc_id=_ident(c.get("doc_id"), f"{where}.doc_id"), rank=rank,
                           score=None if score is None else float(score)))
    return out or None


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


def _row(obj: dict[str, Any], default_id: str, *, ragas: bool) -> EvalSample:
    q, ctx, ans = ("user_input", "retrieved_contexts", "response") if ragas else ("question", "contexts", "answer")
    question = _text(obj, q, required=True)
    if not question.strip():  # type: ignore[union-attr]
        raise FieldError(q, "is blank")
    contexts = _contexts(obj.get(ctx), ctx)
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise FieldError("metadata", "must be an object")
    rel_key = "relevant_ids" if "relevant_ids" in obj or ragas else "relevant_doc_ids"
    return EvalSample(id=_ident(obj.get("id"), "id") or default_id, question=question, contexts=contexts or [],
                      has_contexts=contexts is not None, answer=_text(obj, ans) or "",
                      reference=_text(obj, "reference"), relevant_ids=_ids(obj.get(rel_key), rel_key),
                      outcome=(obj.get("outcome") or "answered") if not ragas else "answered", metadata=metadata)


def parse_row(obj: dict[str, Any], default_id: str) -> EvalSample:
    """One row in any supported shape -> EvalSample (raises FieldError/ValidationError naming the field)."""
    if "sample_id" in obj:  # a ragdoctor trace
        return from_trace(Trace.model_validate(obj))
    return _row(obj, default_id, ragas="user_input" in obj)


def unknown_fields(obj: dict[str, Any]) -> set[str]:
    if "sample_id" in obj:
        return set()  # traces are validated strictly (extra="forbid")
    return set(obj) - (RAGAS_FIELDS if "user_input" in obj else GENERIC_FIELDS)


def load_eval_samples(path: str | Path, warnings: list[str] | None = None
                      ) -> tuple[list[EvalSample], list[InputError]]:
    """All good rows, plus one error per bad row (the run goes on without them). A file with no good row raises
    InputError. Ambiguities (superseded traces, several pipeline configs, unknown fields) go to ``warnings``, or
    are warned about (corpora.errors.warn) when no list is given."""
    path = Path(path)
    errors: list[InputError] = []
    first_line: dict[str, tuple[int, bool]] = {}  # id -> (line, is a trace)
    unknown: dict[str, list[int]] = {}
    superseded = 0

    def parse(obj: dict[str, Any], lineno: int) -> tuple[bool, EvalSample]:
        nonlocal superseded
        try:
            s = parse_row(obj, default_id=f"line{lineno}")
        except FieldError as exc:
            raise InputError(path, str(exc), line=lineno, field=exc.field) from None
        is_trace = "sample_id" in obj
        if s.id in first_line:
            line, was_trace = first_line[s.id]
            if not (is_trace and was_trace):
                raise InputError(path, f"duplicate id '{s.id}' (first on line {line}; this line is skipped)",
                                 line=lineno, field="id")
            superseded += 1
        first_line[s.id] = (lineno, is_trace)
        for key in unknown_fields(obj):
            unknown.setdefault(key, []).append(lineno)
        return is_trace, s

    rows = read_records(path, parse, what="records", errors=errors)
    latest: dict[str, EvalSample] = {}
    for _, s in rows:
        latest.pop(s.id, None)  # a later trace of a sample supersedes it, in the order of its last line
        latest[s.id] = s
    notes = []
    if superseded:
        notes.append(f"{path}: {superseded} trace line(s) superseded by a later trace of the same sample (a rerun); "
                     "the latest is scored")
    configs = sorted({s.metadata.get("config_hash", "") for t, s in rows if t and latest[s.id] is s})
    if len(configs) > 1:
        names = ", ".join(c or "?" for c in configs)
        notes.append(f"{path}: traces from {len(configs)} pipeline configurations ({names}): the scores mix them; "
                     "run each configuration into its own folder to compare them")
    for key, lines in sorted(unknown.items()):
        more = f" (here and on {len(lines) - 1} more line{'s' * (len(lines) > 2)})" if len(lines) > 1 else ""
        notes.append(f"{path}:{lines[0]}: field '{key}' is not one ragdoctor reads: ignored{more}")
    for note in notes:
        warnings.append(note) if warnings is not None else warn(note)
    return list(latest.values()), errors
