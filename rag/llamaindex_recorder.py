"""Record a user's own llama-index query or chat engine into a ragdoctor run folder, through llama-index's own
instrumentation API (a span handler and an event handler on the root dispatcher; nothing is patched):

    from ragdoctor.integrations import llamaindex
    recorder = llamaindex.record(query_engine, "runs/mine")   # every query of query_engine -> runs/mine/traces.jsonl
    query_engine.query("What does PagedAttention page?")       # then: ragdoctor eval runs/mine/traces.jsonl

Each ``query``/``aquery`` of a query engine (``chat``/``achat`` of a chat engine) is one Trace, written when its span
ends: the question, the nodes the answer was built from (the response's source nodes: id, document, score, text; the
retrieved nodes a postprocessor cut become candidates), the last LLM call's prompt, the answer, the latency per stage
(retrieve, rerank, generate from the events' times; total). Events carry the id of the span they fire in; each span
is mapped to the outermost recorded query span it runs under, so concurrent queries (threads, asyncio tasks) and
nested ones (an engine calling engines) each make exactly one trace. A query that raised is recorded with
``outcome: error``; a streamed answer is not known when the query returns, so it is recorded as an error saying so."""
from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.embedding import EmbeddingStartEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatStartEvent,
    LLMCompletionEndEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from pydantic import PrivateAttr

from corpora.errors import warn
from corpora.records import Candidate, Chunk, Question, Trace
from corpora.run_folder import RunFolder
from rag.prompt import EMPTY_RESPONSE, is_refusal

ROOT_METHODS = {"query", "aquery", "chat", "achat", "stream_chat", "astream_chat"}
_SPAN_ID = re.compile(r"^(?P<cls>[\w.]+)\.(?P<method>\w+)-(?P<uuid>[0-9a-f-]{36})$")
NO_RETRIEVAL = "no retrieval was recorded during the query"


def placeholder_of(engine: Any) -> str:
    """The text ``engine``'s response synthesizer answers with when it has nothing to synthesize."""
    synth = getattr(engine, "_response_synthesizer", None)
    text = getattr(synth, "_empty_response", None)
    return text if isinstance(text, str) and text.strip() else EMPTY_RESPONSE


def _is_engine(instance: Any) -> bool:
    from llama_index.core.base.base_query_engine import BaseQueryEngine  # noqa: PLC0415
    from llama_index.core.chat_engine.types import BaseChatEngine  # noqa: PLC0415

    return isinstance(instance, (BaseQueryEngine, BaseChatEngine))


def _is_stream(result: Any) -> bool:
    from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse  # noqa: PLC0415
    from llama_index.core.chat_engine.types import StreamingAgentChatResponse  # noqa: PLC0415

    return isinstance(result, (StreamingResponse, AsyncStreamingResponse, StreamingAgentChatResponse))


@dataclass
class _Query:
    """What is known so far about one recorded query (its root span)."""

    span_id: str
    question: str
    engine: str
    placeholder: str = EMPTY_RESPONSE  # the engine's empty-response text (placeholder_of)
    started: float = field(default_factory=time.perf_counter)
    retrieved: list[Any] = field(default_factory=list)  # NodeWithScore, in retrieval order
    retrievals: int = 0
    reranked: list[Any] | None = None
    prompt: list[dict[str, str]] = field(default_factory=list)
    generator: str = ""
    embedder: str = ""
    stage_ms: dict[str, float] = field(default_factory=dict)
    open_events: dict[tuple[str, str], Any] = field(default_factory=dict)  # (stage, span id) -> start time


