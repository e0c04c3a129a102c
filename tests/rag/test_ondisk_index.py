"""On-disk IVF indexes (``index.on_disk``, ``ragdoctor index --on-disk``): the inverted lists are merged from shard
files into one OnDiskInvertedLists file that loads mmapped; searches equal the in-memory index from the same trained
quantizer; the folder is relocatable and its manifest checks cover the lists file; kinds without lists are refused."""
from __future__ import annotations

import shutil

import faiss
import numpy as np
import pytest

from corpora.records import Document
from rag import faiss_index, ondisk_index
from rag.config import IndexConfig, PipelineConfig, RetrievalConfig
from rag.embeddings import FakeEmbedder
from rag.manifest import IndexMismatch
from rag.retrievers import make_retriever
from rag.store import build_index, ensure_index, load_index
from tests.rag.test_index import CH, TOPICS

WORDS = [w for t in TOPICS for w in t.split()]


def short_docs(n: int = 2000) -> list[Document]:
    """``n`` one-chunk documents of random words (seeded) and a marker each."""
    rng = np.random.default_rng(7)
    return [Document(id=f"d{i:04d}", title=TOPICS[i % len(TOPICS)],
                     text=" ".join(rng.choice(WORDS, 6).tolist()) + f" marker{i}") for i in range(n)]


def random_vectors(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    faiss.normalize_L2(x)
    return x


def same_search(a, b, queries: np.ndarray, k: int = 10) -> None:
    da, ia = a.search(queries, k)
    db, ib = b.search(queries, k)
    np.testing.assert_array_equal(ia, ib)
    np.testing.assert_array_equal(da, db)


@pytest.mark.parametrize("kind", ["ivf", "ivfpq"])
def test_shards_merged_on_disk_search_exactly_like_the_in_memory_index(tmp_path, kind):
    cfg = IndexConfig(kind=kind, nlist=16, nprobe=3, refine="none", on_disk=True)
    x = random_vectors(3000)
    memory = faiss_index.build(x, cfg)
    disk = ondisk_index.build(x, cfg, tmp_path, shard_size=700)  # 5 shard files, the last one short
    assert disk.ntotal == memory.ntotal == 3000
    assert ondisk_index.on_disk_lists(disk) is not None and ondisk_index.on_disk_lists(memory) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [ondisk_index.IVFDATA]  # the shard files are gone
    faiss_index.save(disk, tmp_path / "dense.faiss")
    del disk
    loaded = faiss_index.load(tmp_path / "dense.faiss", on_disk=True)
    lists = ondisk_index.on_disk_lists(loaded)
    assert lists is not None and lists.read_only
    for index in (memory, loaded):
        faiss_index.tune(index, cfg)
    same_search(memory, loaded, random_vectors(40, seed=1) + x[:40])


def test_an_on_disk_index_folder_checks_moves_and_is_reused(tmp_path, capfd):
    cfg = IndexConfig(kind="ivf", nlist=16, nprobe=4, on_disk=True)
    emb = FakeEmbedder()
    docs = short_docs()
    capfd.readouterr()
    store = build_index(docs, tmp_path / "idx", emb, chunking=CH, index_cfg=cfg)
    assert capfd.readouterr().out == ""  # faiss's own prints on the C stdout never reach a command's output
    m = store.manifest
    assert m.index.on_disk and m.n_chunks == len(docs) and {"dense.faiss", "dense.ivfdata"} <= set(m.files)
    assert ondisk_index.on_disk_lists(store.dense) is not None and store.device == "cpu"
    memory = build_index(docs, tmp_path / "mem", emb, chunking=CH, index_cfg=cfg.model_copy(update={"on_disk": False}))
    assert ondisk_index.on_disk_lists(memory.dense) is None
    queries = emb.embed([f"marker{i} {TOPICS[i % 8]}" for i in range(0, 2000, 37)])
    same_search(memory.dense, store.dense, queries)  # the local engine trains on every vector: the same quantizer

    shutil.move(tmp_path / "idx", tmp_path / "moved")  # self-contained: the lists file is found beside the header
    moved = load_index(tmp_path / "moved", emb, index_cfg=IndexConfig(kind="ivf", nlist=16, nprobe=4))
    assert ondisk_index.on_disk_lists(moved.dense) is not None
    same_search(memory.dense, moved.dense, queries)
    hits = make_retriever(moved, emb, RetrievalConfig(mode="dense", top_k=3)).search(docs[1234].text)
    assert moved.nodes[hits[0].position].metadata["doc_id"] == "d1234"

    in_memory_cfg = cfg.model_copy(update={"on_disk": False})  # a search without --on-disk reuses the disk index
    reused, built = ensure_index(docs, tmp_path / "moved", emb, chunking=CH, index_cfg=in_memory_cfg)
    assert not built and ondisk_index.on_disk_lists(reused.dense) is not None
    rebuilt, built = ensure_index(docs, tmp_path / "mem", emb, chunking=CH, index_cfg=cfg)  # asked on disk: rebuilt
    assert built and ondisk_index.on_disk_lists(rebuilt.dense) is not None
    del reused, rebuilt, moved

    data = tmp_path / "moved" / "dense.ivfdata"  # the manifest's digest covers the lists file
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(IndexMismatch, match="dense.ivfdata does not match its manifest"):
        load_index(tmp_path / "moved", emb)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "sq8"])
