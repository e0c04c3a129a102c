"""The custom nemoguardrails actions: the rails' checks, plus the pipeline's own retrieval and generation plugged into
nemoguardrails' dialog (``retrieve_relevant_chunks``, ``generate_bot_message``). Every check records its verdict,
evidence and time on the request's record; no check raises (a failing check records its error and lets the
question through: a broken rail must not take the pipeline down). One deliberate exception: a question longer than the
LLM self-check reads is blocked unchecked (fail closed, see ``_too_long_to_check``)."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corpora.records import Candidate, Chunk, Trace
from rag.guardrails.detectors import scan_chunk, scan_question
from rag.guardrails.settings import GuardrailsConfig
from rag.prompt import build_messages, is_refusal

ANSWER_INTENT = "answer question"
REQUEST_KEY = "ragdoctor_request"
SELF_CHECK_MAX_CHARS = 16_000  # the longest question the LLM self-check reads (its prompt is sized to hold it)

FactCheck = Callable[[str, list[tuple[str, str]]], tuple[float, list[dict]]]


class FactCheckUnmeasured(Exception):
    """Raised by a fact check that cannot judge this answer (its model cannot read the text); the message says why.
    The output rail records it as unmeasured and lets the answer through: a score it cannot make is no verdict."""


@dataclass
class Request:
    """Everything one question accumulates while nemoguardrails runs it."""

    trace: Trace
    ranked: list[Chunk] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)  # becomes trace.guardrails
    ms: dict[str, float] = field(default_factory=dict)
    blocked_by: str | None = None
    category: str | None = None
    generated: bool = False
    error: str | None = None

    def block(self, stage: str, category: str) -> None:
        if self.blocked_by is None:
            self.blocked_by, self.category = stage, category

    def add_ms(self, key: str, t0: float) -> None:
        self.ms[key] = self.ms.get(key, 0.0) + (time.perf_counter() - t0) * 1000


def _err(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _intent(events: list | None) -> str | None:
    for e in reversed(events or []):
        if e.get("type") == "BotIntent":
            return e.get("intent")
    return None


def self_check_topic(settings: GuardrailsConfig) -> str:
    """What the LLM self-check prompt says the assistant answers questions about."""
    return settings.topic or "the documents in this collection"


def _support(chunks: list[Chunk]) -> list[tuple[str, str]]:
    """What the fact check may count as support: a chunk the retrieval rail flagged as carrying instructions counts
    only without its instruction sentences (with retrieval_action 'flag' the generator saw them, and an answer that
    obeys them, "ACCESS GRANTED", must not be grounded by them); a redacted chunk is already without them."""
    pairs = []
    for c in chunks:
        text = scan_chunk(c.text).redacted if "instruction" in c.flags else c.text
        if text.strip():
            pairs.append((c.chunk_id, text))
    return pairs


class RailActions:
    def __init__(self, pipeline, settings: GuardrailsConfig, fact_check: FactCheck | None, topic_scorer=None):
        self.pipeline = pipeline
        self.settings = settings
        self.fact_check = fact_check
        self.topic_scorer = topic_scorer
        self.requests: dict[str, Request] = {}

    def _req(self, context: dict | None) -> Request:
        return self.requests[(context or {})[REQUEST_KEY]]

    def register(self, rails) -> None:
        for name in ("ragdoctor_check_injection", "ragdoctor_check_topic", "ragdoctor_self_check_input",
                     "ragdoctor_check_chunks", "ragdoctor_check_facts"):
            rails.register_action(getattr(self, name), name)
        rails.register_action(self.generate_user_intent, "generate_user_intent")
        rails.register_action(self.retrieve_relevant_chunks, "retrieve_relevant_chunks")
        rails.register_action(self.generate_bot_message, "generate_bot_message")

    # input rails -----------------------------------------------------------------------------------------------------
    async def ragdoctor_check_injection(self, context: dict | None = None) -> bool:
        req, t0 = self._req(context), time.perf_counter()
        findings = scan_question(req.trace.question)
        req.record.setdefault("input", {})["injection"] = {"blocked": bool(findings),
                                                           "matches": [f.as_dict() for f in findings]}
        if findings:
            req.block("input", "injection")
        req.add_ms("rail_input", t0)
        return bool(findings)

    async def ragdoctor_check_topic(self, context: dict | None = None) -> bool:
        req, t0 = self._req(context), time.perf_counter()
        rec = req.record.setdefault("input", {})
        try:
            if why := self.topic_scorer.unreadable(req.trace.question):  # a score that means nothing blocks nothing
                off = False
                rec["topic"] = {"blocked": False, "unmeasured": why}
            else:
                s = self.topic_scorer.score(req.trace.question)
                off = s.score < self.settings.topic_threshold
                rec["topic"] = {"blocked": off, "threshold": self.settings.topic_threshold, **s.as_dict()}
        except Exception as exc:
            off = False
            rec["topic"] = {"blocked": False, "error": _err(exc)}
        if off:
            req.block("input", "off_topic")
        req.add_ms("rail_input", t0)
        return off

    async def ragdoctor_self_check_input(self, context: dict | None = None, llm=None, llm_task_manager=None) -> bool:
        from nemoguardrails.llm.call import llm_call  # noqa: PLC0415 - nemoguardrails (1 s): rails on only

        req, t0 = self._req(context), time.perf_counter()
        rec: dict[str, Any] = {"blocked": False}
        if len(req.trace.question) > SELF_CHECK_MAX_CHARS:
            return self._too_long_to_check(req, rec, t0)
        try:
            prompt = llm_task_manager.render_task_prompt(
                task="self_check_input", context={"user_input": req.trace.question,
                                                  "topic": self_check_topic(self.settings)})
            reply = (await llm_call(llm, prompt, llm_params={"temperature": 0.0, "max_tokens": 8})).content
            words = reply.strip().lower().replace(".", " ").replace(",", " ").split()
            rec["reply"] = reply.strip()[:200]
            rec["blocked"] = bool(words) and words[0] == "yes"
            if not words or words[0] not in ("yes", "no"):
                rec["note"] = "reply is neither yes nor no: the question passes"
        except Exception as exc:
            rec["error"] = _err(exc)
        req.record.setdefault("input", {})["llm_self_check"] = rec
        if rec["blocked"]:
            req.block("input", "llm_self_check")
        req.add_ms("rail_input", t0)
        return rec["blocked"]

    @staticmethod
    def _too_long_to_check(req: Request, rec: dict[str, Any], t0: float) -> bool:
        """Fail closed: a question longer than the self-check reads is blocked unchecked. Checking only a head and a
        tail would leave the middle unread, and the length is the sender's choice: an injection padded with harmless
        text on both sides would pass. No real question to this assistant is that long."""
        rec.update(blocked=True, note=f"the question ({len(req.trace.question)} characters) is longer than the "
                                      f"self-check reads ({SELF_CHECK_MAX_CHARS}): blocked unchecked")
        req.record.setdefault("input", {})["llm_self_check"] = rec
        req.block("input", "llm_self_check")
        req.add_ms("rail_input", t0)
        return True

    # dialog: every question that passed the input rails goes to the RAG pipeline (no LLM intent generation) ------
    async def generate_user_intent(self, events: list | None = None, context: dict | None = None):
        from nemoguardrails.actions.actions import ActionResult  # noqa: PLC0415 - nemoguardrails (1 s): rails on only
        from nemoguardrails.utils import new_event_dict  # noqa: PLC0415 - nemoguardrails (1 s): rails on only
        return ActionResult(events=[new_event_dict("UserIntent", intent="ask question")])

    async def retrieve_relevant_chunks(self, context: dict | None = None, events: list | None = None):
        from nemoguardrails.actions.actions import ActionResult  # noqa: PLC0415 - nemoguardrails (1 s): rails on only

        if _intent(events) != ANSWER_INTENT:
            return ActionResult(return_value="", context_updates={})
        req, t0 = self._req(context), time.perf_counter()
        req.ranked = self.pipeline.retrieve(req.trace.question)
        contexts, rest, budget = self.pipeline.select(req.ranked)  # top_k, or the context budget's packing
        self._set_contexts(req, contexts, rest, budget)
        req.add_ms("retrieve", t0)
        return ActionResult(return_value="\n".join(req.trace.context_texts),
                            context_updates=self._chunk_vars(req))

    @staticmethod
    def _set_contexts(req: Request, contexts: list[Chunk], rest: list[Chunk], budget: dict | None = None) -> None:
        req.trace.contexts = contexts
        req.trace.candidates = [Candidate(chunk_id=c.chunk_id, doc_id=c.doc_id, rank=c.rank, score=c.score)
                                for c in rest]
        if budget is not None:
            req.trace.metadata["context_budget"] = budget

    @staticmethod
    def _chunk_vars(req: Request) -> dict:
        texts = req.trace.context_texts
        return {"relevant_chunks": "\n".join(texts), "relevant_chunks_sep": texts,
                "retrieved_for": req.trace.question}

    # retrieval rail ----------------------------------------------------------------------------------------------
    async def ragdoctor_check_chunks(self, context: dict | None = None, events: list | None = None):
        from nemoguardrails.actions.actions import ActionResult  # noqa: PLC0415 - nemoguardrails (1 s): rails on only

        if _intent(events) != ANSWER_INTENT:
            return ActionResult(return_value=None, context_updates={})
        req, t0 = self._req(context), time.perf_counter()
        mode, top_k = self.settings.retrieval_action, self.pipeline.cfg.retrieval.top_k
        budgeted = self.pipeline.cfg.retrieval.context_tokens is not None
        kept: list[tuple[int, Chunk]] = []  # (rank position, the chunk as the generator may get it)
        flagged: list[tuple[int, dict]] = []
        scanned = 0
        for pos, chunk in enumerate(req.ranked):
            if not budgeted and len(kept) >= top_k:
                break
            scanned = pos + 1
            scan = scan_chunk(chunk.text)
            if not scan.flagged:
                kept.append((pos, chunk))
                continue
            flagged.append((pos, {"chunk_id": chunk.chunk_id, "doc_id": chunk.doc_id, "rank": chunk.rank,
                                  "action": mode, "patterns": sorted({f.pattern for f in scan.findings}),
                                  "sentences": scan.sentences}))
            if mode == "drop":
                continue
            update: dict[str, Any] = {"flags": [*chunk.flags, "instruction"]}
            if mode == "redact":
                update = {"flags": [*chunk.flags, "instruction", "redacted"], "text": scan.redacted}
            kept.append((pos, chunk.model_copy(update=update)))
        # what the generator gets: the first top_k kept chunks, or (with a context budget) the kept chunks packed into
        # it, a redacted chunk counted at its redacted length. 'checked': the ranks up to the last chunk given, or all
        # that were scanned when every kept chunk was given (nothing examined is left among the candidates)
        contexts, _, budget = self.pipeline.select([c for _, c in kept])
        if len(contexts) == len(kept):
            checked = scanned
        elif contexts:
            checked = kept[len(contexts) - 1][0] + 1
        else:
            checked = 0
        self._set_contexts(req, contexts, req.ranked[checked:], budget)
        examined = [f for pos, f in flagged if pos < checked]
        req.record["retrieval"] = {"action": mode, "checked": checked, "flagged": examined}
        req.add_ms("rail_retrieval", t0)
        return ActionResult(return_value={"flagged": len(examined)}, context_updates=self._chunk_vars(req))

    # generation: the pipeline's own prompt and model ---------------------------------------------------------------
    async def generate_bot_message(self, events: list | None = None, context: dict | None = None, config=None):
        from nemoguardrails.actions.actions import ActionResult  # noqa: PLC0415 - nemoguardrails (1 s): rails on only
        from nemoguardrails.utils import new_event_dict  # noqa: PLC0415 - nemoguardrails (1 s): rails on only
        intent = _intent(events)
        if intent != ANSWER_INTENT:  # a predefined message (refusal, off-topic notice): no model call, no output rail
            text = ((getattr(config, "bot_messages", None) or {}).get(intent) or [""])[0]
            return ActionResult(events=[new_event_dict("BotMessage", text=text)],
                                context_updates={"skip_output_rails": True})
        req, t0 = self._req(context), time.perf_counter()
        question, contexts = req.trace.question, req.trace.chunks
        pairs = [(c.chunk_id, c.text) for c in contexts]
        req.trace.prompt = build_messages(question, pairs)
        try:
            answer = self.pipeline.generate(question, pairs).strip()  # the pipeline's own prompt, model, settings
            req.generated = bool(answer)
            if not answer:
                req.error = "the generator returned an empty answer"
        except Exception as exc:  # a model failure becomes data on the trace
            answer, req.error = "", _err(exc)
        req.trace.answer = answer
        req.add_ms("generate", t0)
        updates = {} if req.generated else {"skip_output_rails": True}
        return ActionResult(events=[new_event_dict("BotMessage", text=answer)], context_updates=updates)

    # output rail ---------------------------------------------------------------------------------------------------
    async def ragdoctor_check_facts(self, context: dict | None = None) -> str:
        req = self._req(context)
        if not req.generated:
            return "pass"
        t0 = time.perf_counter()
        answer = (context or {}).get("bot_message") or req.trace.answer
        threshold = self.settings.groundedness_threshold
        rec: dict[str, Any] = {"threshold": threshold, "action": self.settings.action,
                               "judge": getattr(self.fact_check, "name", getattr(self.fact_check, "__name__", "?"))}
        verdict = "pass"
        if is_refusal(answer):
            rec["skipped"] = "refusal: no claims to check"
        else:
            try:
                if self.fact_check is None:  # the constructor refuses an output rail without one
                    raise RuntimeError("the output rail has no fact check")
                score, failing = self.fact_check(answer, _support(req.trace.chunks))
                rec.update(score=round(float(score), 4), failing_claims=list(failing))
                if score < threshold:
                    verdict = self.settings.action
                    rec["original_answer"] = answer
                    req.block("output", "ungrounded")
            except FactCheckUnmeasured as exc:
                rec["unmeasured"] = str(exc)
            except Exception as exc:
                rec["error"] = _err(exc)
        rec["verdict"] = verdict
        req.record["output"] = rec
        req.add_ms("rail_output", t0)
        return verdict
