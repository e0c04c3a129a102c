"""A disk cache in front of any ChatLLM, for judges: the same model, messages and decoding settings give the
same reply without a second call. The key is everything that changes the output (model id, messages,
temperature, max_tokens, seed) and nothing that does not (timeouts, URLs' retry settings, the order of a fleet's
servers: rag.llm.fleet_name, or a URL's password). Errors are never cached. Safe to share between threads.

A cache never stops a run: a file that is not a cache (damaged, or another program's database) is set aside as
``<name>.damaged-<time>`` and a new one started, with a one-line warning naming both; a cache that cannot be opened
even then (or whose folder cannot be written) leaves the judge uncached, with a warning; an entry that cannot be read
back is a miss (asked again, and overwritten); a read or write that fails mid-run is a miss or an unsaved reply,
warned once."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from corpora.errors import warn
from rag.fleet import redact_urls
from rag.llm import ChatLLM, LLMResponse, one_line
from rag.models import cache_dir

Messages = list[dict[str, str]]


def cache_key(model_id: str, messages: Messages, temperature: float, max_tokens: int, seed: int) -> str:
    """sha256 over a canonical JSON of what determines a chat completion."""
    payload = {"model": model_id, "messages": [{k: str(v) for k, v in sorted(m.items())} for m in messages],
               "temperature": round(float(temperature), 6), "max_tokens": int(max_tokens), "seed": int(seed)}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def default_cache_path() -> Path:
    return cache_dir() / "judge_cache.sqlite"


class _NotACache(sqlite3.DatabaseError):
    """A database file without the cache's table."""


def _connect(path: Path) -> sqlite3.Connection:
    """The cache at ``path``, created when missing; ``sqlite3.DatabaseError`` (not OperationalError) or _NotACache
    when the file is not one; OperationalError or OSError when it cannot be opened (locked, read-only, a folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS chat (key TEXT PRIMARY KEY, model TEXT, response TEXT)")
        conn.commit()
        columns = {row[1] for row in conn.execute("PRAGMA table_info(chat)")}
        if not {"key", "model", "response"} <= columns:
            raise _NotACache(f"its table 'chat' has the columns {sorted(columns)}, not key, model and response")
    except BaseException:
        conn.close()
        raise
    return conn


def _damaged(exc: BaseException) -> bool:
    return isinstance(exc, _NotACache) or type(exc) is sqlite3.DatabaseError  # "file is not a database", "malformed"


def _set_aside(path: Path) -> Path:
    """Move ``path`` (and its -wal and -shm files) to a free ``<name>.damaged-<time>`` name beside it."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):  # a journal of the damaged file must not be replayed into the new one
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, target.with_name(target.name + suffix))
    return target


def _why(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}")


class CachedLLM:
    """Wraps ``llm`` (a ChatLLM) and is one: ``chat()`` answers from sqlite when it can.

    ``hits`` and ``misses`` count lookups since construction (``unreadable``: the misses that found an entry it could
    not read); ``inner`` is the wrapped model; ``uncached`` says why there is no cache (None when there is one)."""

    def __init__(self, llm: ChatLLM, path: str | Path | None = None):
        self.inner = llm
        self.model_id: str = redact_urls(llm.model_id)  # the cache key and the judges' names: never a password
        self.path = Path(path) if path is not None else default_cache_path()
        self.hits = 0
        self.misses = 0
        self.unreadable = 0
        self.uncached: str | None = None
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self._conn: sqlite3.Connection | None = self._open()

    def _open(self) -> sqlite3.Connection | None:
        """The cache's connection: the file as it is, else a new file with the damaged one set aside, else None
        (uncached), each with its one-line warning."""
        try:
            return _connect(self.path)
        except (sqlite3.Error, OSError) as exc:
            if not _damaged(exc):
                self._no_cache(f"judge cache {self.path} cannot be used ({_why(exc)})")
                return None
            why = _why(exc)
        try:
            target = _set_aside(self.path)
        except OSError as exc:
            self._no_cache(f"judge cache {self.path} is damaged ({why}) and cannot be moved aside ({_why(exc)})")
            return None
        try:
            conn = _connect(self.path)
        except (sqlite3.Error, OSError) as exc:
            self._no_cache(f"judge cache {self.path} was damaged ({why}), set aside as {target}, and a new one cannot "
                           f"be made ({_why(exc)})")
            return None
        warn(f"judge cache {self.path} was damaged ({why}): set it aside as {target} and started a new cache there")
        return conn

    def _no_cache(self, message: str) -> None:
        self.uncached = message
        warn(f"{message}: judging without a cache (every call is made, none saved)")

    def _warn_once(self, kind: str, message: str) -> None:
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        warn(message)

    def __getattr__(self, name: str) -> Any:  # base_url, calls, ... of the wrapped model
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def get(self, key: str) -> LLMResponse | None:
        """The cached reply, or None: not cached, not readable (a damaged entry: asked again and overwritten), or the
        cache failed (warned once)."""
        if self._conn is None:
            return None
        try:
            with self._lock:
                row = self._conn.execute("SELECT response FROM chat WHERE key=?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._warn_once("read", f"judge cache {self.path} cannot be read ({_why(exc)}): its replies are asked "
                                    "again")
            return None
        if not row:
            return None
        try:
            return LLMResponse.model_validate_json(row[0])
        except (ValidationError, ValueError, TypeError):
            with self._lock:
                self.unreadable += 1
            self._warn_once("entry", f"judge cache {self.path} holds unreadable entries: they are asked again and "
                                     "overwritten")
            return None

    def put(self, key: str, response: LLMResponse) -> None:
        if self._conn is None:
            return
        try:
            with self._lock:
                self._conn.execute("INSERT OR REPLACE INTO chat VALUES (?, ?, ?)",
                                   (key, self.model_id, response.model_dump_json()))
                self._conn.commit()
        except sqlite3.Error as exc:
            self._warn_once("write", f"judge cache {self.path} cannot be written ({_why(exc)}): replies are used but "
                                     "not saved")

    def chat(self, messages: Messages, *, temperature: float = 0.0, max_tokens: int = 256,
             seed: int = 0) -> LLMResponse:
        key = cache_key(self.model_id, messages, temperature, max_tokens, seed)
        found = self.get(key)
        with self._lock:
            if found is not None:
                self.hits += 1
            else:
                self.misses += 1
        if found is not None:
            return found
        response = self.inner.chat(messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
        self.put(key, response)  # only reached when the call succeeded: errors are never cached
        return response

    def __len__(self) -> int:
        if self._conn is None:
            return 0
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0])

    def close(self) -> None:
        if self._conn is None:
            return
        with self._lock:
            self._conn.close()


def cached(llm: ChatLLM, cache: bool | str | Path | None = True) -> ChatLLM:
    """``llm`` behind a CachedLLM (default path, or the path given), unless it is one already or ``cache`` is falsy."""
    if isinstance(llm, CachedLLM) or not cache:
        return llm
    return CachedLLM(llm, None if cache is True else cache)
