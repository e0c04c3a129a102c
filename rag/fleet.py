"""Retries, backoff and request accounting for OpenAI-compatible endpoints (one server or a fleet of them).

The math is pure functions (``backoff_delay``, ``parse_retry_after``, ``retry_delay``), unit-tested without a server.
``RequestStats`` counts, thread-safely, what one run sent: requests, retries and final failures, by reason and by
endpoint; it is printed and written into the run folder. ``Endpoints`` is a fleet's rotation and which of its servers
must be stepped around (refused a connection a moment ago, or asked to be left alone: Retry-After).
``call_with_retries`` is the one retry loop (``rag.llm.OpenAIChatLLM`` uses it). ``public_url`` is a URL as it may be
shown or recorded: without the user and password it may carry."""
from __future__ import annotations

import itertools
import math
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
FAILOVER_KINDS = frozenset({"connection"})  # refused, reset, unknown host: tried elsewhere before a retry is spent
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")
_QUERY = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s?#'\"]*)[?#][^\s'\"]*")


def public_url(url: str) -> str:
    """``url`` without the user and password it may carry (``http://u:pw@h/v1`` -> ``http://h/v1``) and without its
    query (``?api_key=...``: a key goes there too) or fragment: the one form a URL is shown, logged, recorded or hashed
    in; the client alone keeps the full one. A URL with none of them is returned as written, so names and config
    hashes made from it are what they were."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_urls(url)
    if "@" not in parts.netloc and not parts.query and not parts.fragment and not url.endswith(("?", "#")):
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment=""))


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its query and fragment (and without a trailing slash), and the query's parameters: what an
    OpenAI client takes as its base URL and as the parameters it adds to every request."""
    parts = urlsplit(url)
    return (urlunsplit(parts._replace(query="", fragment="")).rstrip("/"),
            dict(parse_qsl(parts.query, keep_blank_values=True)))


def redact_urls(text: str) -> str:
    """``text`` with the user and password, and the query, taken out of every URL in it (an error message may quote
    one)."""
    return _QUERY.sub(r"\1", _USERINFO.sub(r"\1", text))


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt; exponential backoff ``base_delay * 2**attempt`` capped at
    ``max_delay``, with jitter (a ``seed``ed generator: the same seed gives the same delays); a Retry-After header is
    honoured (the wait is at least what the server asked) unless it asks for more than ``max_retry_after``; a fleet
    steps around an endpoint that refused a connection for ``cooldown`` seconds (``Endpoints``)."""

    max_retries: int = 1
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 120.0
    seed: int = 0
    cooldown: float = 5.0  # seconds a fleet steps around an endpoint that refused a connection (Endpoints)


def backoff_delay(attempt: int, base: float, cap: float, u: float) -> float:
    """The wait before retry number ``attempt + 1`` (``attempt`` 0 is the first retry): "equal jitter", half of
    ``min(cap, base * 2**attempt)`` fixed plus up to as much again by ``u`` in [0, 1)."""
    ceiling = min(cap, base * 2.0 ** min(attempt, 60))
    return ceiling / 2.0 + ceiling / 2.0 * min(max(u, 0.0), 1.0)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds ("3", also "0.5") or an HTTP-date (the seconds from
    ``now`` until then, 0 when it has passed). None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_delay(attempt: int, retry_after: float | None, policy: RetryPolicy, u: float) -> float | None:
    """The wait before the next attempt: the server's Retry-After when it sent one, else the jittered backoff; None
    when the server asked for longer than ``policy.max_retry_after`` (the request then fails now, with that reason)."""
    if retry_after is None:
        return backoff_delay(attempt, policy.base_delay, policy.max_delay, u)
    if retry_after > policy.max_retry_after:
        return None
    return retry_after  # the server said when: no sooner, and no later


class RequestError(Exception):
    """One failed attempt: ``kind`` (``http_429``, ``http_500``, ``connection``, ``timeout``, ``malformed`` ...),
    whether another attempt may succeed, the server's Retry-After in seconds, and a one-line message."""

    def __init__(self, message: str, *, kind: str, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.kind, self.retryable, self.retry_after = kind, retryable, retry_after


@dataclass
class _EndpointCount:
    requests: int = 0
    ok: int = 0
    retried: int = 0
    failed: int = 0


@dataclass
class RequestStats:
    """What one run sent, thread-safe: attempts, successes, retries and final failures (by kind and endpoint)."""

    requests: int = 0
    ok: int = 0
    retries: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    endpoints: dict[str, _EndpointCount] = field(default_factory=dict)
    waited_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _endpoint(self, url: str) -> _EndpointCount:
        return self.endpoints.setdefault(url, _EndpointCount())

    def started(self, url: str) -> None:
        with self._lock:
            self.requests += 1
            self._endpoint(url).requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def finished(self, url: str, error: RequestError | None) -> None:
        with self._lock:
            self.in_flight -= 1
            if error is None:
                self.ok += 1
                self._endpoint(url).ok += 1

    def retried(self, url: str, kind: str, waited: float) -> None:
        with self._lock:
            self.retries[kind] = self.retries.get(kind, 0) + 1
            self._endpoint(url).retried += 1
            self.waited_s += waited

    def failed(self, url: str, kind: str) -> None:
        with self._lock:
            self.failures[kind] = self.failures.get(kind, 0) + 1
            self._endpoint(url).failed += 1

    @property
    def n_retries(self) -> int:
        return sum(self.retries.values())

    @property
    def n_failures(self) -> int:
        return sum(self.failures.values())

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": self.requests, "ok": self.ok, "retries": self.n_retries,
                    "retries_by_kind": dict(sorted(self.retries.items())), "failed": self.n_failures,
                    "failed_by_kind": dict(sorted(self.failures.items())), "waited_s": round(self.waited_s, 3),
                    "max_in_flight": self.max_in_flight,
                    "endpoints": {u: vars(c).copy() for u, c in self.endpoints.items()}}

    def render(self) -> str:
        return render_requests(self.as_dict())


