"""Generation through the OpenAI chat API, plus a deterministic offline fake.

``OpenAIChatLLM`` reaches any OpenAI-compatible server (NVIDIA NIM, vLLM, Ollama, OpenAI, the
bundled llama.cpp server); ``FakeLLM`` answers from the prompt's context blocks without a model.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from rag.fleet import (
    RETRYABLE_STATUS,
    Endpoints,
    Jitter,
    RequestError,
    RequestStats,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
    public_url,
    redact_urls,
    split_query,
)
from rag.prompt import REFUSAL

__all__ = ["REFUSAL", "ChatLLM", "FakeLLM", "LLMError", "LLMResponse", "OpenAIChatLLM"]

Messages = list[dict[str, str]]


class LLMResponse(BaseModel):
    """One chat completion: the text, who made it, token usage when known, and wall time."""

    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None  # prompt tokens the server did not read again (its KV cache held the prefix)
    prompt_ms: float | None = None  # the server's time reading the prompt: the time to the first token
    latency_s: float
    # why the model stopped, as the server said ("stop", "length": cut at max_tokens, ...); None when it did not say
    # (a fake model, or a reply cached before this was recorded)
    finish_reason: str | None = None

    def usage(self) -> dict[str, float]:
        """The token counts and server times it reported (none invented: a server that says nothing gives {})."""
        fields = ("prompt_tokens", "cached_tokens", "completion_tokens", "prompt_ms")
        return {k: v for k in fields if (v := getattr(self, k)) is not None}


class LLMError(RuntimeError):
    """A chat call failed (network, HTTP status, malformed reply); the message is one line. ``kind``: the last
    attempt's failure as rag.fleet.RequestError names it (``connection``, ``timeout``, ``http_400``, ``malformed``
    ...), None where no request said."""

    def __init__(self, message: str, kind: str | None = None):
        super().__init__(message)
        self.kind = kind


@runtime_checkable
class ChatLLM(Protocol):
    """Anything that answers chat messages; ``model_id`` names it for caches and traces."""

    model_id: str

    def chat(
        self, messages: Messages, *, temperature: float = 0.0, max_tokens: int = 256, seed: int = 0
    ) -> LLMResponse: ...


def one_line(text: object, limit: int = 300) -> str:
    """Collapse whitespace so an error message fits on one line, cut at ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _with_cause(where: str, exc: BaseException) -> str:
    """'where: Error: message (Cause: message)' on one line: the cause says what the network said (a URL it quotes
    without its password)."""
    cause = f" ({type(exc.__cause__).__name__}: {exc.__cause__})" if exc.__cause__ else ""
    return one_line(redact_urls(f"{where}: {type(exc).__name__}: {exc}{cause}"))


def fleet_name(model: str, urls: list[str]) -> str:
    """``model@url`` naming a client in traces, judge names and the judge cache. A fleet (two URLs or more) is one
    model however many of its servers are listed and in whatever order: ``model@<fleet>``, as the run's config hash
    names it (swapping two --judge-base-url, or dropping a dead one of three, must not re-judge everything; the
    endpoints are in the request counts). One URL gives the name it always had."""
    return f"{model}@{urls[0]}" if len(set(urls)) == 1 else f"{model}@<fleet>"


