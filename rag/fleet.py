"""Retries, backoff and request accounting for OpenAI-compatible endpoints (one server or a fleet of them).

The math is pure functions (``backoff_delay``, ``parse_retry_after``, ``retry_delay``), unit-tested without a server.
``RequestStats`` counts, thread-safely, what one run sent: requests, retries and final failures, by reason and by
endpoint; it is printed and written into the run folder. ``call_with_retries`` is the one retry loop
(``rag.llm.OpenAIChatLLM`` uses it, rotating round-robin across its endpoints on every attempt)."""
from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt; exponential backoff ``base_delay * 2**attempt`` capped at
    ``max_delay``, with jitter (a ``seed``ed generator: the same seed gives the same delays); a Retry-After header is
    honoured (the wait is at least what the server asked) unless it asks for more than ``max_retry_after``."""

    max_retries: int = 1
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 120.0
    seed: int = 0


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

    spread = ", ".join(f"{u} {c['requests']}" for u, c in d["endpoints"].items()) if len(d["endpoints"]) > 1 else ""
    return (f"requests: {d['requests']} sent, {d['ok']} ok, {d['retries']} retried{kinds(d['retries_by_kind'])}, "
            f"{d['failed']} failed{kinds(d['failed_by_kind'])}, at most {d['max_in_flight']} in flight"
            + (f"; per endpoint: {spread}" if spread else ""))


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


def call_with_retries(attempt: Callable[[int], tuple[str, Callable[[], T]]], policy: RetryPolicy,
                      stats: RequestStats, *, jitter: Callable[[], float], sleep: Callable[[float], None] = time.sleep,
                      ) -> T:
    """Run ``attempt(i)`` (which names the endpoint of try ``i`` and gives the call) until it succeeds, fails with a
    non-retryable error, or ``policy.max_retries`` retries are spent; the last error is raised. Every try, retry and
    final failure is counted in ``stats``."""
    tries = 0
    while True:
        url, call = attempt(tries)
        stats.started(url)
        try:
            result = call()
        except RequestError as exc:
            stats.finished(url, exc)
            delay = retry_delay(tries, exc.retry_after, policy, jitter()) if exc.retryable else None
            if delay is None or tries >= policy.max_retries:
                stats.failed(url, exc.kind)
                if exc.retryable and delay is None:
                    raise RequestError(f"{exc} (the server asked to retry after {exc.retry_after:g} s, over the "
                                       f"{policy.max_retry_after:g} s limit)", kind=exc.kind,
                                       retryable=False) from None
                if exc.retryable and tries:
                    raise RequestError(f"{exc} (after {tries} retr{'y' if tries == 1 else 'ies'})", kind=exc.kind,
                                       retryable=False) from None
                raise
            stats.retried(url, exc.kind, delay)
            sleep(delay)
            tries += 1
            continue
        except BaseException as exc:  # a bug below, or Ctrl+C: the request is over all the same, and it failed
            stats.finished(url, RequestError(str(exc), kind="interrupted", retryable=False))
            stats.failed(url, "interrupted" if isinstance(exc, KeyboardInterrupt) else "internal")
            raise
        stats.finished(url, None)
        return result