def merge_request_counts(counts: list[dict[str, Any]]) -> dict[str, Any]:
    """Several ``RequestStats.as_dict()`` (one per Ray worker) as one: counts added, by kind and by endpoint;
    the most requests in flight is the largest any one client had."""
    out: dict[str, Any] = {"requests": 0, "ok": 0, "retries": 0, "retries_by_kind": {}, "failed": 0,
                           "failed_by_kind": {}, "waited_s": 0.0, "max_in_flight": 0, "endpoints": {}}
    for c in counts:
        for key in ("requests", "ok", "retries", "failed", "waited_s"):
            out[key] += c.get(key, 0)
        out["max_in_flight"] = max(out["max_in_flight"], c.get("max_in_flight", 0))
        for key in ("retries_by_kind", "failed_by_kind"):
            for kind, n in c.get(key, {}).items():
                out[key][kind] = out[key].get(kind, 0) + n
        for url, ep in c.get("endpoints", {}).items():
            mine = out["endpoints"].setdefault(url, {})
            for k, n in ep.items():
                mine[k] = mine.get(k, 0) + n
    out["waited_s"] = round(out["waited_s"], 3)
    for key in ("retries_by_kind", "failed_by_kind"):
        out[key] = dict(sorted(out[key].items()))
    return out


def render_requests(d: dict[str, Any]) -> str:
    """One line from ``RequestStats.as_dict()``: 'requests: 40 sent, 37 ok, 3 retried (http_429 2, connection 1),
    0 failed'; with several endpoints, how many went to each."""

    def kinds(by: dict[str, int]) -> str:
        return f" ({', '.join(f'{k} {n}' for k, n in by.items())})" if by else ""

    fleet = d["endpoints"] if len(d["endpoints"]) > 1 else {}
    spread = ", ".join(f"{u} {c['requests']}" for u, c in fleet.items())
    # a node of a fleet that answered nothing while others did: down for the run, which went on without it
    silent = [u for u, c in fleet.items() if c.get("requests") and not c.get("ok")] if d["ok"] else []
    return (f"requests: {d['requests']} sent, {d['ok']} ok, {d['retries']} retried{kinds(d['retries_by_kind'])}, "
            f"{d['failed']} failed{kinds(d['failed_by_kind'])}, at most {d['max_in_flight']} in flight"
            + (f"; per endpoint: {spread}" if spread else "")
            + (f"; no reply from {', '.join(silent)} (the run went on with the others)" if silent else ""))


@dataclass
class Jitter:
    """A seeded, thread-safe source of uniform draws in [0, 1) for the backoff's jitter."""

    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def __call__(self) -> float:
        with self._lock:
            return self._rng.random()


