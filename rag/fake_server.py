"""A real loopback HTTP server that speaks the OpenAI chat API, answering with a fake model.

It makes the HTTP path (``OpenAIChatLLM``, ragas/langchain clients, guardrails) testable without
a model. ``fail_next`` makes the next N chat calls fail: HTTP 500, or, with ``garbage=True``, a
200 reply whose body is not JSON.

Faults for the concurrency and fleet tests, deterministic: ``faults`` is a schedule consumed one entry per chat
request in arrival order ("ok", "500", "503", "429" or "429:<Retry-After value>", "drop": the connection is closed
without a reply); ``always`` fails every request so (a dead endpoint); ``latency`` seconds are spent on every chat
request. Odd but well-formed replies, also schedule entries: "empty" (200 with ``choices: []``), "null" (200 whose
message has ``content: null`` and a tool call), "refusal" (``content: null`` and a ``refusal`` text), "sse" (200 with
an event stream though none was asked for), "nousage" (200 without ``usage``), "404" (the model is unknown, as
OpenAI and vLLM say it). ``models_served`` (a set of names): a request naming another model gets that 404.
``root_routes`` False serves the API under /v1 only, as vLLM and Ollama do (True: also at the root, as llama.cpp).
``paths`` holds each chat request's path as sent, its query included.
``received``, ``served``, ``in_flight`` and ``max_in_flight`` are counted on the server side; ``served``
counts only chat completions actually returned, and every counter is settled before the reply is written, so a
client that has read its reply sees them up to date. ``rendezvous`` (a ``Rendezvous``, one server's or shared by a
fleet) holds chat requests until that many are in flight at once: a test of concurrency waits for the overlap it
asserts instead of hoping a latency is long enough for it on a loaded machine.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rag.llm import ChatLLM, FakeLLM


class Rendezvous:
    """Hold each arriving request until ``parties`` of them are held at once, then let them all through, and every
    later one without waiting. A client that never has that many in flight is waited for ``timeout`` seconds, once;
    then everything passes (and the overlap the test asserts is missing)."""

    def __init__(self, parties: int, timeout: float = 60.0) -> None:
        self.parties, self.timeout = parties, timeout
        self.met: bool | None = None  # None: still gathering; True: that many were held at once; False: timed out
        self._held = 0
        self._cond = threading.Condition()

    def wait(self) -> None:
        with self._cond:
            if self.met is not None:
                return
            self._held += 1
            if self._held >= self.parties:
                self.met = True
            elif not self._cond.wait_for(lambda: self.met is not None, timeout=self.timeout):
                self.met = False
            self._cond.notify_all()


class FakeOpenAIServer:
    """Context manager serving ``/v1/chat/completions`` and ``/v1/models`` on 127.0.0.1."""

    def __init__(self, llm: ChatLLM | None = None, *, model_name: str = "fake-llm", port: int = 0) -> None:
        self.llm: ChatLLM = llm or FakeLLM()
        self.model_name = model_name
        self.fail_next = 0
        self.garbage = False
        self.requests: list[dict[str, Any]] = []
        self.faults: list[str] = []
        self.always: str | None = None
        self.latency = 0.0
        self.models_served: set[str] | None = None
        self.root_routes = True
        self.paths: list[str] = []
        self.rendezvous: Rendezvous | None = None
        self.received = 0
        self.served = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._port = port
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` of the running server."""
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> str:
        """Bind loopback, serve in a daemon thread, and return the base URL."""
        if self._httpd is None:
            self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), _make_handler(self))
            self._httpd.daemon_threads = True
            self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
            self._thread.start()
        return self.base_url

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd, self._thread = None, None

    def __enter__(self) -> FakeOpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def take_failure(self) -> bool:
        """True (and count it down) when the current call should fail."""
        with self._lock:
            if self.fail_next > 0:
                self.fail_next -= 1
                return True
            return False

    def arrive(self) -> str:
        """Count one chat request in and return its fault ("ok" when none is scheduled)."""
        with self._lock:
            self.received += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.always:
                return self.always
            return self.faults.pop(0) if self.faults else "ok"

    def leave(self, ok: bool) -> None:
        with self._lock:
            self.in_flight -= 1
            self.served += ok

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer one chat request body with an OpenAI-shaped ``chat.completion`` object."""
        self.requests.append(body)
        response = self.llm.chat(
            body["messages"],
            temperature=float(body.get("temperature") or 0.0),
            max_tokens=int(body.get("max_tokens") or 256),
            seed=int(body.get("seed") or 0),
        )
        prompt, completion = response.prompt_tokens or 0, response.completion_tokens or 0
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": response.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    def models(self) -> dict[str, Any]:
        """The ``/v1/models`` listing: one model."""
        return {"object": "list",
                "data": [{"id": self.model_name, "object": "model", "created": 0, "owned_by": "ragdoctor"}]}


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    """Build a request handler class bound to ``server``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms Nagle stalls
            self._open_chat = False  # a chat request counted in by arrive() and not yet settled

        def _settle(self, served: bool) -> None:
            """Count the open chat request out, once. Called before its reply is written, so a client that has
            read the reply always sees the server's counters already updated."""
            if self._open_chat:
                self._open_chat = False
                server.leave(served)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr logging
            return

        def do_GET(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            if path == "/v1/models" or (server.root_routes and path == "/models"):
                self._send(200, server.models())
            elif path in ("/health", "/v1/health"):
                self._send(200, {"status": "ok"})
            else:
                self._send(404, _error(f"no route for GET {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?")[0].rstrip("/")
            if path != "/v1/chat/completions" and not (server.root_routes and path == "/chat/completions"):
                self._send(404, _error(f"no route for POST {self.path}", "not_found"))
                return
            server.paths.append(self.path)
            fault = server.arrive()
            self._open_chat = True
            try:
                if server.rendezvous is not None:  # counted in flight while it waits for the others
                    server.rendezvous.wait()
                if server.latency:
                    time.sleep(server.latency)
                if fault in _SHAPES:  # a complete reply, of an odd shape
                    self._chat(raw, fault)
                    return
                if fault == "drop":  # no reply at all: the client sees the connection close
                    self._settle(False)
                    self.close_connection = True
                    return
                status, _, retry_after = fault.partition(":")
                headers = {"Retry-After": retry_after} if retry_after else {}
                kind = "rate_limit_exceeded" if status == "429" else "server_error"
                self._send(int(status), _error(f"injected {status}", kind), headers)
            finally:
                self._settle(False)  # no-op once a reply settled it

        def _chat(self, raw: bytes, shape: str = "ok") -> None:
            if server.take_failure():
                if server.garbage:
                    self._send_raw(200, b"<html>this is not json", "application/json")
                else:
                    self._send(500, _error("injected failure", "server_error"))
                return
            try:
                body = json.loads(raw)
                if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                    raise ValueError("'messages' must be a list")
            except ValueError as exc:
                self._send(400, _error(f"bad request: {exc}", "invalid_request_error"))
                return
            model = body.get("model")
            if shape == "404" or (server.models_served is not None and model not in server.models_served):
                self._send(404, _error(f"The model `{model}` does not exist or you do not have access to it.",
                                       "invalid_request_error", code="model_not_found"))
                return
            try:
                reply = server.completion(body)
            except Exception as exc:  # the wrapped model failed: report it like a real server would
                self._send(500, _error(f"{type(exc).__name__}: {exc}", "server_error"))
                return
            if shape == "sse":
                self._send_raw(200, _event_stream(reply), "text/event-stream", served=True)
                return
            self._send(200, _reshape(reply, shape), served=True)

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None,
                  served: bool = False) -> None:
            self._send_raw(status, json.dumps(payload).encode(), "application/json", headers, served)

        def _send_raw(self, status: int, data: bytes, content_type: str,
                      headers: dict[str, str] | None = None, served: bool = False) -> None:
            self._settle(served)
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            try:
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up first (its timeout): nothing to send
                pass

    return Handler


_SHAPES = frozenset({"ok", "empty", "null", "refusal", "sse", "nousage", "404"})


def _reshape(reply: dict[str, Any], shape: str) -> dict[str, Any]:
    """``reply`` as a server of odd habits sends it (see the module's docstring)."""
    message = reply["choices"][0]["message"]
    if shape == "empty":
        reply["choices"] = []
    elif shape == "null":
        message["content"] = None
        message["tool_calls"] = [{"id": "call_1", "type": "function",
                                  "function": {"name": "search", "arguments": "{}"}}]
        reply["choices"][0]["finish_reason"] = "tool_calls"
    elif shape == "refusal":
        message["content"], message["refusal"] = None, "I'm sorry, I cannot help with that."
    elif shape == "nousage":
        del reply["usage"]
    return reply


def _event_stream(reply: dict[str, Any]) -> bytes:
    """``reply`` as server-sent events, the way a streaming server sends it: one delta per word, then [DONE]."""
    head = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    words = reply["choices"][0]["message"]["content"].split(" ")
    events = [head | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    events += [head | {"choices": [{"index": 0, "delta": {"content": w if i == 0 else " " + w},
                                    "finish_reason": None}]} for i, w in enumerate(words)]
    events.append(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def _error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """An OpenAI-shaped error body."""
    return {"error": {"message": message, "type": kind, "code": code}}
