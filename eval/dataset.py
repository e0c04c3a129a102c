"""What eval/ reads: rag/ traces, a generic JSONL of (question, contexts, answer, reference?, relevant ids?), or
ragas's EvaluationDataset rows (user_input, retrieved_contexts, response, reference). The format is detected per
line. A bad line becomes a one-line error naming the file, line and field; the other lines are still scored."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from corpora.errors import InputError
from corpora.jsonl import iter_json_lines, validation_error
from eval.records import Context, EvalSample
from rag.trace import Trace


def from_trace(t: Trace) -> EvalSample:
    return EvalSample(
        id=t.sample_id, question=t.question, answer=t.answer, reference=t.reference, relevant_ids=t.relevant_doc_ids,
        outcome=t.outcome, metadata={**t.metadata, "config_hash": t.config_hash, "latency_ms": t.latency_ms,
                                     "candidates": t.candidates, **({"error": t.error} if t.error else {}),
                                     **({"guardrails": t.guardrails} if t.guardrails else {})},
        contexts=[Context(id=c.chunk_id, text=c.text, doc_id=c.doc_id, rank=c.rank, score=c.score) for c in t.contexts],
    )


def _contexts(value: Any, field: str) -> list[Context]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{field} must be a list")
    out = []
    for i, c in enumerate(value, start=1):
        if isinstance(c, str):
            out.append(Context(id=f"ctx{i}", text=c, rank=i))
        elif isinstance(c, dict):
            text = c.get("text", c.get("content"))
            if not isinstance(text, str):
                raise ValueError(f"{field}[{i - 1}] has no text")
            cid = str(c.get("id", c.get("chunk_id", f"ctx{i}")))
            out.append(Context(id=cid, text=text, doc_id=c.get("doc_id"), rank=c.get("rank", i), score=c.get("score")))
        else:
            raise ValueError(f"{field}[{i - 1}] must be a string or an object with 'text'")
    return out


def parse_row(obj: dict[str, Any], default_id: str) -> EvalSample:
    """One row in any supported shape -> EvalSample (raises ValueError/ValidationError naming the field)."""
    if "sample_id" in obj and "contexts" in obj and isinstance(obj.get("contexts"), list) and \
            all(isinstance(c, dict) and "chunk_id" in c for c in obj["contexts"]):
        return from_trace(Trace.model_validate(obj))
    if "user_input" in obj:  # ragas EvaluationDataset / SingleTurnSample
        return EvalSample(id=str(obj.get("id", default_id)), question=obj["user_input"],
                          contexts=_contexts(obj.get("retrieved_contexts"), "retrieved_contexts"),
                          answer=obj.get("response") or "", reference=obj.get("reference"),
                          relevant_ids=obj.get("relevant_ids"), metadata=obj.get("metadata") or {})
    if "question" not in obj:
        raise KeyError("question")
    return EvalSample(id=str(obj.get("id", default_id)), question=obj["question"],
                      contexts=_contexts(obj.get("contexts"), "contexts"), answer=obj.get("answer") or "",
                      reference=obj.get("reference"), relevant_ids=obj.get("relevant_ids", obj.get("relevant_doc_ids")),
                      outcome=obj.get("outcome", "answered"), metadata=obj.get("metadata") or {})


def load_eval_samples(path: str | Path) -> tuple[list[EvalSample], list[InputError]]:
    """All good rows, plus one error per bad row (the run goes on without them). Later duplicates of an id win."""
    path = Path(path)
    samples: dict[str, EvalSample] = {}
    errors: list[InputError] = []
    for lineno, obj in iter_json_lines(path, on_error=errors.append):
        try:
            s = parse_row(obj, default_id=f"line{lineno}")
        except KeyError as exc:
            errors.append(InputError(path, "missing required field", line=lineno, field=str(exc.args[0])))
            continue
        except ValidationError as exc:
            errors.append(validation_error(path, lineno, exc))
            continue
        except ValueError as exc:
            errors.append(InputError(path, str(exc), line=lineno))
            continue
        samples[s.id] = s
    if not samples and not errors:
        errors.append(InputError(path, "no records found"))
    return list(samples.values()), errors
