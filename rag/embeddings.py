"""Sentence embeddings: the bundled MiniLM through sentence-transformers (batched, L2-normalised, cached by
content hash) and a deterministic fake for tests. Both share one small interface."""
from __future__ import annotations

import hashlib
import importlib
import logging
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from corpora.digest import folder_digest
from corpora.errors import InputError
from rag import embedding_backends, models


class Embedder(Protocol):
    model_id: str
    dim: int
    normalize: bool
    backend: str  # rag/embedding_backends.BACKENDS; recorded in an index's manifest

    def embed(self, texts: list[str]) -> np.ndarray:  # (n, dim) float32
        ...


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """sqlite store of vectors keyed by (model id, sha256 of the text): unchanged text is never re-embedded."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False)
        self._conn.execute("CREATE TABLE IF NOT EXISTS emb (model TEXT, key TEXT, vec BLOB, PRIMARY KEY (model, key))")

    def get_many(self, model: str, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                q = f"SELECT key, vec FROM emb WHERE model=? AND key IN ({','.join('?' * len(part))})"
                for key, blob in self._conn.execute(q, [model, *part]):
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO emb VALUES (?, ?, ?)",
                [(model, k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
            )
            self._conn.commit()


# sentence-transformers' own logger (its modules' loggers are children of it): it says "Converting SentenceTransformer
# model ... to CrossEncoder." as a warning on every load of a bi-encoder folder as a cross-encoder, which Python's
# last-resort handler prints to stderr when the host configured no logging
ST_LOGGER = "sentence_transformers"


@dataclass(frozen=True)
class _HFOutput:
    """What the model libraries show: transformers' logging verbosity, its progress bars (model loads, "Writing
    model shards" on a save), huggingface_hub's per-group bar settings (which transformers' disable_progress_bar
    clears), and the level of sentence-transformers' logger."""

    verbosity: int
    progress_bar: bool
    hub_bars: dict[str, bool]
    st_level: int


def _hub_bars() -> dict[str, bool]:
    """huggingface_hub's per-group progress-bar settings, the dict itself (its package exports the class ``tqdm``
    under the module's name, hence the lookup by name)."""
    return importlib.import_module("huggingface_hub.utils.tqdm").progress_bar_states


def _hf_output() -> _HFOutput:
    from transformers.utils import logging as hf_logging  # noqa: PLC0415 - lazy: transformers (seconds); the CLI's parser imports this module

    return _HFOutput(hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled(), dict(_hub_bars()),
                     logging.getLogger(ST_LOGGER).level)


def _hush() -> None:
    from transformers.utils import logging as hf_logging  # noqa: PLC0415 - lazy: see _hf_output

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    logging.getLogger(ST_LOGGER).setLevel(logging.ERROR)


def _restore(saved: _HFOutput) -> None:
    from transformers.utils import logging as hf_logging  # noqa: PLC0415 - lazy: see _hf_output

    hf_logging.set_verbosity(saved.verbosity)
    if saved.progress_bar:
        hf_logging.enable_progress_bar()
    bars = _hub_bars()  # the hub's own settings as they were, per group (enable/disable reset them)
    bars.clear()
    bars.update(saved.hub_bars)
    logging.getLogger(ST_LOGGER).setLevel(saved.st_level)


_QUIET_LOCK = threading.Lock()
# loads in progress, and the output state from before ragdoctor silenced it (None: not silenced now)
_quiet: dict[str, Any] = {"depth": 0, "saved": None}


def _silence() -> None:
    """Under _QUIET_LOCK: the state from before saved, unless it is still our silence (another load's, or an older
    caller's that nothing restored); then silenced."""
    now = _hf_output()
    ours = (_quiet["saved"] is not None and now.verbosity == logging.ERROR and not now.progress_bar
            and now.st_level == logging.ERROR)
    if not ours:  # changed since we silenced it (or never silenced): the user's state, to put back
        _quiet["saved"] = now
    _hush()


class _QuietLoading:
    """Entered: one load in progress. The last load in progress to end puts back the state saved before the first
    (two threads loading at once must neither restore each other's silence nor leave it behind)."""

    def __enter__(self) -> None:
        with _QUIET_LOCK:
            _quiet["depth"] += 1
            _silence()  # again: a load that ended since the call may have put the user's state back

    def __exit__(self, *exc: object) -> None:
        with _QUIET_LOCK:
            _quiet["depth"] -= 1
            if _quiet["depth"] == 0 and _quiet["saved"] is not None:
                _restore(_quiet["saved"])
                _quiet["saved"] = None


def quiet_model_loading() -> _QuietLoading:
    """Silence what transformers and sentence-transformers print while a model loads or saves: transformers'
    per-load 'Loading weights' and per-save 'Writing model shards' progress bars and its warnings, and
    sentence-transformers' warnings ('Converting SentenceTransformer model ... to CrossEncoder.'); our own lines report
    the long steps, and errors still raise. ``with quiet_model_loading(): load()`` puts transformers' verbosity and
    progress bars and sentence-transformers' logger level back as they were when the block ends (a host that uses
    these libraries itself keeps its settings). Called without ``with`` it silences until the next such block ends."""
    with _QUIET_LOCK:
        _silence()
    return _QuietLoading()


