"""`ragdoctor index --engine ray` on a real local Ray runtime (fake embedder: no model): the index equals the local
build; past ``max_train`` an IVF index is trained on a sample and filled shard by shard; the manifest checks hold."""
from __future__ import annotations

import numpy as np
import pytest

from rag.chunking import embedding_text
from rag.config import IndexConfig, RetrievalConfig
from rag.embeddings import FakeEmbedder
from rag.retrievers import make_retriever
from rag.store import build_index, ensure_index, load_index
from tests.rag.test_index import CH, TOPICS, _docs

ray = pytest.importorskip("ray")


def vectors(store) -> np.ndarray:
    return store.dense.reconstruct_n(0, store.dense.ntotal)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_ray_build_equals_the_local_build(ray_local, tmp_path, kind):
    from rag.ray_index import RayDense

    cfg = IndexConfig(kind=kind, nlist=4, nprobe=4)
    emb = FakeEmbedder()
    local = build_index(_docs(), tmp_path / "local", emb, chunking=CH, index_cfg=cfg)
    remote = build_index(_docs(), tmp_path / "ray", emb, chunking=CH, index_cfg=cfg,
                         dense_builder=RayDense("fake", num_workers=2, shard_size=7))
    assert remote.manifest.model_dump(exclude={"built_at", "files"}) == \
        local.manifest.model_dump(exclude={"built_at", "files"})
    if kind != "hnsw":  # HNSW's graph keeps no reconstructable order; its search results are compared below
        np.testing.assert_array_equal(vectors(remote), vectors(local))
    queries = emb.embed([f"marker{i} {TOPICS[i % 8]}" for i in range(0, 64, 5)])
    assert np.array_equal(local.dense.search(queries, 5)[1], remote.dense.search(queries, 5)[1])
    reloaded = load_index(tmp_path / "ray", emb)  # the manifest's sizes, hashes and counts check out
    hits = make_retriever(reloaded, emb, RetrievalConfig(mode="dense", top_k=3)).search("marker17 " + TOPICS[1])
    assert reloaded.nodes[hits[0].position].metadata["doc_id"] == "d17"
    _, built = ensure_index(_docs(), tmp_path / "ray", emb, chunking=CH, index_cfg=cfg)
    assert not built  # current: a local open reuses the ray-built index


def test_past_max_train_an_ivf_index_is_trained_on_a_sample_and_filled_by_shards(ray_local, tmp_path):
    from rag.ray_index import RayDense

    cfg = IndexConfig(kind="ivf", nlist=4, nprobe=4)
    emb = FakeEmbedder()
    store = build_index(_docs(160), tmp_path / "ray", emb, chunking=CH, index_cfg=cfg,
                        dense_builder=RayDense("fake", num_workers=2, shard_size=16, max_train=60))
    n = store.manifest.n_chunks
    assert n > 60 and store.dense.ntotal == n
    local = build_index(_docs(160), tmp_path / "local", emb, chunking=CH, index_cfg=cfg)
    np.testing.assert_array_equal(vectors(store), vectors(local))  # ids are corpus positions, shard by shard
    store.dense.nprobe = 4  # every list: an exact search, so each chunk finds itself first
    probe = vectors(local)[::9]
    _, ids = store.dense.search(probe, 1)
    assert np.allclose(vectors(store)[ids[:, 0]], probe)


def cached_ray_dense(path, sent: list[int], **kw):
    """RayDense with the fake embedder behind an embedding cache at ``path`` (the fake has none of its own), noting
    how many texts the driver sends through Ray Data."""
    from rag.embeddings import EmbeddingCache
    from rag.ray_index import RayDense

    class Cached(RayDense):
        def cache(self):
            return EmbeddingCache(path), FakeEmbedder().model_id

        def _embedded(self, ray, texts, idx):
            sent.append(len(idx))
            return super()._embedded(ray, texts, idx)

    return Cached("fake", **kw)