class _Spans(BaseSpanHandler[Any]):
    """Maps every span to the recorded query it runs under; opens and closes the queries."""

    _recorder: Recorder = PrivateAttr()

    def new_span(self, id_: str, bound_args: Any, instance: Any = None, parent_span_id: str | None = None,
                 tags: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        self._recorder._enter(id_, bound_args, instance, parent_span_id)
        return id_

    def prepare_to_exit_span(self, id_: str, bound_args: Any, instance: Any = None, result: Any = None,
                             **kwargs: Any) -> Any:
        self._recorder._exit(id_, result=result)
        return id_

    def prepare_to_drop_span(self, id_: str, bound_args: Any, instance: Any = None, err: BaseException | None = None,
                             **kwargs: Any) -> Any:
        self._recorder._exit(id_, error=err)
        return id_


class _Events(BaseEventHandler):
    _recorder: Recorder = PrivateAttr()

    @classmethod
    def class_name(cls) -> str:
        return "RagdoctorEvents"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self._recorder._event(event)


class Recorder:
    """Writes one Trace per query of the watched engines (all engines when none is named) into ``run``'s traces log.
    ``questions`` (Question objects or dicts) label the queries that ask one of them word for word: the trace takes
    its id, reference and relevant documents. ``close()`` (or leaving a ``with`` block) detaches it."""

    def __init__(self, run: str | Path | RunFolder, engines: list[Any] | None = None,
                 questions: list[Question | dict] | None = None):
        self.run = run if isinstance(run, RunFolder) else RunFolder(run)
        self.run.check_traces_writable()
        self.run.traces.path.parent.mkdir(parents=True, exist_ok=True)
        self.failures: list[str] = []
        self.engines = None if engines is None else {id(e) for e in engines}
        self.questions = {q.question.strip(): q for q in
                          (x if isinstance(x, Question) else Question.model_validate(x) for x in questions or [])}
        self.traces: list[Trace] = []
        self._lock, self._write_lock = threading.Lock(), threading.Lock()
        self._root_of: dict[str, str] = {}  # span id -> the root span id of its recorded query
        self._parent: dict[str, str] = {}  # span id -> its parent, for the spans below a recorded query's root
        self._queries: dict[str, _Query] = {}
        self._spans, self._events = _Spans(), _Events()
        self._spans._recorder = self._events._recorder = self
        self._dispatcher = get_dispatcher()
        self._dispatcher.add_span_handler(self._spans)
        self._dispatcher.add_event_handler(self._events)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop recording (queries still open are not written)."""
        if self._spans in self._dispatcher.span_handlers:
            self._dispatcher.span_handlers.remove(self._spans)
        if self._events in self._dispatcher.event_handlers:
            self._dispatcher.event_handlers.remove(self._events)

    # --- spans ------------------------------------------------------------------------------------------------------
    def _enter(self, id_: str, bound_args: Any, instance: Any, parent: str | None) -> None:
        with self._lock:
            root = self._root_of.get(parent) if parent else None
            if root is not None:
                self._root_of[id_] = root
                self._parent[id_] = parent  # type: ignore[assignment]
                return
            m = _SPAN_ID.match(id_)
            if m is None or m["method"] not in ROOT_METHODS or not _is_engine(instance):
                return
            if self.engines is not None and id(instance) not in self.engines:
                return
            args = getattr(bound_args, "arguments", {}) or {}
            q = args.get("str_or_query_bundle", args.get("message", ""))
            self._root_of[id_] = id_
            self._queries[id_] = _Query(id_, str(getattr(q, "query_str", q)), type(instance).__name__,
                                        placeholder_of(instance))

    def _exit(self, id_: str, result: Any = None, error: BaseException | None = None) -> None:
        with self._lock:
            root = self._root_of.pop(id_, None)
            self._parent.pop(id_, None)
            query = self._queries.pop(id_, None) if root == id_ else None
        if query is None:
            return
        try:
            trace = self._trace(query, result, error)
            with self._write_lock:  # one whole line per trace, even from concurrent threads
                self.run.traces.append(trace)
                self.traces.append(trace)
        except Exception as exc:  # noqa: BLE001 - llama-index swallows a handler's exceptions: say it here, never silently
            why = f"query {query.question[:60]!r} was not recorded: {type(exc).__name__}: {exc}"
            self.failures.append(why)
            warn(why)

    # --- events -----------------------------------------------------------------------------------------------------
    def _event(self, e: BaseEvent) -> None:
        with self._lock:
            root = self._root_of.get(e.span_id or "")
            q = self._queries.get(root) if root else None
            if q is None:
                return
            at = e.timestamp.timestamp()
            if isinstance(e, RetrievalStartEvent):
                q.open_events[("retrieve", e.span_id or "")] = at
            elif isinstance(e, RetrievalEndEvent):
                self._stage(q, "retrieve", e.span_id or "", at)
                q.retrievals += 1
                q.retrieved.extend(e.nodes)
            elif isinstance(e, ReRankStartEvent):
                q.open_events[("rerank", e.span_id or "")] = at
            elif isinstance(e, ReRankEndEvent):
                self._stage(q, "rerank", e.span_id or "", at)
                q.reranked = list(e.nodes)
            elif isinstance(e, (LLMChatStartEvent, LLMCompletionStartEvent)):
                if self._inside_llm_call(q, e.span_id or ""):  # a chat call made through complete() (or back)
                    return
                q.open_events[("generate", e.span_id or "")] = at
                named = [e.model_dict.get(k) for k in ("model", "model_name")]
                q.generator = str(next((n for n in named if n and n != "unknown"), None)
                                  or e.model_dict.get("class_name") or q.generator)
                q.prompt = ([{"role": str(getattr(m.role, "value", m.role)), "content": m.content or ""}
                             for m in e.messages] if isinstance(e, LLMChatStartEvent) else
                            [{"role": "user", "content": e.prompt}])
            elif isinstance(e, (LLMChatEndEvent, LLMCompletionEndEvent)):
                self._stage(q, "generate", e.span_id or "", at)
            elif isinstance(e, EmbeddingStartEvent) and not q.embedder:
                q.embedder = str(e.model_dict.get("model_name") or e.model_dict.get("class_name") or "")

    def _inside_llm_call(self, q: _Query, span_id: str) -> bool:
        at: str | None = self._parent.get(span_id)
        while at is not None:
            if ("generate", at) in q.open_events:
                return True
            at = self._parent.get(at)
        return False

    @staticmethod
    def _stage(q: _Query, stage: str, span_id: str, at: float) -> None:
        start = q.open_events.pop((stage, span_id), None)
        if start is not None:
            q.stage_ms[stage] = q.stage_ms.get(stage, 0.0) + (at - start) * 1000

    # --- the trace --------------------------------------------------------------------------------------------------
    def _trace(self, q: _Query, result: Any, error: BaseException | None) -> Trace:
        sources = getattr(result, "source_nodes", None)
        used = list(sources) if sources else (q.reranked if q.reranked is not None else q.retrieved)
        used = list({n.node.node_id: n for n in reversed(used)}.values())[::-1]  # a node retrieved twice is one context
        recorded = q.retrievals > 0 or bool(sources)
        contexts = [_chunk(n, i) for i, n in enumerate(used, 1)] if recorded else None
        used_ids = {n.node.node_id for n in used}
        rest = [n for n in dict((n.node.node_id, n) for n in [*q.retrieved, *(q.reranked or [])]).values()
                if n.node.node_id not in used_ids]
        candidates = [Candidate(chunk_id=c.chunk_id, doc_id=c.doc_id, rank=len(used) + i, score=c.score)
                      for i, c in enumerate((_chunk(n, 1) for n in rest), 1)]
        outcome, answer, err = "answered", "", None
        if error is not None:
            first = str(error).splitlines()[0] if str(error) else ""
            outcome, err = "error", f"{type(error).__name__}: {first}"
        elif _is_stream(result):
            outcome, err = "error", "a streamed answer is not known when the query returns: it was not recorded"
        else:
            answer = str(getattr(result, "response", result) or "")
            if not answer.strip():
                outcome, err = "error", "the engine returned an empty answer"
            elif answer.strip() == q.placeholder.strip():
                why = "no node was retrieved" if contexts == [] else "the LLM returned no text"
                outcome, answer = "error", ""
                err = f"the engine returned llama-index's placeholder {q.placeholder!r}, not an answer ({why})"
            elif is_refusal(answer):
                outcome = "refused"
        labels = self.questions.get(q.question.strip())
        m = _SPAN_ID.match(q.span_id)
        sample_id = labels.id if labels else f"li-{(m['uuid'] if m else str(uuid.uuid4())).replace('-', '')[:16]}"
        metadata: dict[str, Any] = {"source": "llama-index", "engine": q.engine, "span_id": q.span_id}
        if contexts is None:
            metadata["contexts_missing"] = NO_RETRIEVAL
        fields = dict(sample_id=sample_id, question=q.question or "?", contexts=contexts, candidates=candidates,
                      prompt=q.prompt, answer=answer, outcome=outcome, error=err,
                      latency_ms={**q.stage_ms, "total": (time.perf_counter() - q.started) * 1000},
                      generator=q.generator, embedder=q.embedder, config_hash=f"llama-index:{q.engine}")
        if labels:
            return Trace.of(labels, **fields, metadata={**labels.metadata, **metadata})
        return Trace(**fields, metadata=metadata)


def _chunk(hit: Any, rank: int) -> Chunk:
    node = getattr(hit, "node", hit)
    meta = getattr(node, "metadata", None) or {}
    doc = meta.get("doc_id") or getattr(node, "ref_doc_id", None)
    score = getattr(hit, "score", None)
    return Chunk(chunk_id=node.node_id, doc_id=str(doc) if doc else None, rank=rank,
                 score=float(score) if isinstance(score, (int, float)) else None,
                 text=node.get_content(), title=str(meta.get("title") or ""))


def record(engine: Any = None, run: str | Path | RunFolder = "runs/llama-index", *,
           questions: list[Question | dict] | None = None) -> Recorder:
    """Record every query of ``engine`` (a query or chat engine, a list of them, or None: every engine) into the run
    folder ``run`` (its traces.jsonl, appended to). Returns the Recorder; ``close()`` stops it."""
    engines = None if engine is None else (list(engine) if isinstance(engine, (list, tuple)) else [engine])
    return Recorder(run, engines, questions)
