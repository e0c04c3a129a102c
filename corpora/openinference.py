"""OpenInference spans (the semantic conventions of ``openinference-semantic-conventions``) as one Trace per root
span. Pure JSON: no OpenTelemetry import. Reading a file (its two shapes, OTLP JSON and a Phoenix spans export,
detected by content; each span parsed) is corpora/otel_spans.py; this module assembles its spans into traces.

A trace is assembled per root span (a span without a parent; an all-zero parent id is OpenTelemetry's "no parent") of
kind CHAIN or AGENT (below a root of no OpenInference kind, such as an HTTP server span, per outermost CHAIN or AGENT
span reached through spans of no kind; Phoenix's kind UNKNOWN is no kind): the question is its ``input.value``, the
answer its ``output.value`` (unwrapped from a JSON object by its known keys; a JSON object with none is kept as its
text, with a warning); the contexts are the documents of the outermost RETRIEVER spans below it
(``retrieval.documents.N.document.id/content/score/metadata``), where a RERANKER's ``reranker.output_documents``
replace those of its branch and the rest become candidates; the prompt is the last LLM span's ``llm.input_messages``
(or ``llm.prompts``); the latency per stage is the time its spans cover (parallel spans counted once). A trace without
a RETRIEVER span has ``contexts`` None (its context metrics are unmeasured, saying no retrieval was recorded), distinct
from a retriever that found nothing (``[]``).

A reranker's branch is the nearest span above it with a RETRIEVER below it: its own query for a plain engine, its
sub-question for a query split into several (a root CHAIN with a CHAIN per sub-question, each retrieving and
reranking). So the contexts are the output documents of every outermost RERANKER plus the documents of the RETRIEVER
spans in no reranker's branch, in the start order of those spans, each document once, ranked 1..n; the other retrieved
documents are candidates ranked after them.

A malformed span is reported (``file:line`` or the span's place in the export, and its id) and skipped, and so is a
span whose parent is not in the file; the rest are read. Text that cannot be written as UTF-8 (a lone surrogate) is
reported naming the span and the attribute: the document is skipped, or the trace when it is the question, the
answer or the prompt."""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpora.errors import InputError, warn
from corpora.jsonl import _valid_unicode
from corpora.otel_spans import SKIPPED_SPAN, Span, read_spans
from corpora.otel_spans import detect as detect  # re-exported: eval reads a file's shape through this module
from corpora.paths import output_folder
from corpora.records import Candidate, Chunk, Trace
from corpora.run_folder import MARKERS, RunFolder

ROOT_KINDS = ("CHAIN", "AGENT")
NO_RETRIEVAL = "no RETRIEVER span was recorded under the root span"
_QUESTION_KEYS = ("query_str", "query", "message", "question", "input", "user_input")
_ANSWER_KEYS = ("response", "answer", "output", "result", "content", "text")
_DOC_ID_KEYS = ("doc_id", "document_id", "ref_doc_id")


# --- assembling traces -------------------------------------------------------------------------------------------

def _outermost(root: Span, kind: str) -> list[Span]:
    """The spans of ``kind`` below ``root`` that have no ancestor of that kind (a retriever's inner retrieve span is
    the same retrieval), in start order."""
    out: list[Span] = []
    stack = list(root.children)
    while stack:
        s = stack.pop()
        if s.kind == kind:
            out.append(s)
        else:
            stack.extend(s.children)
    return sorted(out, key=lambda s: s.start_ns)


def _descendants(root: Span) -> Iterator[Span]:
    stack = list(root.children)
    while stack:
        s = stack.pop()
        yield s
        stack.extend(s.children)


def _indexed(attrs: dict[str, Any], prefix: str) -> list[tuple[int, dict[str, Any]]]:
    """``prefix.N.rest`` keys as a list (by N) of (N, {rest: value})."""
    items: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for k, v in attrs.items():
        if k.startswith(head):
            n, _, rest = k[len(head):].partition(".")
            if n.isascii() and n.isdigit():
                items.setdefault(int(n), {})[rest] = v
    return [(i, items[i]) for i in sorted(items)]