@pytest.mark.parametrize("max_train", [262_144, 40])
def test_a_rebuild_embeds_only_the_chunks_the_cache_lacks(ray_local, tmp_path, max_train):
    """Like the local engine's embedder: the driver reads the cached vectors, the workers embed only the new chunks
    (each distinct text once) and the driver stores them; the index is the local build's."""
    cfg = IndexConfig(kind="ivf", nlist=4, nprobe=4)
    emb, sent, cache = FakeEmbedder(), [], tmp_path / "emb.sqlite"
    docs = _docs()
    first = build_index(docs, tmp_path / "a", emb, chunking=CH, index_cfg=cfg,
                        dense_builder=cached_ray_dense(cache, sent, num_workers=2, shard_size=7, max_train=max_train))
    n = first.manifest.n_chunks
    assert sum(sent) == len({embedding_text(c) for c in first.nodes}) <= n  # every distinct chunk text, once
    docs[3] = docs[3].model_copy(update={"text": "This note was edited: it is about bfloat16 rounding now."})
    sent.clear()
    again = build_index(docs, tmp_path / "b", emb, chunking=CH, index_cfg=cfg,
                        dense_builder=cached_ray_dense(cache, sent, num_workers=2, shard_size=7, max_train=max_train))
    assert sum(sent) == 1  # the edited document's one chunk
    local = build_index(docs, tmp_path / "local", emb, chunking=CH, index_cfg=cfg)
    np.testing.assert_array_equal(vectors(again), vectors(local))
    sent.clear()
    build_index(docs, tmp_path / "c", emb, chunking=CH, index_cfg=cfg,
                dense_builder=cached_ray_dense(cache, sent, num_workers=2, shard_size=7, max_train=max_train))
    assert sum(sent) == 0


@pytest.mark.slow
def test_index_command_with_the_ray_engine(tmp_path, capsys):
    from ragdoctor.cli import main

    ray.shutdown()  # the command starts (and stops) its own runtime
    args = ["index", "--embedder", "fake", "--index-dir", str(tmp_path / "idx"), "--engine", "ray", "--num-workers", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "index built" in out and "embed+faiss (ray)" in out
    assert main(args[:-4]) == 0 and "up to date" in capsys.readouterr().out  # a local open reuses it


def test_ray_flags_need_the_ray_engine(tmp_path, capsys):
    from ragdoctor.cli import main

    assert main(["index", "--embedder", "fake", "--index-dir", str(tmp_path / "idx"), "--num-workers", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ragdoctor: error: --ray-address, --num-workers and --gpus-per-worker need --engine ray"]
    assert main(["eval", str(tmp_path / "missing.jsonl"), "--gpus-per-worker", "1"]) == 2
    assert "need --engine ray" in capsys.readouterr().err


@pytest.mark.slow
def test_on_a_two_node_cluster_the_shards_are_embedded_on_both_nodes_and_the_index_equals_local(two_nodes,
                                                                                                 tmp_path):
    """The same build on a head and a worker node (one CPU each): a pool of two one-CPU embedding actors needs both
    nodes; the index equals the local one vector for vector."""
    from rag.ray_index import RayDense

    cfg = IndexConfig(kind="ivf", nlist=4, nprobe=4)
    emb = FakeEmbedder()
    remote = build_index(_docs(), tmp_path / "ray", emb, chunking=CH, index_cfg=cfg,
                         dense_builder=RayDense("fake", num_workers=2, shard_size=5))
    local = build_index(_docs(), tmp_path / "local", emb, chunking=CH, index_cfg=cfg)
    np.testing.assert_array_equal(vectors(remote), vectors(local))
    assert remote.manifest.model_dump(exclude={"built_at", "files"}) == \
        local.manifest.model_dump(exclude={"built_at", "files"})
    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(alive) == 2 and all(n["Resources"].get("CPU") == 1.0 for n in alive)