class OpenAIChatLLM:
    """Chat completions from an OpenAI-compatible endpoint (``base_url`` ends in ``/v1``), or from a fleet of them
    (a list of URLs: each request goes to the next one round-robin, and a retry to the one after; one that refuses
    connections is stepped around: rag/fleet.py's Endpoints).

    ``max_retries`` retries on 429, 5xx, timeouts and dropped connections with jittered exponential backoff (a
    Retry-After header is honoured: rag/fleet.py); ``stats`` counts what was sent. Safe to call from several
    threads at once (``concurrency`` of the run). ``base_url``, ``base_urls`` and ``model_id`` are shown and recorded:
    they hold no user or password (the clients alone have the URLs as given)."""

    def __init__(
        self,
        base_url: str | list[str],
        model: str = "local",
        api_key: str | None = None,
        timeout: float = 300.0,
        max_retries: int = 1,
        *,
        model_id: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from openai import OpenAI  # noqa: PLC0415 - lazy: ~1 s

        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not urls:
            raise LLMError("no base URL given")
        full = [u.rstrip("/") for u in urls]
        self.base_urls = [public_url(u).rstrip("/") for u in full]
        self.base_url = self.base_urls[0]
        self.model = model
        self.model_id = model_id or fleet_name(model, self.base_urls)
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self.stats = RequestStats()
        self._jitter = Jitter(self.retry.seed)
        self._sleep = sleep
        self._endpoints = Endpoints(len(full), cooldown=self.retry.cooldown)
        key = api_key or os.environ.get("OPENAI_API_KEY") or "local"
        # our own retry loop (rag/fleet.py) replaces the client's: it counts, honours Retry-After and fails over
        # a query (``?api_key=...``, ``?api-version=...``) is sent with every request, not glued before its path
        self._clients = [OpenAI(base_url=bare, api_key=key, timeout=timeout, max_retries=0, default_query=query or None)
                         for bare, query in map(split_query, full)]
        self.timeout = timeout  # the whole request's, not only each read's (a reply trickled byte by byte)

    def chat(
        self, messages: Messages, *, temperature: float = 0.0, max_tokens: int = 256, seed: int = 0
    ) -> LLMResponse:
        """Send one non-streaming chat request (retried as ``retry`` says); a final failure is a one-line
        ``LLMError`` naming the endpoint and the reason."""

        def attempt(k: int) -> tuple[str, Callable[[], LLMResponse]]:
            return self.base_urls[k], lambda: self._once(k, messages, temperature, max_tokens, seed)

        try:
            return call_with_retries(attempt, self.retry, self.stats, jitter=self._jitter, sleep=self._sleep,
                                     endpoints=self._endpoints)
        except RequestError as exc:
            raise LLMError(str(exc), kind=exc.kind) from None

    def _once(self, k: int, messages: Messages, temperature: float, max_tokens: int, seed: int) -> LLMResponse:
        """One attempt at endpoint ``k``; any failure becomes a ``RequestError`` saying whether to retry."""
        import openai  # noqa: PLC0415 - already loaded by __init__

        start = time.perf_counter()
        where = self.model_id if len(self._clients) == 1 else f"{self.model}@{self.base_urls[k]}"
        try:
            completion = _within(self.timeout, lambda: self._clients[k].chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
            ))
        except TimeoutError:
            raise RequestError(f"{where}: timed out: no complete reply within {self.timeout:g} s (the request timeout)",
                               kind="timeout", retryable=True) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            said = one_line(redact_urls(f"{where}: {type(exc).__name__}: {exc}"), 400)
            raise RequestError(said + self._hint(status, str(exc), k), kind=f"http_{status}",
                               retryable=status in RETRYABLE_STATUS, retry_after=retry_after) from None
        except openai.APIConnectionError as exc:  # APITimeoutError is one too
            kind = "timeout" if isinstance(exc, openai.APITimeoutError) else "connection"
            raise RequestError(_with_cause(where, exc), kind=kind, retryable=True) from None
        except Exception as exc:  # openai, httpx and JSON errors alike become one domain error
            raise RequestError(_with_cause(where, exc), kind="malformed", retryable=False) from None
        try:
            return self._parse(completion, time.perf_counter() - start)
        except LLMError as exc:
            raise RequestError(str(exc), kind="malformed", retryable=False) from None

    def _hint(self, status: int, said: str, k: int) -> str:
        """What to check after a 404 (the model, or the URL's path) or a 401 (the key): the same for every request,
        so the one line says it."""
        if status == 404 and "model" in said.lower():
            return (f" (check the model name: the server does not serve {self.model!r}; "
                    f"GET {self.base_urls[k]}/models lists the ones it does)")
        if status == 404:
            return f" (is the base URL right? the request went to {self.base_urls[k]}/chat/completions; a base URL " \
                   "usually ends in /v1)"
        if status == 401:
            return " (check the API key: OPENAI_API_KEY, or a user:password or ?api_key= in the URL)"
        return ""

    def _parse(self, completion: Any, latency_s: float) -> LLMResponse:
        """Validate the reply's shape and turn it into an ``LLMResponse``: a reply streamed as server-sent events
        though none was asked for is put together; a message whose ``content`` is null is its ``refusal`` when it has
        one (what the model said), else an error saying why there is no text (a tool call, a finish reason)."""
        if isinstance(completion, str | bytes):  # not JSON: the OpenAI client hands back the body as it came
            completion = _from_event_stream(completion, self.model_id)
        choices = getattr(completion, "choices", None)
        if isinstance(choices, list) and not choices:
            raise LLMError(f"{self.model_id}: malformed reply: it has no choices (nothing generated; a server's "
                           "content filter may have held it back)")
        try:
            choice = completion.choices[0]
            message = choice.message
        except (AttributeError, IndexError, KeyError, TypeError):
            raise LLMError(one_line(f"{self.model_id}: malformed reply: {completion!r}", 200)) from None
        text = getattr(message, "content", None)
        if text is None:
            text = _no_content(message, getattr(choice, "finish_reason", None), self.model_id)
        if not isinstance(text, str):
            raise LLMError(f"{self.model_id}: reply has no text content")
        usage = getattr(completion, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        timings = getattr(completion, "timings", None)  # llama.cpp's own: prompt_n, cache_n, prompt_ms, ...
        prompt_ms = timings.get("prompt_ms") if isinstance(timings, dict) else None
        model = getattr(completion, "model", None)
        finish = getattr(completion.choices[0], "finish_reason", None)
        # the answer is what was asked for; the bookkeeping a server adds is kept only when it is a sane number (a
        # NaN time or a "lots" token count would otherwise lose the answer, or a trace that cannot be read back)
        return LLMResponse(
            text=text,
            model=model if isinstance(model, str) and model else self.model,
            prompt_tokens=_count(getattr(usage, "prompt_tokens", None)),
            completion_tokens=_count(getattr(usage, "completion_tokens", None)),
            cached_tokens=_count(getattr(details, "cached_tokens", None)),
            prompt_ms=_finite(prompt_ms),
            latency_s=latency_s,
            finish_reason=finish if isinstance(finish, str) and finish else None,
        )


def _no_content(message: Any, finish: Any, who: str) -> str:
    """The text of a message whose ``content`` is null: its ``refusal`` (what the model said instead), else LLMError
    saying why there is none: a tool call (none was offered: the server or its chat template made one), or the
    finish reason."""
    refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal.strip():
        return refusal
    calls = getattr(message, "tool_calls", None) or []
    names = [str(getattr(getattr(c, "function", None), "name", None) or "?") for c in calls] \
        if isinstance(calls, list) else []
    if names:
        raise LLMError(one_line(f"{who}: the reply is a tool call ({', '.join(names)}) with no text (finish_reason "
                                f"{finish!r}); no tools were offered: the server or its chat template called one"))
    raise LLMError(f"{who}: the reply has no text (content is null, finish_reason {finish!r})")


def _from_event_stream(body: str | bytes, who: str) -> Any:
    """A chat completion put together from a reply streamed as server-sent events (``data: {chunk}`` lines, then
    ``data: [DONE]``) by a server or proxy that streams whether asked or not: the deltas' text joined, the last finish
    reason, the usage a chunk carried. LLMError when the body is no such stream, or the stream reports an error."""
    from types import SimpleNamespace as NS  # noqa: PLC0415, N817

    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    parts: list[str] = []
    tools: list[Any] = []
    finish = model = usage = None
    seen = False
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue  # blank separators, "event:", "id:", ": keep-alive" comments
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            break
        if not isinstance(chunk, dict):
            break
        if "error" in chunk:
            error = chunk["error"]
            said = error.get("message", error) if isinstance(error, dict) else error
            raise LLMError(one_line(f"{who}: the reply's event stream reports an error: {said}"))
        seen = True
        model = chunk.get("model") or model
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, dict):
                if isinstance(delta.get("content"), str):
                    parts.append(delta["content"])
                calls = [t.get("function") for t in delta.get("tool_calls") or [] if isinstance(t, dict)]
                tools += [NS(function=NS(name=c["name"])) for c in calls if isinstance(c, dict) and c.get("name")]
            finish = choice.get("finish_reason") or finish
    if not seen:
        raise LLMError(one_line(f"{who}: malformed reply: neither a chat completion nor an event stream of one: "
                                f"{text[:80]!r}"))
    message = NS(content="".join(parts) if parts or not tools else None, tool_calls=tools, refusal=None)
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    return NS(choices=[NS(message=message, finish_reason=finish)], model=model,
              usage=NS(prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                       prompt_tokens_details=NS(cached_tokens=details.get("cached_tokens"))
                       if isinstance(details, dict) else None) if isinstance(usage, dict) else None)


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``'s result, or TimeoutError when it has not returned after ``seconds``: the HTTP client's timeout
    bounds each read, so a server that trickles its reply could hold a request (and a Ctrl+C) for ever. The call runs
    on a daemon thread, which is left to end with its connection when it is given up on."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as is
            box["error"] = exc

    worker = threading.Thread(target=run, name="llm-request", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError
    if "error" in box:
        raise box["error"]
    return box["value"]


def _count(value: Any) -> int | None:
    """A token count a server reported: a whole number >= 0, else None (not counted)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value) if value >= 0 and float(value).is_integer() else None


def _finite(value: Any) -> float | None:
    """A time a server reported: a finite number >= 0, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves does used use using""".split()
)
_CHUNK_LINE = re.compile(r"^\[([^\[\]]+)\]\s+(.+)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> set[str]:
    """Lower-cased alphanumeric words of ``text`` minus stopwords and single characters."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1}


def parse_prompt(user_message: str) -> tuple[list[tuple[str, str]], str]:
    """Split a project-format user message into ``[(chunk_id, text)]`` and the question."""
    head, sep, tail = user_message.rpartition("Question:")
    chunks: list[tuple[str, str]] = []
    other: list[str] = []
    for line in (head if sep else user_message).splitlines():
        match = _CHUNK_LINE.match(line.strip())
        if match:
            chunks.append((match.group(1), match.group(2).strip()))
        else:
            other.append(line)
    question = re.split(r"\n\s*Answer:", tail)[0] if sep else "\n".join(other)
    return chunks, question.strip()


def best_sentence(chunks: list[tuple[str, str]], question: str) -> tuple[int, str, str]:
    """Return ``(overlap, sentence, chunk_id)`` of the context sentence sharing most words with the question."""
    wanted = content_words(question)
    best = (0, "", "")
    for chunk_id, text in chunks:
        for sentence in _SENTENCE_END.split(text):
            overlap = len(wanted & content_words(sentence))
            if overlap > best[0]:
                best = (overlap, sentence.strip(), chunk_id)
    return best


class FakeLLM:
    """A deterministic offline chat model for tests and demos.

    Scripted ``responses`` win first (the first key found in the last user message). Otherwise it
    answers with the context sentence that best overlaps the question, citing its chunk id, or
    refuses with ``REFUSAL`` when fewer than ``min_overlap`` content words are shared.
    """

    def __init__(self, responses: dict[str, str] | None = None, *, min_overlap: int = 2) -> None:
        self.model_id = "fake-llm"
        self.responses = dict(responses or {})
        self.min_overlap = min_overlap
        self.calls: list[Messages] = []

    def chat(
        self, messages: Messages, *, temperature: float = 0.0, max_tokens: int = 256, seed: int = 0
    ) -> LLMResponse:
        """Answer deterministically; decoding settings are accepted and ignored."""
        start = time.perf_counter()
        self.calls.append([dict(m) for m in messages])
        text = self.reply(last_user_message(messages))
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in messages)
        return LLMResponse(
            text=text,
            model=self.model_id,
            prompt_tokens=prompt_words,
            completion_tokens=len(text.split()),
            latency_s=time.perf_counter() - start,
        )

    def reply(self, user_message: str) -> str:
        """The reply text for one user message."""
        for key, scripted in self.responses.items():
            if key in user_message:
                return scripted
        chunks, question = parse_prompt(user_message)
        overlap, sentence, chunk_id = best_sentence(chunks, question)
        if overlap < self.min_overlap:
            return REFUSAL
        return f"{sentence} [{chunk_id}]"


def last_user_message(messages: Messages) -> str:
    """Content of the last ``user`` message ('' when there is none)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""