def test_kinds_without_inverted_lists_are_refused_in_one_line(tmp_path, capsys, kind):
    from ragdoctor.cli import main

    args = ["index", "--embedder", "fake", "--index-dir", str(tmp_path / "idx"), "--kind", kind, "--on-disk"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "on_disk needs kind ivf or ivfpq" in err[0] and kind.upper()[:4] in err[0].upper()
    assert not (tmp_path / "idx").exists()
    with pytest.raises(ValueError, match="refine 'sq8'"):
        IndexConfig(kind="ivfpq", refine="sq8", on_disk=True)


def test_on_disk_changes_no_config_hash():
    base = PipelineConfig(index=IndexConfig(kind="ivf"))
    assert base.config_hash() == PipelineConfig(index=IndexConfig(kind="ivf", on_disk=True)).config_hash()


@pytest.mark.slow
def test_past_max_train_ray_fills_on_disk_shards_that_search_like_the_in_memory_build(ray_local, tmp_path):
    """The larger-than-memory path: trained once on a sample of max_train chunks, each Ray shard added to an empty
    clone and written to its own file, the lists merged on disk; equal to the in-memory Ray build (same sample, same
    quantizer, same vectors, same nprobe) in ids and scores."""
    from rag.ray_index import RayDense

    docs, emb = short_docs(), FakeEmbedder()
    cfg = IndexConfig(kind="ivf", nlist=16, nprobe=4, on_disk=True)
    make = lambda: RayDense("fake", num_workers=1, shard_size=256, max_train=700)  # noqa: E731
    disk = build_index(docs, tmp_path / "disk", emb, chunking=CH, index_cfg=cfg, dense_builder=make())
    memory = build_index(docs, tmp_path / "mem", emb, chunking=CH, index_cfg=cfg.model_copy(update={"on_disk": False}),
                         dense_builder=make())
    assert disk.manifest.n_chunks == len(docs) > 700 and disk.dense.ntotal == len(docs)
    assert ondisk_index.on_disk_lists(disk.dense) is not None and ondisk_index.on_disk_lists(memory.dense) is None
    assert disk.manifest.model_dump(exclude={"built_at", "files", "index"}) == \
        memory.manifest.model_dump(exclude={"built_at", "files", "index"})
    queries = emb.embed([f"marker{i} {TOPICS[i % 8]}" for i in range(0, 2000, 41)])
    same_search(memory.dense, disk.dense, queries)
    shutil.move(tmp_path / "disk", tmp_path / "moved")
    same_search(memory.dense, load_index(tmp_path / "moved", emb).dense, queries)


def test_index_command_on_disk_prints_only_its_own_line_and_is_reused_without_the_flag(tmp_path, capfd):
    from ragdoctor.cli import main

    args = ["index", "--embedder", "fake", "--index-dir", str(tmp_path / "idx"), "--kind", "ivf"]
    assert main([*args, "--on-disk"]) == 0
    out = capfd.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("index built") and (tmp_path / "idx" / "dense.ivfdata").is_file()
    assert main(args) == 0 and capfd.readouterr().out.startswith("index up to date")


def test_index_command_refine_flag(tmp_path, capfd):
    """`index --kind ivfpq --refine flat|sq8|none` sets index.refine (recorded in the manifest); on another kind the
    flag is a usage error in one line, before anything is built."""
    import json

    from ragdoctor.cli import main

    for refine in ("flat", "none"):
        idx = tmp_path / f"idx-{refine}"
        assert main(["index", "--embedder", "fake", "--index-dir", str(idx), "--kind", "ivfpq", "--refine", refine]) == 0
        assert json.loads((idx / "manifest.json").read_text())["index"]["refine"] == refine
    capfd.readouterr()
    assert main(["index", "--embedder", "fake", "--index-dir", str(tmp_path / "f"), "--kind", "flat",
                 "--refine", "flat"]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--refine applies to --kind ivfpq" in err[0] and not (tmp_path / "f").exists()


def test_equal_scores_on_disk_come_in_corpus_order_at_every_k(tmp_path):
    x = random_vectors(300)
    x[70] = x[140] = x[210] = x[3]  # one chunk's text in four documents, in four shards
    disk = ondisk_index.build(x, IndexConfig(kind="ivf", nlist=4, nprobe=4, on_disk=True), tmp_path, shard_size=64)
    for k in (1, 2, 3, 4):
        assert faiss_index.search(disk, x[[3]], k)[1][0].tolist() == [3, 70, 140, 210][:k]
