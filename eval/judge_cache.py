"""A disk cache in front of any ChatLLM, for judges: the same model, messages and decoding settings give the
same reply without a second call. The key is everything that changes the output (model id, messages,
temperature, max_tokens, seed) and nothing that does not (timeouts, URLs' retry settings, the order of a fleet's
servers: rag.llm.fleet_name, or a URL's password). Errors are never cached. Safe to share between threads."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from rag.fleet import redact_urls
from rag.llm import ChatLLM, LLMResponse
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


class CachedLLM:
    """Wraps ``llm`` (a ChatLLM) and is one: ``chat()`` answers from sqlite when it can.

    ``hits`` and ``misses`` count lookups since construction; ``inner`` is the wrapped model."""

    def __init__(self, llm: ChatLLM, path: str | Path | None = None):
        self.inner = llm
        self.model_id: str = redact_urls(llm.model_id)  # the cache key and the judges' names: never a password
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS chat (key TEXT PRIMARY KEY, model TEXT, response TEXT)")
            self._conn.commit()

    def __getattr__(self, name: str) -> Any:  # base_url, calls, ... of the wrapped model
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def get(self, key: str) -> LLMResponse | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM chat WHERE key=?", (key,)).fetchone()
        return LLMResponse.model_validate_json(row[0]) if row else None

    def put(self, key: str, response: LLMResponse) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO chat VALUES (?, ?, ?)",
                               (key, self.model_id, response.model_dump_json()))
            self._conn.commit()

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
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def cached(llm: ChatLLM, cache: bool | str | Path | None = True) -> ChatLLM:
    """``llm`` behind a CachedLLM (default path, or the path given), unless it is one already or ``cache`` is falsy."""
    if isinstance(llm, CachedLLM) or not cache:
        return llm
    return CachedLLM(llm, None if cache is True else cache)