def _unwrap(value: Any, keys: tuple[str, ...]) -> tuple[Any, list[str] | None]:
    """(the text inside a JSON input/output value ({"query_str": ...}), None), or (the value as it is, the keys of a
    JSON object with no text read here: the caller warns, as its JSON text is not the question or the answer). An
    object of one key holding a string ({"q": ...}) is that string: nothing else it could mean. A chat message is its
    text: ``{"role", "content"}`` (content a string or a list of text parts), a chat response's ``message``, an OpenAI
    completion's first choice, a chat input's last message."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            obj = json.loads(value)
        except ValueError:
            return value, None
        if isinstance(obj, dict):
            text = _json_text(obj, keys)
            return (text, None) if text is not None else (value, [str(k) for k in obj])
    return value, None


def _json_text(obj: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        if isinstance(obj.get(k), str):
            return obj[k]
    choices = obj.get("choices")
    messages = obj.get("messages")
    for inner in (obj.get("content"), obj.get("message"),  # a message with text parts; a chat response's message
                  choices[0] if isinstance(choices, list) and choices else None,  # an OpenAI completion
                  messages[-1] if isinstance(messages, list) and messages else None):  # a chat's input: its last one
        text = _message_text(inner)
        if text is not None:
            return text
    only = list(obj.values())
    return only[0] if len(only) == 1 and isinstance(only[0], str) else None


def _message_text(value: Any) -> str | None:
    """The text of a chat message or its content: a string, a list of text parts (``{"type": "text", "text": ...}``;
    parts of other types, such as an image, hold none), ``{"content": ...}``, an OpenAI choice's ``message``/``text``;
    None when it holds no text."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p if isinstance(p, str) else p.get("text") for p in value if isinstance(p, (str, dict))]
        texts = [t for t in parts if isinstance(t, str)]
        return "\n".join(texts) if texts else None
    if isinstance(value, dict):
        for key in ("content", "text", "message"):
            text = _message_text(value.get(key)) if value.get(key) is not None else None
            if text is not None:
                return text
    return None


def _text(span: Span, name: str, keys: tuple[str, ...], path: Path) -> Any:
    """The question or the answer in ``span``'s ``name`` attribute (input.value, output.value), unwrapped; a JSON
    object with no known key is used as its JSON text with a warning naming the span (never a silent guess)."""
    value = span.attrs.get(name)
    bad = _lone_surrogate(value)
    if bad:
        raise ValueError(f"{name} {bad}")
    mime = span.attrs.get(name.removesuffix(".value") + ".mime_type")
    if isinstance(mime, str) and mime.strip().lower().startswith("text/"):
        return value  # declared plain text: a question that starts with "{" is that text, never a JSON object
    text, unread = _unwrap(value, keys)
    if unread is not None:
        warn(f"{path}: span {span.span_id} ({span.where or span.name}): {name} is a JSON object with no key read as "
             f"its text (keys: {', '.join(unread[:8])}{', ...' if len(unread) > 8 else ''}): its JSON text is used "
             "as it is")
    return text


def _lone_surrogate(value: Any) -> str | None:
    """Why ``value`` cannot be written as UTF-8 (a lone surrogate, as JSON's "\\ud800" escape makes), or None."""
    try:
        _valid_unicode(value)
    except ValueError as exc:
        return str(exc)
    return None


