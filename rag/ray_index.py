"""``ragdoctor index --engine ray``: the chunks are embedded by Ray Data actors (each loads the embedder once, on its
GPU when it was given one) and the faiss index is built on the driver from the shards as they arrive, in corpus order.

The embedding cache is the driver's, as the local engine's embedder uses it: the driver looks every chunk up, sends
only the texts it lacks (each distinct text once) through Ray Data and stores their vectors as each shard arrives
(one writer: the workers never open the sqlite file, which is neither shared between nodes nor written safely by many
processes at once), so a rebuild after one file changed embeds only that file's chunks, and a killed build keeps what
it embedded.

Up to ``max_train`` chunks the driver holds every vector and builds exactly what the local engine builds
(rag/faiss_index.build on the same vectors). Past it, a trained kind (IVF, IVF-PQ, SQ8) is trained on a random sample
of ``max_train`` chunks (embedded first) and the shards are added to it one by one (faiss's ``Index.add`` in shards),
so the driver never holds more than one shard of float vectors besides the index itself (IVF-PQ keeps only codes);
flat and HNSW indexes need no training and are filled shard by shard too. With ``index.on_disk`` (IVF kinds) the index
itself need not fit in memory either: each shard goes into an empty clone of the trained index, written to its own
file, and the shards' inverted lists are merged into one file that searches mmap (rag/ondisk_index.py). The manifest,
the files and every check on load are those of a local build (rag/store.py)."""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpora.errors import UsageError
from rag import faiss_index, ondisk_index
from rag.config import IndexConfig
from rag.embeddings import make_embedder, text_key
from rag.ray_runtime import actor_map, check_address, dataset_options, ray_module, ray_session, worker_rows

__all__ = ["EmbedWorker", "RayDense"]

LOOKUP = 4096  # chunks looked up in the embedding cache at once


class EmbedWorker:
    """A Ray Data actor: builds the embedder once (without the cache: the driver keeps it); embeds one shard of texts
    per row (``texts``: a JSON list) into ``vectors`` (float32 bytes) with its ``start`` position kept."""

    def __init__(self, model: str, batch_size: int, device: str, backend: str = "torch"):
        self.embedder = make_embedder(model, batch_size=batch_size, device=device, use_cache=False, backend=backend)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vecs = [np.ascontiguousarray(self.embedder.embed(json.loads(t)), dtype=np.float32) for t in batch["texts"]]
        return {"start": batch["start"], "vectors": np.array([v.tobytes() for v in vecs], dtype=object),
                "dim": np.array([v.shape[1] for v in vecs])}