class Endpoints:
    """A client's ``n`` endpoints in round-robin order, and which of them to step around: one that refused a connection
    is skipped for ``cooldown`` seconds while another may be asked (a dead node of a fleet would otherwise take every
    request sent its way, and spend its retry); one that sent a Retry-After is not asked again before that time by a
    retry (the header speaks for that server alone: a retry that goes elsewhere does not wait for it). Thread-safe."""

    def __init__(self, n: int = 1, *, cooldown: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.n, self.cooldown, self._clock = max(1, n), cooldown, clock
        self._turn = itertools.count()  # atomic under the GIL: round-robin across threads
        self._skip_until: dict[int, float] = {}  # refused a connection: skipped while another endpoint is free
        self._not_before: dict[int, float] = {}  # sent a Retry-After: a retry going there waits until then
        self._lock = threading.Lock()

    def refused(self, k: int) -> None:
        """Endpoint ``k`` could not be reached: step around it for ``cooldown`` seconds."""
        with self._lock:
            self._skip_until[k] = self._clock() + self.cooldown

    def wait_asked(self, k: int, seconds: float) -> None:
        """Endpoint ``k`` asked (Retry-After) not to be sent anything for ``seconds``."""
        with self._lock:
            self._not_before[k] = max(self._not_before.get(k, 0.0), self._clock() + seconds)

    def wait_for(self, k: int) -> float | None:
        """Seconds a retry must still wait before asking endpoint ``k`` (None: it may be asked now)."""
        with self._lock:
            left = self._not_before.get(k, 0.0) - self._clock()
        return left if left > 0 else None

    def first(self) -> int:
        """The endpoint of a request's first try: the next in turn, or the first after it that nothing says to step
        around (the next in turn when every one is to be stepped around: it is asked all the same)."""
        return self._best(next(self._turn) % self.n)

    def failover(self, after: int, tried: set[int]) -> int | None:
        """After a connection error at ``after``: the next endpoint not ``tried`` yet that may be asked now, None when
        there is none (the retry budget is spent then)."""
        with self._lock:
            now = self._clock()
            for k in self._order(after + 1):
                if k not in tried and not self._skipped(k, now) and self._not_before.get(k, 0.0) <= now:
                    return k
        return None

    def retry(self, after: int) -> int:
        """The endpoint of a retry after one at ``after`` failed: the next in turn that may be asked now, else the one
        that may be asked soonest (``after`` itself last: a single server is retried where it is)."""
        return self._best((after + 1) % self.n)

    def _best(self, start: int) -> int:
        """From ``start`` on in turn, the first endpoint that may be asked soonest, one not to step around first."""
        with self._lock:
            now = self._clock()
            return min(self._order(start),
                       key=lambda k: (max(0.0, self._not_before.get(k, 0.0) - now), self._skipped(k, now)))

    def _order(self, start: int) -> list[int]:
        return [(start + i) % self.n for i in range(self.n)]

    def _skipped(self, k: int, now: float) -> bool:
        return self._skip_until.get(k, 0.0) > now


def call_with_retries(attempt: Callable[[int], tuple[str, Callable[[], T]]], policy: RetryPolicy,
                      stats: RequestStats, *, jitter: Callable[[], float], sleep: Callable[[float], None] = time.sleep,
                      endpoints: Endpoints | None = None) -> T:
    """Run ``attempt(k)`` (which names endpoint ``k`` of ``endpoints`` and gives the call to it; one endpoint, 0, when
    none are given) until it succeeds, fails with a non-retryable error, or ``policy.max_retries`` retries are spent;
    the last error is raised. A connection error first tries the other endpoints, each once, without spending a retry
    or waiting (a dead node must not fail the requests that meet it first); a spent retry goes to the next endpoint
    after a jittered backoff, or after what that endpoint's own Retry-After asked. Every try, retry and final failure
    is counted in ``stats`` (a failover is a retry there, with no wait)."""
    ring = endpoints or Endpoints(1)
    tries = 0  # retries spent
    k = ring.first()
    tried: set[int] = set()  # endpoints tried since the last spent retry: each at most once per attempt
    while True:
        url, call = attempt(k)
        stats.started(url)
        try:
            result = call()
        except RequestError as exc:
            stats.finished(url, exc)
            tried.add(k)
            if exc.kind in FAILOVER_KINDS:
                ring.refused(k)
            if exc.retry_after is not None:
                ring.wait_asked(k, exc.retry_after)
            other = ring.failover(k, tried) if exc.retryable and exc.kind in FAILOVER_KINDS else None
            if other is not None:
                stats.retried(url, exc.kind, 0.0)
                k = other
                continue
            nxt = ring.retry(k) if exc.retryable else k
            wait = exc.retry_after if nxt == k else ring.wait_for(nxt)  # the server said when: its own, exactly
            delay = retry_delay(tries, wait, policy, jitter()) if exc.retryable else None
            if delay is None or tries >= policy.max_retries:
                stats.failed(url, exc.kind)
                raise _final(exc, tries, wait if delay is None else None, policy) from None
            stats.retried(url, exc.kind, delay)
            sleep(delay)
            tries += 1
            k, tried = nxt, set()
            continue
        except BaseException as exc:  # a bug below, or Ctrl+C: the request is over all the same, and it failed
            stats.finished(url, RequestError(str(exc), kind="interrupted", retryable=False))
            stats.failed(url, "interrupted" if isinstance(exc, KeyboardInterrupt) else "internal")
            raise
        stats.finished(url, None)
        return result


def _final(exc: RequestError, tries: int, too_long: float | None, policy: RetryPolicy) -> RequestError:
    """The error a request ends with: ``exc`` itself, or saying it was retried, or that the wait asked was too long."""
    if not exc.retryable:
        return exc
    if too_long is not None:
        return RequestError(f"{exc} (the server asked to retry after {too_long:g} s, over the "
                            f"{policy.max_retry_after:g} s limit)", kind=exc.kind, retryable=False)
    if tries:
        return RequestError(f"{exc} (after {tries} retr{'y' if tries == 1 else 'ies'})", kind=exc.kind,
                            retryable=False)
    return exc