def _l2_normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


class SentenceTransformerEmbedder:
    """Any local sentence-transformers folder; the model loads on first use. ``backend`` (rag/embedding_backends.py):
    'torch' (fp32) or 'torch-bf16' (bf16 autocast, checked against fp32 on fixed sentences when the model loads)."""

    def __init__(self, model_dir: str | Path, model_id: str, *, batch_size: int = 32, device: str = "auto",
                 cache: EmbeddingCache | None = None, show_progress: bool = False, backend: str = "torch"):
        self.model_dir = str(model_dir)
        self.model_id = model_id
        self.backend = embedding_backends.check_backend_name(backend)
        self.batch_size = batch_size
        self.device = device
        self.cache = cache
        self.normalize = True
        self.show_progress = show_progress
        self._model = None
        self._device = "cpu"
        self._dim: int | None = None
        self.check_cosine: float | None = None  # the backend check's lowest cosine against fp32 (None: fp32 itself)

    @property
    def cache_id(self) -> str:
        """The embedding cache's key for this model and backend (fp32 keeps the plain model id)."""
        fp32 = self.backend == embedding_backends.DEFAULT_BACKEND
        return self.model_id if fp32 else f"{self.model_id}#{self.backend}"

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer  # noqa: PLC0415 - lazy: torch (seconds), on first use

            device = self.device
            if device == "auto":
                import torch  # noqa: PLC0415 - lazy: see above

                device = "cuda" if torch.cuda.is_available() else "cpu"
            with quiet_model_loading():
                self._model = SentenceTransformer(self.model_dir, device=device, local_files_only=True)
            self._device = device
            self.check_cosine = embedding_backends.verify_backend(
                self.model_id, self.backend, device,
                fp32=lambda t: self._run(t, embedding_backends.DEFAULT_BACKEND),
                candidate=lambda t: self._run(t, self.backend))
        return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            model = self.model
            get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dim = int(get_dim())
        return self._dim

    @property
    def tokenizer_dir(self) -> str:
        return self.model_dir

    def _run(self, texts: list[str], backend: str) -> np.ndarray:
        assert self._model is not None
        with embedding_backends.autocast(backend, self._device):
            vecs = self._model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=self.show_progress and len(texts) > 64)
        vecs = np.asarray(vecs, dtype=np.float32)
        return vecs if backend == embedding_backends.DEFAULT_BACKEND else _l2_normalize(vecs)

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.model  # noqa: B018 - loads (and checks the backend) on first use
        return self._run(texts, self.backend)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.cache is None:
            return self._encode(texts)
        keys = [text_key(t) for t in texts]
        found = self.cache.get_many(self.cache_id, list(set(keys)))
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing:
            by_key = {k: t for k, t in zip(keys, texts)}
            vecs = self._encode([by_key[k] for k in missing])
            new = dict(zip(missing, vecs))
            self.cache.put_many(self.cache_id, new)
            found.update(new)
        return np.stack([found[k] for k in keys]).astype(np.float32)


_WORD = re.compile(r"[a-z0-9]+")


class FakeEmbedder:
    """Deterministic hashed bag-of-words vectors: no model, same output everywhere; for tests."""

    tokenizer_dir = None

    def __init__(self, dim: int = 256, model_id: str = "fake-embedder"):
        self.dim = dim
        self.model_id = f"{model_id}-{dim}"
        self.normalize = True
        self.backend = embedding_backends.DEFAULT_BACKEND

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            if not out[i].any():
                out[i, 0] = 1.0
        return _l2_normalize(out)


def make_embedder(model: str = "minilm", *, batch_size: int = 32, device: str = "auto", use_cache: bool = True,
                  backend: str = "torch"):
    """'minilm' (the bundled default), 'fake', or the path of a sentence-transformers folder; ``backend``: how it runs
    (rag/embedding_backends.py; the fake embedder has only 'torch')."""
    if model == "fake":
        if backend != embedding_backends.DEFAULT_BACKEND:
            raise InputError(None, f"the fake embedder has no backend {backend!r} (only 'torch')",
                             field="embedding.backend")
        return FakeEmbedder()
    cache = EmbeddingCache(models.cache_dir() / "embeddings.sqlite") if use_cache else None
    if model == "minilm":
        return SentenceTransformerEmbedder(models.minilm_path(), models.MINILM_ID, batch_size=batch_size,
                                           device=device, cache=cache, backend=backend)
    path = Path(model)
    if not (path / "modules.json").exists() and not (path / "config.json").exists():
        raise InputError(path, "not a sentence-transformers model folder (no modules.json/config.json)",
                         field="embedding.model")
    # the folder's contents name it, not only its path: weights retrained or replaced in place are another embedder
    # (the index is rebuilt, the embedding cache missed), never vectors of two models in one index
    model_id = f"st:{path.resolve()}@{folder_digest(path)}"
    return SentenceTransformerEmbedder(path, model_id, batch_size=batch_size, device=device, cache=cache,
                                       backend=backend)