@dataclass
class RayDense:
    """Builds the dense index for ``texts`` on Ray (see the module's docstring). ``model``, ``batch_size`` and
    ``device`` are the embedding settings (rag/config.EmbeddingConfig), given by value so the workers build the same
    embedder. ``shard_size``: texts per task (a multiple of the batch size keeps the batches of a local build)."""

    model: str
    batch_size: int = 32
    device: str = "auto"
    backend: str = "torch"
    address: str | None = None
    num_workers: int = 1
    gpus_per_worker: float = 0.0
    shard_size: int = 4096
    max_train: int = 262_144
    seed: int = 0
    init: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.num_workers < 1:
            raise UsageError(f"--num-workers must be at least 1, got {self.num_workers}")
        if self.gpus_per_worker < 0:
            raise UsageError(f"--gpus-per-worker must be 0 or more, got {self.gpus_per_worker:g}")
        ray_module()
        check_address(self.address)

    def __call__(self, texts: Sequence[str], cfg: IndexConfig, folder: Path | None = None):
        """The index of ``texts``; with ``cfg.on_disk`` its inverted lists are written into ``folder``."""
        if cfg.on_disk and folder is None:
            raise ValueError("an on-disk index needs the folder its lists are written into")
        cache = self.cache()
        with ray_session(self.address, self.init, self.gpus_per_worker) as ray:
            return self._build(ray, list(texts), cfg, folder, cache)

    def cache(self) -> tuple[Any, str] | None:
        """The driver's embedding cache and this embedder's key in it, as a local build's embedder has them (None for
        an embedder without one: the fake)."""
        emb = make_embedder(self.model, batch_size=self.batch_size, device=self.device, backend=self.backend)
        store = getattr(emb, "cache", None)  # the model itself loads only on first use: not here
        return None if store is None else (store, emb.cache_id)

    def shard_for(self, n: int) -> int:
        """Texts per task: ``shard_size``, smaller for a small corpus so every worker gets about four shards, a
        multiple of the embedding batch size either way."""
        per_worker = -(-n // (self.num_workers * 4))
        size = min(self.shard_size, -(-per_worker // self.batch_size) * self.batch_size)
        return max(1, size)

    def _shards(self, ray: Any, texts: list[str], positions: Sequence[int] | None = None,
                cache: tuple[Any, str] | None = None) -> Iterator[np.ndarray]:
        """The vectors of ``texts`` (or of those at ``positions``), one shard at a time, in order: from ``cache`` where
        it has them, the rest embedded by the workers (each distinct text once) and stored in it as they arrive."""
        idx = list(range(len(texts))) if positions is None else list(positions)
        if cache is None:
            yield from self._embedded(ray, texts, idx)
            return
        store, model = cache
        keys = [text_key(texts[i]) for i in idx]
        todo: list[int] = []  # the positions to embed: each text the cache lacks, once, in corpus order
        queued: set[str] = set()
        for s in range(0, len(idx), LOOKUP):
            found = store.get_many(model, list(set(keys[s : s + LOOKUP])))
            for i, key in zip(idx[s : s + LOOKUP], keys[s : s + LOOKUP]):
                if key not in found and key not in queued:
                    queued.add(key)
                    todo.append(i)
        del queued
        fresh = self._embedded(ray, texts, todo)
        done = 0  # of ``todo``: embedded and stored by now
        size = self.shard_for(len(idx))
        for s in range(0, len(idx), size):
            part = keys[s : s + size]
            got = store.get_many(model, list(set(part)))
            while any(k not in got for k in part):  # the next shard of new vectors: stored, then read from it
                vecs = next(fresh)
                new = {text_key(texts[i]): v for i, v in zip(todo[done : done + len(vecs)], vecs)}
                store.put_many(model, new)
                got.update(new)
                done += len(vecs)
            yield np.stack([got[k] for k in part]).astype(np.float32)
        for _ in fresh:  # nothing is left: this ends the workers' stream
            raise RuntimeError("the workers embedded more texts than the index needed")

    def _embedded(self, ray: Any, texts: list[str], idx: list[int]) -> Iterator[np.ndarray]:
        """The vectors of the texts at ``idx`` embedded by the Ray Data actors, one shard at a time, in order."""
        if not idx:
            return
        size = self.shard_for(len(idx))
        rows = [{"start": s, "texts": json.dumps([texts[i] for i in idx[s : s + size]])}
                for s in range(0, len(idx), size)]
        # one shard per block, handed on in input order: faiss ids are corpus positions
        ds = dataset_options(ray.data.from_items(rows, override_num_blocks=len(rows)), preserve_order=True)
        ds = actor_map(ds, EmbedWorker, num_workers=min(self.num_workers, len(rows)),
                       gpus_per_worker=self.gpus_per_worker,
                       fn_constructor_args=(self.model, self.batch_size, self.device, self.backend))
        expect = 0
        for row in worker_rows(ds, "a Ray worker could not embed (nothing was written)"):
            if int(row["start"]) != expect:
                raise RuntimeError(f"shard at {row['start']} arrived where {expect} was expected")
            vecs = np.frombuffer(row["vectors"], dtype=np.float32).reshape(-1, int(row["dim"]))
            expect += len(vecs)
            yield vecs
        if expect != len(idx):
            raise RuntimeError(f"{expect} vectors came back for {len(idx)} texts")

    def _build(self, ray: Any, texts: list[str], cfg: IndexConfig, folder: Path | None,
               cache: tuple[Any, str] | None = None):
        n = len(texts)
        if n <= self.max_train:  # every vector on the driver: exactly the local build
            vectors = np.concatenate(list(self._shards(ray, texts, cache=cache)))
            return faiss_index.build(vectors, cfg) if folder is None else ondisk_index.build(vectors, cfg, folder)
        import faiss  # noqa: PLC0415 - rag.faiss_index imports it already; named here for the factory call

        sample = np.sort(np.random.default_rng(self.seed).choice(n, self.max_train, replace=False))
        train = np.concatenate(list(self._shards(ray, texts, sample.tolist(), cache)))
        if folder is not None:  # on disk: each shard into its own file, the lists merged into one at the end
            writer = ondisk_index.ShardWriter(ondisk_index.empty_trained(train, cfg, n), folder)
            del train
            for vecs in self._shards(ray, texts, cache=cache):
                writer.add(vecs)
            return writer.finish()
        dim = int(train.shape[1])
        index = faiss.index_factory(dim, faiss_index.factory_string(cfg, n, dim), faiss.METRIC_INNER_PRODUCT)
        if not index.is_trained:
            index.train(train)
        del train
        for vecs in self._shards(ray, texts, cache=cache):
            index.add(vecs)
        return index