def _doc_metadata(d: dict[str, Any]) -> dict[str, Any]:
    meta = d.get("document.metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            meta = {}
    out = dict(meta) if isinstance(meta, dict) else {}
    out.update({k[len("document.metadata."):]: v for k, v in d.items() if k.startswith("document.metadata.")})
    return out


@dataclass
class _Doc:
    id: str
    text: str
    score: float | None
    doc_id: str | None
    title: str
    given_id: bool = True  # False: no document.id was recorded, the id is made from the text (_text_id)


def _text_id(text: str) -> str:
    """The id of a document recorded without one: made from its text, so that the same text is the same document in
    every span (a reranker's output matched to the retrieved document it is; two retrievers finding it: one context)."""
    return "text-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _docs(span: Span, prefix: str, errors: list[InputError], path: Path) -> list[_Doc]:
    out: list[_Doc] = []
    seen: dict[str, int] = {}
    for i, d in _indexed(span.attrs, prefix):
        text = d.get("document.content")
        if not isinstance(text, str):
            errors.append(InputError(path, f"span {span.span_id}: {prefix}.{i}: no document.content; document "
                                           "skipped", field=span.where or None))
            continue
        meta = _doc_metadata(d)
        doc_id = next((str(meta[k]) for k in _DOC_ID_KEYS if meta.get(k) not in (None, "")), None)
        ident = d.get("document.id")
        given = ident not in (None, "")
        ident = str(ident) if given else _text_id(text)
        bad = next((f"{prefix}.{i}.{k} {why}" for k, v in (("document.content", text), ("document.id", ident), (
            "document.metadata", (doc_id, meta.get("title")))) if (why := _lone_surrogate(v))), None)
        if bad:  # the text the trace would keep cannot be written: this document is reported, the others kept
            errors.append(InputError(path, f"span {span.span_id}: {bad}; document skipped", field=span.where or None))
            continue
        raw = d.get("document.score")
        score = _score(raw)
        if score is None and raw is not None:
            errors.append(InputError(path, f"span {span.span_id}: {prefix}.{i}.document.score {raw!r} is not a "
                                           "finite number; left empty", field=span.where or None))
        if ident in seen:
            what = f"document.id {ident!r} repeats" if given else "no document.id, and the same document.content as"
            errors.append(InputError(path, f"span {span.span_id}: {prefix}.{i}: {what} {prefix}.{seen[ident]}; the "
                                           "first kept", field=span.where or None))
            continue
        seen[ident] = i
        out.append(_Doc(ident, text, score, doc_id, str(meta.get("title") or ""), given))
    return out


def _incomplete(span: Span, prefix: str) -> str | None:
    """Why the documents ``span`` recorded are not all it retrieved, or None: the exporter dropped some of its
    attributes (OpenTelemetry's attribute count limit, 128 by default, drops the oldest: the best-ranked documents
    first), or the documents' indices have a gap."""
    if span.dropped:
        return (f"the exporter dropped {span.dropped} of its attributes (OpenTelemetry's attribute count limit: "
                "raise OTEL_ATTRIBUTE_COUNT_LIMIT, 128 by default)")
    present = {n for n, _ in _indexed(span.attrs, prefix)}
    missing = sorted(set(range(max(present, default=-1) + 1)) - present)
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        return f"{prefix}.{missing[0]}{more} missing (its documents are indexed 0..{max(present)})"
    return None


def _score(value: Any) -> float | None:
    """A document's score as a finite float (a numeric string too: OTLP JSON writes integers as strings), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _content(m: dict[str, Any]) -> str:
    """A flattened message's text: ``message.content``, or its ``message.contents.N.message_content.text`` parts
    (OpenInference's multimodal messages; an image part holds no text)."""
    if m.get("message.content") is not None:
        return str(m["message.content"])
    parts = [p.get("message_content.text") for _, p in _indexed(m, "message.contents")]
    return "\n".join(p for p in parts if isinstance(p, str))


def _prompt(llm: Span) -> list[dict[str, str]]:
    messages = [{"role": str(m.get("message.role") or "user"), "content": _content(m)}
                for _, m in _indexed(llm.attrs, "llm.input_messages")]
    if messages:
        return messages
    prompts = [llm.attrs[k] for k in sorted((k for k in llm.attrs if re.fullmatch(r"llm\.prompts\.\d+", k)),
                                             key=lambda k: int(k.rsplit(".", 1)[1]))]
    prompts += [p["prompt.text"] for _, p in _indexed(llm.attrs, "llm.prompts") if isinstance(p.get("prompt.text"),
                                                                                                str)]
    return [{"role": "user", "content": str(p)} for p in prompts]


def _llm_answer(llm: Span) -> str | None:
    """The text of an LLM span's last output message (``llm.output_messages``), or None when it holds none (a tool
    call)."""
    messages = _indexed(llm.attrs, "llm.output_messages")
    text = _content(messages[-1][1]) if messages else ""
    return text if text.strip() else None


def _first_each(docs: Iterable[_Doc]) -> list[_Doc]:
    """The documents in order, each id once (its first occurrence, at its place)."""
    first: dict[str, _Doc] = {}
    for d in docs:
        first.setdefault(d.id, d)
    return list(first.values())


def _branch_of(reranker: Span, up: dict[int, Span], root: Span) -> Span:
    """The span whose retrievals a reranker reranks: the nearest span above it with a RETRIEVER below it (the query
    for a plain engine; the sub-question's CHAIN when a query is split), the root at most."""
    span = up.get(id(reranker), root)
    while span is not root and not _outermost(span, "RETRIEVER"):
        span = up.get(id(span), root)
    return span


def _reranked(rr: Span, retrieved: list[_Doc], errors: list[InputError], path: Path) -> list[_Doc]:
    """A reranker's output documents, each matched to the retrieved document it is (by id; by text when it was
    recorded without an id), whose document id and title it keeps when it recorded none."""
    by_id = {d.id: d for d in retrieved}
    by_text = {d.text: d for d in reversed(retrieved)}
    out = []
    for d in _docs(rr, "reranker.output_documents", errors, path):
        same = by_id.get(d.id) or (by_text.get(d.text) if not d.given_id else None)
        if same is not None:
            d = _Doc(same.id, d.text, d.score, d.doc_id or same.doc_id, d.title or same.title, d.given_id)
        out.append(d)
    return out


def _contexts(root: Span, retrievers: list[Span], rerankers: list[Span], errors: list[InputError],
              path: Path) -> tuple[list[Chunk] | None, list[Candidate], str | None]:
    """(contexts, candidates, None) of a query: the output documents of every outermost reranker and the documents of
    the retrievers in no reranker's branch, in the start order of those spans, each id once and ranked 1..n; the other
    retrieved documents are candidates ranked after them. Contexts None when no retriever or reranker span was
    recorded; (None, [], why) when one recorded only part of its documents (_incomplete: each such span reported),
    as a ranking with its best documents missing would be judged as if it were the whole of it."""
    incomplete = [(s, why) for s in (*retrievers, *rerankers) if (why := _incomplete(
        s, "retrieval.documents" if s.kind == "RETRIEVER" else "reranker.output_documents"))]
    for s, why in incomplete:
        errors.append(InputError(path, f"span {s.span_id}: {why}: its documents are incomplete, so the trace's "
                                       "contexts are left unmeasured", field=s.where or None))
    if incomplete:
        s, why = incomplete[0]
        return None, [], f"the documents of {s.kind} span {s.span_id} are incomplete: {why}"
    retrieved = {id(r): _docs(r, "retrieval.documents", errors, path) for r in retrievers}
    up = {id(c): s for s in (root, *_descendants(root)) for c in s.children}
    covered: set[int] = set()
    branch_docs: dict[int, list[_Doc]] = {}  # reranker -> the documents of the retrievers in its branch
    for rr in rerankers:
        branch = [r for r in _outermost(_branch_of(rr, up, root), "RETRIEVER") if id(r) in retrieved]
        covered |= {id(r) for r in branch}
        branch_docs[id(rr)] = [d for r in branch for d in retrieved[id(r)]]
    sources = sorted([*rerankers, *(r for r in retrievers if id(r) not in covered)], key=lambda s: s.start_ns)
    used = _first_each(d for s in sources for d in (retrieved[id(s)] if id(s) in retrieved else
                                                    _reranked(s, branch_docs[id(s)], errors, path)))
    used_ids = {d.id for d in used}
    rest = [d for d in _first_each(d for r in retrievers for d in retrieved[id(r)]) if d.id not in used_ids]
    contexts = [Chunk(chunk_id=d.id, doc_id=d.doc_id, rank=i, score=d.score, text=d.text, title=d.title)
                for i, d in enumerate(used, 1)] if retrievers or rerankers else None
    return contexts, [Candidate(chunk_id=d.id, doc_id=d.doc_id, rank=len(used) + i, score=d.score)
                      for i, d in enumerate(rest, 1)], None


def _covered_ms(spans: list[Span]) -> float:
    """The time a stage's spans cover: parallel spans (two retrievers at once) overlap, so their union, never their
    sum; spans one after the other add up."""
    total, end = 0, None
    for s in sorted(spans, key=lambda s: s.start_ns):
        if end is None or s.start_ns >= end:
            total, end = total + s.end_ns - s.start_ns, s.end_ns
        elif s.end_ns > end:
            total, end = total + s.end_ns - end, s.end_ns
    return total / 1e6


def _latency(stages: dict[str, list[Span]]) -> tuple[dict[str, float], list[Span]]:
    """(milliseconds per stage that has spans, the spans that end before they start: their stage is left out, never
    0)."""
    latency: dict[str, float] = {}
    backwards: list[Span] = []
    for stage, spans in stages.items():
        bad = [sp for sp in spans if sp.ms is None]
        backwards += bad
        if spans and not bad:
            latency[stage] = _covered_ms(spans)
    return latency, backwards


def _unwritable(root: Span, trace: Trace) -> None:
    """A trace whose text cannot be written as UTF-8 (a lone surrogate in the prompt, a model name...) raises
    ValueError naming the span and the attribute it came from, as one line, before anything writes it."""
    bad = _lone_surrogate(trace.model_dump())
    if bad:
        where = next((f"{k} of span {s.span_id}" for s in (root, *_descendants(root)) for k, v in s.attrs.items()
                      if _lone_surrogate(v)), "a text of the trace")
        raise ValueError(f"{where} {bad}")


def trace_of(root: Span, errors: list[InputError], path: Path) -> Trace:
    """The Trace of one root span and the spans below it (raises ValueError when the root has no question, or a text
    of it that cannot be written)."""
    question = _text(root, "input.value", _QUESTION_KEYS, path)
    if not isinstance(question, str) or not question.strip():
        dropped = f" (the exporter dropped {root.dropped} of its attributes)" if root.dropped else ""
        raise ValueError(f"the root span has no input.value (the question){dropped}")
    retrievers, rerankers = _outermost(root, "RETRIEVER"), _outermost(root, "RERANKER")
    llms = [s for s in _descendants(root) if s.kind == "LLM"]
    contexts, candidates, incomplete = _contexts(root, retrievers, rerankers, errors, path)
    prompted = sorted((s for s in llms if _prompt(s)), key=lambda s: s.start_ns)
    for s, what in ((root, "its question or answer"), *((p, "the prompt") for p in prompted[-1:])):
        if s.dropped:
            errors.append(InputError(path, f"span {s.span_id}: the exporter dropped {s.dropped} of its attributes "
                                           f"(OpenTelemetry's attribute count limit): {what} may be incomplete",
                                     field=s.where or None))
    latency, backwards = _latency({"total": [root], "retrieve": retrievers, "rerank": rerankers,
                                   "generate": _outermost(root, "LLM")})
    answer = _text(root, "output.value", _ANSWER_KEYS, path)
    answer = answer if isinstance(answer, str) else ("" if answer is None else json.dumps(answer))
    answer_from = None
    if root.attrs.get("output.value") is None and root.status != "ERROR" and llms:
        answer, answer_from = _last_llm_answer(llms, path)
    outcome, error = "answered", None
    if root.status == "ERROR":
        outcome, error = "error", f"the root span failed: {root.status_message or 'status ERROR'}"
    elif not answer.strip():
        outcome, error = "error", "the root span has no output.value (the answer)"
    embedders = [s.attrs.get("embedding.model_name") for s in _descendants(root) if s.kind == "EMBEDDING"]
    metadata: dict[str, Any] = {"source": "openinference", "trace_id": root.trace_id, "span_id": root.span_id,
                                "span_name": root.name}
    if root.attrs.get("session.id"):
        metadata["session_id"] = str(root.attrs["session.id"])
    if answer_from:
        metadata["answer_from"] = answer_from
    if contexts is None:
        metadata["contexts_missing"] = incomplete or NO_RETRIEVAL
    if backwards:
        sp = backwards[0]
        why = f"span {sp.span_id} ({sp.where or sp.name}) ends before it starts"
        metadata["latency_unmeasured"] = why
        warn(f"{path}: {why}: its stage's latency is left out of the trace ({len(backwards)} such span(s) in trace "
             f"{root.trace_id})")
    trace = Trace(sample_id=root.span_id, question=question, contexts=contexts, candidates=candidates,
                  prompt=_prompt(prompted[-1]) if prompted else [], answer=answer, outcome=outcome, error=error,
                  latency_ms=latency, generator=str(next((s.attrs["llm.model_name"] for s in reversed(prompted)
                                                          if s.attrs.get("llm.model_name")), "")),
                  embedder=str(next((e for e in embedders if e), "")), metadata=metadata, created_at="")
    _unwritable(root, trace)
    return trace


ANSWER_FROM_LLM = "the root span has no output.value: the answer is the output message of LLM span {}, the last to end"


def _last_llm_answer(llms: list[Span], path: Path) -> tuple[str, str | None]:
    """(the answer, where it came from) for a root span that recorded no output.value (a streamed response, an
    instrumentation that sets none): the text of the last LLM span to end (its ``llm.output_messages``, or its
    ``output.value`` read as the root's is), or ("", None) when that span holds no text (a tool call): never an
    earlier LLM call's output, which was not the answer."""
    last = max(llms, key=lambda s: (s.end_ns, s.start_ns))
    text = _llm_answer(last)
    if text is None and isinstance(last.attrs.get("output.value"), str):
        value, unread = _unwrap(last.attrs["output.value"], _ANSWER_KEYS)
        text = value if unread is None and isinstance(value, str) and value.strip() else None
    if text is None or _lone_surrogate(text):
        return "", None
    return text, ANSWER_FROM_LLM.format(last.span_id)


def _query_roots(root: Span) -> list[Span]:
    """The query spans of a root: the root itself when it is a CHAIN or AGENT span (or of another OpenInference kind,
    counted as not a query); below a root of no OpenInference kind (another instrumentation's span, such as an HTTP
    server's, around the query; Phoenix's UNKNOWN), the outermost CHAIN or AGENT spans reached through spans of no
    kind; the root itself when there are none (an exporter that wrote no span kind)."""
    if root.kind:
        return [root]
    out: list[Span] = []
    stack = list(root.children)
    while stack:
        s = stack.pop()
        if s.kind in ROOT_KINDS:
            out.append(s)
        elif not s.kind:
            stack.extend(s.children)
    return out or [root]


_Key = tuple[str, str]


def _parent_key(s: Span) -> _Key:
    return (s.trace_id, s.parent_id or "")


def _report_loops(by_id: dict[_Key, Span], roots: list[Span], errors: list[InputError], path: Path) -> None:
    """Spans whose parent chain loops (a span its own ancestor) reach no root: report each, never drop it silently."""
    reached: set[_Key] = set()
    stack = list(roots)
    while stack:
        s = stack.pop()
        reached.add((s.trace_id, s.span_id))
        stack.extend(s.children)
    for key, s in by_id.items():
        if key in reached:
            continue
        seen, cur = {key}, s
        while _parent_key(cur) in by_id and _parent_key(cur) not in seen:
            cur = by_id[_parent_key(cur)]
            seen.add((cur.trace_id, cur.span_id))
        if _parent_key(cur) in seen:  # else it hangs below a span whose parent is missing, reported above
            errors.append(InputError(path, f"span {s.span_id}: its parent chain loops back to itself (span "
                                           f"{cur.parent_id}); span skipped", field=s.where or None))


def _local_roots(by_id: dict[_Key, Span], skipped: set[str]) -> dict[int, bool | None]:
    """The spans whose parent is not in the file that are the root of their trace's part in it (a service called by
    another one: its first span's parent is the caller's span, in the caller's export): {id(span): True} where the
    OTLP span flags say the parent is remote; {id(span): None} where nothing says so but the span is the only one
    below its missing parent in a trace with no root span in the file (a partial export that cut the parent off
    leaves its other children orphans too, and a skipped parent is a malformed span, never a remote one)."""
    rooted = {s.trace_id for s in by_id.values() if s.parent_id is None}
    orphans = [s for s in by_id.values() if s.parent_id is not None and _parent_key(s) not in by_id]
    below = Counter(_parent_key(s) for s in orphans)
    local: dict[int, bool | None] = {}
    for s in orphans:
        if s.remote_parent:
            local[id(s)] = True
        elif (s.remote_parent is None and s.trace_id not in rooted and below[_parent_key(s)] == 1
              and s.parent_id not in skipped):
            local[id(s)] = None
    return local


def assemble(spans: Iterable[Span], errors: list[InputError], path: Path) -> list[Trace]:
    """One Trace per root span of a query kind (CHAIN, AGENT), in start order (below a root of no OpenInference kind,
    such as an HTTP server span, its outermost CHAIN or AGENT spans). A span whose parent is in another service's
    export is the root of its part of the trace (_local_roots); any other span whose parent is not in the file (or
    was skipped as malformed), and a span in a parent loop, is reported and skipped with everything below it; roots of
    other kinds (an index build's EMBEDDING spans) are counted in one warning. Span ids are unique within a trace
    (OpenTelemetry), so a span id that recurs in another trace is another span."""
    by_id: dict[_Key, Span] = {}
    for s in spans:
        if (s.trace_id, s.span_id) in by_id:
            errors.append(InputError(path, f"span {s.span_id}: duplicate span id in trace {s.trace_id}; span "
                                           "skipped", field=s.where or None))
            continue
        by_id[(s.trace_id, s.span_id)] = s
    skipped = {getattr(e, SKIPPED_SPAN) for e in errors if getattr(e, SKIPPED_SPAN, None)}
    roots: list[Span] = []
    local = _local_roots(by_id, skipped)
    for s in by_id.values():
        if s.parent_id is None or id(s) in local:
            roots.append(s)
        elif _parent_key(s) in by_id:
            by_id[_parent_key(s)].children.append(s)
        else:
            why = "was skipped (its error is reported)" if s.parent_id in skipped else "is not in the file"
            errors.append(InputError(path, f"span {s.span_id}: its parent span {s.parent_id} {why}; "
                                           "span skipped with the spans below it", field=s.where or None))
    guessed = [s for s in by_id.values() if local.get(id(s)) is None and id(s) in local]
    if guessed:
        warn(f"{path}: {len(guessed)} span(s) whose parent is not in the file, each the only one below that parent "
             f"in a trace whose root is not in the file either, read as the root of their trace (its parent in "
             f"another service's export, or a partial export): span {guessed[0].span_id} (parent "
             f"{guessed[0].parent_id}){', ...' if len(guessed) > 1 else ''}")
    _report_loops(by_id, roots, errors, path)
    other: dict[str, int] = {}
    traces = []
    for root in sorted((q for r in roots for q in _query_roots(r)), key=lambda s: s.start_ns):
        if root.kind not in ROOT_KINDS and root.kind:
            other[root.kind] = other.get(root.kind, 0) + 1
            continue
        try:
            traces.append(trace_of(root, errors, path))
        except (ValueError, TypeError) as exc:
            errors.append(InputError(path, f"span {root.span_id}: {exc}; trace skipped", field=root.where or None))
    from_llm = [t for t in traces if "answer_from" in t.metadata]
    if from_llm:
        warn(f"{path}: {len(from_llm)} root span(s) with no output.value (the answer): their answer is the output "
             f"message of the last LLM span to end below them (metadata.answer_from; first: span "
             f"{from_llm[0].sample_id})")
    if other:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(other.items()))
        warn(f"{path}: {sum(other.values())} root span(s) that are not queries ({kinds}) were not imported")
    shared = {i for i, n in Counter(t.sample_id for t in traces).items() if n > 1}
    for t in traces:  # a root span id that recurs in another trace: the sample id names the trace too
        if t.sample_id in shared:
            t.sample_id = f"{t.metadata['trace_id']}-{t.sample_id}"
    return traces


def load(path: str | Path, errors: list[InputError] | None = None) -> tuple[list[Trace], list[InputError]]:
    """The traces of a span export and the errors of its skipped spans. A file with no trace raises InputError."""
    bad: list[InputError] = [] if errors is None else errors
    spans = read_spans(path, bad)
    traces = assemble(spans, bad, Path(path))
    if not traces:
        first = f" ({len(bad)} span error(s); first: {bad[0].one_line()})" if bad else ""
        raise InputError(path, f"no query trace in the span export: no root CHAIN or AGENT span with its input"
                               f"{first}")
    return traces, bad


@dataclass
class Imported:
    """What ``import_file`` wrote: the run folder, the traces of the file, how many were new, the skipped spans."""

    run: RunFolder
    traces: list[Trace]
    new: int
    errors: list[InputError]


def import_file(source: str | Path, out: str | Path) -> Imported:
    """The traces of a span export appended to the run folder ``out``'s traces.jsonl (created when missing): a trace
    already there with the same content is not appended again, so importing a file twice changes nothing. The skipped
    spans are reported and listed in input_errors.txt."""
    run = RunFolder(out)
    output_folder(run.path, markers=MARKERS)
    run.check_traces_writable()  # a file that is not a traces log is refused before anything is read or written
    traces, errors = load(source)
    run.path.mkdir(parents=True, exist_ok=True)
    hashes = {t.sample_id: t.content_hash() for t in traces}
    resume = run.traces.resume(traces, item_id=lambda t: t.sample_id, reusable=lambda lines: {
        t.sample_id: t for t in lines if t.content_hash() == hashes.get(t.sample_id)})
    for t in resume.todo:
        resume.add(t.sample_id, t)
    run.record_input_errors(f"import {Path(source).expanduser().resolve()}", errors)
    return Imported(run, traces, len(resume.made), errors)
