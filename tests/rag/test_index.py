"""Index build/load, manifest checks, faiss kinds and retrieval modes (fake embedder: no model needed)."""
import json

import pytest

from corpora.errors import InputError
from corpora.records import Document
from rag.config import ChunkingConfig, IndexConfig, RetrievalConfig
from rag.embeddings import FakeEmbedder
from rag.faiss_index import factory_string
from rag.manifest import IndexMismatch, check_build_settings, corpus_checksum, read_manifest
from rag.retrievers import make_retriever
from rag.store import build_index, ensure_index, load_index

TOPICS = ["pipeline bubble", "kv cache memory", "flashattention tiling", "speculative decoding draft",
          "lora adapter rank", "cuda graphs capture", "int4 quantization awq", "tensor parallel allreduce"]


def _docs(n=64):
    return [Document(id=f"d{i:02d}", title=TOPICS[i % len(TOPICS)],
                     text=f"This note {i} is about {TOPICS[i % len(TOPICS)]} and marker{i}. " * 4) for i in range(n)]


CH = ChunkingConfig(chunk_size=64, chunk_overlap=8)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw", "ivfpq", "sq8"])
def test_every_index_kind_builds_saves_and_finds_the_exact_document(tmp_path, kind):
    emb = FakeEmbedder()
    store = build_index(_docs(), tmp_path / "idx", emb, chunking=CH, index_cfg=IndexConfig(kind=kind, nlist=4, nprobe=4))
    assert store.manifest.n_chunks == len(store.nodes) == store.dense.ntotal
    reloaded = load_index(tmp_path / "idx", emb)
    hits = make_retriever(reloaded, emb, RetrievalConfig(mode="dense", top_k=3)).search("marker17 " + TOPICS[17 % 8])
    assert reloaded.nodes[hits[0].position].metadata["doc_id"] == "d17" or kind == "ivfpq"
    if kind == "ivfpq":  # lossy codes: the exact document must still be among the candidates
        hits = make_retriever(reloaded, emb, RetrievalConfig(mode="dense", top_k=10)).search("marker17 " + TOPICS[1])
        assert "d17" in {reloaded.nodes[h.position].metadata["doc_id"] for h in hits}


def test_manifest_records_build_settings(tmp_path):
    docs = _docs(10)
    build_index(docs, tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    m = read_manifest(tmp_path / "idx")
    assert m.embedder_id == "fake-embedder-256" and m.dim == 256 and m.normalized
    assert m.chunking == CH and m.corpus_checksum == corpus_checksum(docs) and m.n_documents == 10
    assert check_build_settings(m, chunking=CH, checksum=corpus_checksum(docs)) == []
    changed = docs[:9] + [Document(id="d09", text="changed")]
    assert check_build_settings(m, chunking=CH, checksum=corpus_checksum(changed)) == ["corpus changed since the index was built"]


def test_querying_with_a_different_embedder_is_an_error_that_says_so(tmp_path):
    build_index(_docs(10), tmp_path / "idx", FakeEmbedder(256), chunking=CH, index_cfg=IndexConfig())
    with pytest.raises(IndexMismatch) as err:
        load_index(tmp_path / "idx", FakeEmbedder(128))
    msg = str(err.value)
    assert "fake-embedder-256" in msg and "fake-embedder-128" in msg and "dimension 256 vs 128" in msg
    assert "ragdoctor index --rebuild" in msg


def test_missing_or_corrupt_manifest(tmp_path):
    with pytest.raises(InputError, match="no index here"):
        load_index(tmp_path, FakeEmbedder())
    build_index(_docs(4), tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps({"version": 1}))
    with pytest.raises(InputError, match="unreadable manifest"):
        load_index(tmp_path / "idx", FakeEmbedder())


def test_ensure_index_reuses_then_rebuilds_when_stale(tmp_path):
    docs = _docs(8)
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert built
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(nprobe=3))
    assert not built  # search-time settings do not need a rebuild
    _, built = ensure_index(docs[:7], tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert built
    _, built = ensure_index(docs[:7], tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(kind="hnsw"))
    assert built


def test_bm25_parameters_are_recorded_and_a_change_rebuilds(tmp_path):
    docs = _docs(8)
    store, _ = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(bm25_k1=0.9,
                                                                                                      bm25_b=0.4))
    assert (read_manifest(tmp_path / "i").index.bm25_k1, read_manifest(tmp_path / "i").index.bm25_b) == (0.9, 0.4)
    assert (store.bm25._retriever.k1, store.bm25._retriever.b) == (0.9, 0.4)
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(bm25_k1=0.9,
                                                                                                     bm25_b=0.4))
    assert not built
    before = read_manifest(tmp_path / "i")
    dense_inode = (tmp_path / "i" / "dense.faiss").stat().st_ino
    store, built = ensure_index(docs, tmp_path / "i", _NoEmbedding(), chunking=CH, index_cfg=IndexConfig(bm25_b=0.5))
    assert built and store.bm25._retriever.b == 0.5 and set(store.build_seconds) == {"bm25"}  # nothing re-embedded
    after = read_manifest(tmp_path / "i")
    assert (after.index.bm25_k1, after.index.bm25_b) == (IndexConfig().bm25_k1, 0.5) and after.n_vectors == 8
    assert after.files["dense.faiss"] == before.files["dense.faiss"]  # the same vectors...
    assert (tmp_path / "i" / "dense.faiss").stat().st_ino == dense_inode  # ...linked, not copied
    assert after.files["bm25/params.index.json"] != before.files["bm25/params.index.json"]  # (k1, b) live there
    assert not [p.name for p in tmp_path.iterdir() if p.name != "i"]  # no temporary folder left
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(bm25_b=0.5))
    assert not built  # and it loads as any index does


class _NoEmbedding(FakeEmbedder):
    """An embedder that may be asked what it is, never to embed."""

    def embed(self, texts):
        raise AssertionError("a BM25 change must not re-embed the corpus")


def test_an_index_whose_bm25_predates_cjk_bigrams_gets_its_bm25_rebuilt_alone(tmp_path):
    docs = _docs(8)
    ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    marker = tmp_path / "i" / "bm25" / "ragdoctor_tokenizer.json"
    marker.unlink()  # as an index built before the tokenizer file was written
    raw = json.loads((tmp_path / "i" / "manifest.json").read_text())
    del raw["files"]["bm25/ragdoctor_tokenizer.json"]
    (tmp_path / "i" / "manifest.json").write_text(json.dumps(raw))
    store, built = ensure_index(docs, tmp_path / "i", _NoEmbedding(), chunking=CH, index_cfg=IndexConfig())
    assert built and set(store.build_seconds) == {"bm25"} and store.bm25.cjk and marker.exists()  # nothing re-embedded
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert not built


def test_a_manifest_from_before_the_bm25_keys_reads_the_values_it_was_built_with(tmp_path):
    from rag.config import BM25_LEGACY
    build_index(_docs(8), tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    path = tmp_path / "i" / "manifest.json"
    data = json.loads(path.read_text())
    for key in BM25_LEGACY:
        data["index"].pop(key)
    path.write_text(json.dumps(data))
    index = read_manifest(tmp_path / "i").index
    assert {k: getattr(index, k) for k in BM25_LEGACY} == BM25_LEGACY


def test_bm25_and_hybrid_modes(tmp_path):
    emb = FakeEmbedder()
    store = build_index(_docs(), tmp_path / "idx", emb, chunking=CH, index_cfg=IndexConfig())
    bm25 = make_retriever(store, emb, RetrievalConfig(mode="bm25", top_k=3)).search("marker42")
    assert store.nodes[bm25[0].position].metadata["doc_id"] == "d42"
    rrf = RetrievalConfig(mode="hybrid", fusion="rrf", top_k=4, candidate_k=10)
    hybrid = make_retriever(store, emb, rrf).search("marker42 flashattention tiling")
    assert store.nodes[hybrid[0].position].metadata["doc_id"] == "d42"
    assert {"rrf_score", "bm25_rank"} <= set(hybrid[0].signals)
    fused = make_retriever(store, emb, RetrievalConfig(mode="hybrid", top_k=4, candidate_k=10)).search("marker42")
    assert store.nodes[fused[0].position].metadata["doc_id"] == "d42" and "fused_score" in fused[0].signals
    scores = [h.score for h in hybrid]
    assert scores == sorted(scores, reverse=True)
    # llama-index retriever interface
    nodes = make_retriever(store, emb, RetrievalConfig(mode="hybrid", top_k=2)).retrieve("marker42")
    assert len(nodes) == 2 and nodes[0].node.metadata["doc_id"] == "d42"


def test_factory_strings_fit_small_corpora():
    assert factory_string(IndexConfig(kind="ivf", nlist=64), 100, 384) == "IVF2,Flat"
    assert factory_string(IndexConfig(kind="ivfpq", nlist=64), 100000, 384) == "IVF64,PQ48x8np,Refine(SQ8)"
    assert factory_string(IndexConfig(kind="ivfpq", nlist=64, refine="none"), 100000, 384) == "IVF64,PQ48x8np"
    assert factory_string(IndexConfig(kind="ivfpq", nlist=64, refine="flat"), 100000, 384) == "IVF64,PQ48x8np,RFlat"


def test_default_nprobe_scales_with_lists():
    from rag.faiss_index import default_nprobe
    assert [default_nprobe(n) for n in (1, 4, 8, 32, 95, 1024)] == [1, 4, 8, 8, 24, 256]
    assert factory_string(IndexConfig(kind="ivfpq", refine="none"), 100, 384).endswith("x5np")


def test_querying_commands_refuse_an_index_built_by_another_embedder(tmp_path):
    docs = _docs(8)
    ensure_index(docs, tmp_path / "i", FakeEmbedder(256), chunking=CH, index_cfg=IndexConfig())
    with pytest.raises(IndexMismatch, match="fake-embedder-256"):
        ensure_index(docs, tmp_path / "i", FakeEmbedder(128), chunking=CH, index_cfg=IndexConfig(), strict_embedder=True)
    _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(128), chunking=CH, index_cfg=IndexConfig())
    assert built  # `ragdoctor index` with another embedder rebuilds


class _FakeGpuFaiss:
    """Stands in for the GPU half of faiss (faiss-cpu has none): the probe says ``usable``; placement raises
    ``place_error`` if given."""

    def __init__(self, usable=(True, ""), place_error=None):
        self.usable, self.place_error = usable, place_error

    def install(self, monkeypatch):
        import faiss

        import rag.faiss_index as fi

        monkeypatch.setattr(fi, "gpu_count", lambda: 1)
        monkeypatch.setattr(fi, "gpu_usable", lambda: self.usable)
        monkeypatch.setattr(faiss, "StandardGpuResources", lambda: object(), raising=False)
        monkeypatch.setattr(faiss, "GpuClonerOptions", lambda: type("Opts", (), {})(), raising=False)
        monkeypatch.setattr(faiss, "index_cpu_to_gpu", self.to_gpu, raising=False)

    def to_gpu(self, _res, _dev, index, _opts):
        if self.place_error:
            raise RuntimeError(self.place_error)

        class GpuIndexFlat:  # the name matters: save() copies 'Gpu' indexes back to the CPU
            ntotal, d = index.ntotal, index.d

            def search(self, q, k):
                return index.search(q, k)
        return GpuIndexFlat()


def _small_flat():
    import numpy as np

    from rag.faiss_index import build
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 8)).astype("float32")
    return build(v / np.linalg.norm(v, axis=1, keepdims=True), IndexConfig(kind="flat"))


def test_gpu_placement_is_used_when_the_probe_passes(monkeypatch):
    from rag.faiss_index import to_device
    _FakeGpuFaiss().install(monkeypatch)
    index, device = to_device(_small_flat(), IndexConfig(kind="flat"))
    assert device == "gpu" and type(index).__name__ == "GpuIndexFlat"


H200_ABORT = ("Faiss assertion 'err__ == cudaSuccess' failed in void faiss::gpu::runL2Norm(...) at "
              "/project/faiss/faiss/gpu/impl/L2Norm.cu:257; details: CUDA error 209 no kernel image is available for "
              "execution on the device\n")


def test_probe_reason_names_the_cuda_error_and_the_signal():
    from rag.faiss_index import probe_reason
    said = probe_reason(-6, "faiss 1.14.1\n" + H200_ABORT)
    assert said == ("faiss GPU probe failed (killed by signal 6): CUDA error 209 no kernel image is available for "
                    "execution on the device")
    assert probe_reason(1, "") == "faiss GPU probe failed (exit status 1)"
    assert probe_reason(1, "AttributeError: module 'faiss' has no attribute 'GpuIndexFlatIP'\n").endswith(
        "no attribute 'GpuIndexFlatIP'")


def test_gpu_probe_runs_in_a_child_process_and_fails_cleanly_without_gpu_faiss():
    """faiss-cpu here: the child cannot build a GPU index; this process lives on and gets a reason."""
    from rag.faiss_index import gpu_usable
    usable, why = gpu_usable.__wrapped__(timeout_s=120)
    assert usable is False and why.startswith("faiss GPU probe failed (exit status 1)") and "Gpu" in why


def test_gpu_without_kernels_for_this_chip_falls_back_to_the_cpu_and_says_why(monkeypatch):
    """Measured on an H200 with the PyPI faiss-gpu-cu12 1.14.1 wheel (sm_70/sm_80 code only): faiss sees the GPU, then
    the first GPU call aborts the process, so only the child-process probe can tell."""
    from rag.faiss_index import probe_reason, to_device
    _FakeGpuFaiss(usable=(False, probe_reason(-6, H200_ABORT))).install(monkeypatch)
    cpu = _small_flat()
    said = []
    index, device = to_device(cpu, IndexConfig(kind="flat"), log=said.append)
    assert device == "cpu" and index is cpu
    assert len(said) == 1 and "no kernel image" in said[0] and "CPU" in said[0]


def test_a_layout_the_gpu_cannot_take_falls_back_to_the_cpu(monkeypatch):
    from rag.faiss_index import to_device
    _FakeGpuFaiss(place_error="Error in GpuIndexIVFPQ: Number of bytes per encoded vector / sub-quantizer not "
                              "currently supported").install(monkeypatch)
    cpu = _small_flat()
    said = []
    assert to_device(cpu, IndexConfig(kind="ivfpq"), log=said.append) == (cpu, "cpu")
    assert "not currently supported" in said[0]


@pytest.mark.parametrize("kind", ["hnsw", "sq8"])
def test_kinds_without_a_faiss_gpu_version_stay_on_the_cpu(monkeypatch, kind):
    import numpy as np

    from rag.faiss_index import build, to_device
    _FakeGpuFaiss().install(monkeypatch)
    cpu = build(np.vstack([np.eye(8, dtype="float32")] * 8), IndexConfig(kind=kind))
    assert to_device(cpu, IndexConfig(kind=kind)) == (cpu, "cpu")


def test_new_index_keys_keep_the_config_hash_of_flat_runs():
    from rag.config import BM25_LEGACY, PipelineConfig, RetrievalConfig
    before = RetrievalConfig(fusion="rrf", rerank=False)  # the retrieval default until session 21

    def cfg(**index):
        return PipelineConfig(index=IndexConfig(**{**BM25_LEGACY, **index}), retrieval=before)

    assert cfg().config_hash() == "1e14c3c73cf5"  # the hash before nprobe=None and refine existed
    assert cfg(kind="hnsw").config_hash() == "00e8654c347c"
    assert cfg(bm25_k1=0.9).config_hash() != "1e14c3c73cf5"
    assert PipelineConfig().config_hash() != "1e14c3c73cf5"  # session 21's defaults answer differently
    assert PipelineConfig(index=IndexConfig(kind="ivfpq")).config_hash() != \
        PipelineConfig(index=IndexConfig(kind="ivfpq", refine="none")).config_hash()


def test_two_builds_of_one_index_wait_for_each_other(tmp_path, caplog):
    """A second process (here: thread) that needs the index while another builds it waits for the lock, then finds
    the index current: it neither deletes the first build's files nor builds it again."""
    import threading
    import time

    from rag.index_dir import index_lock

    docs = _docs(8)
    order: list[str] = []

    def first():
        with index_lock(tmp_path / "i"):
            order.append("first holds the lock")
            time.sleep(0.5)
            ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
            order.append("first built")

    t = threading.Thread(target=first)
    t.start()
    while not order:
        time.sleep(0.01)
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        _, built = ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    t.join()
    assert order == ["first holds the lock", "first built"] and not built
    assert any("(or thread) is building this index" in r.getMessage() for r in caplog.records)
    assert not [p for p in tmp_path.iterdir() if ".building-" in p.name]


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_a_top_k_beyond_the_corpus_returns_every_chunk_once(tmp_path, mode):
    store, _ = ensure_index(_docs(4), tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    retriever = make_retriever(store, FakeEmbedder(), RetrievalConfig(mode=mode, rerank=False))
    for batch in (["kv cache"], ["kv cache", "lora rank"]):  # one query goes through llama-index's store, more through faiss
        hits = retriever.search_batch(batch, 2**31)
        assert all(len({h.position for h in row}) == len(row) <= len(store.nodes) for row in hits)


def test_a_current_index_loads_without_its_lock_and_an_unusable_cache_only_warns(tmp_path, monkeypatch, caplog):
    """Loading takes no lock (parallel readers never queue behind each other), and a cache folder that cannot hold
    the lock file makes a build unguarded, with a warning, never a failure."""
    from rag.index_dir import index_lock

    docs = _docs(8)
    ensure_index(docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    with index_lock(tmp_path / "i"):  # held by this thread; a reader in another thread must not wait for it
        import threading

        loaded: list[bool] = []
        t = threading.Thread(target=lambda: loaded.append(ensure_index(
            docs, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())[1]))
        t.start()
        t.join(timeout=10)
        assert loaded == [False]
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path / "afile" / "cache"))
    with caplog.at_level("WARNING", logger="ragdoctor.notices"):
        _, built = ensure_index(docs[:7], tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert built and any("no build lock" in r.getMessage() for r in caplog.records)


def test_a_folder_holding_a_users_own_manifest_is_never_replaced_nor_called_an_index(tmp_path):
    """A folder with only a user's manifest.json ({"name": "my extension"}) counted as an index: --rebuild deleted it,
    and loading it advised that rebuild."""
    from rag.index_dir import check_index_target
    from rag.manifest import holds_our_index

    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "manifest.json").write_text('{"name": "my extension"}')
    with pytest.raises(InputError) as err:
        ensure_index(_docs(4), ext, FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(), rebuild=True)
    assert str(err.value) == (f"{ext}: is not empty and holds no ragdoctor index manifest: refusing to replace it; "
                              "choose a new or empty folder")
    for load in (lambda: load_index(ext, FakeEmbedder()), lambda: read_manifest(ext),
                 lambda: ensure_index(_docs(4), ext, FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())):
        with pytest.raises(InputError) as err:
            load()
        assert str(err.value).startswith(f"{ext}: holds a manifest.json that is not a ragdoctor index manifest")
        assert "rebuild" not in str(err.value)
    assert (ext / "manifest.json").read_text() == '{"name": "my extension"}' and [p.name for p in ext.iterdir()] == [
        "manifest.json"]
    (ext / "manifest.json").write_text("not json")  # a user's file that is not JSON either
    with pytest.raises(InputError, match="holds no ragdoctor index manifest: refusing to replace it"):
        check_index_target(ext)
    with pytest.raises(InputError, match="not a ragdoctor index manifest: not an index"):
        read_manifest(ext)
    # an index of ours with a damaged manifest (truncated, or an edit that dropped its keys) is still rebuilt
    build_index(_docs(4), tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    manifest = tmp_path / "idx" / "manifest.json"
    text = manifest.read_text()
    for damaged in (text[: len(text) // 2], '{"version": 1}'):
        manifest.write_text(damaged)
        assert holds_our_index(tmp_path / "idx")
        with pytest.raises(InputError, match="unreadable manifest.*--rebuild"):
            load_index(tmp_path / "idx", FakeEmbedder())
        ensure_index(_docs(4), tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(), rebuild=True)
        assert read_manifest(tmp_path / "idx").n_documents == 4


class _ShortInputEmbedder(FakeEmbedder):
    """The fake embedder with a real model's tokenizer and an input limit (MiniLM reads 256 tokens)."""

    max_seq_length = 32

    @property
    def tokenizer_dir(self):
        from rag.models import minilm_path
        return str(minilm_path())


def test_chunks_longer_than_the_embedder_reads_are_counted_and_warned_about_once(tmp_path, caplog):
    from rag.models import minilm_path
    from rag.store import max_input_tokens

    caplog.set_level("WARNING")
    store = build_index(_docs(8), tmp_path / "i", _ShortInputEmbedder(), chunking=ChunkingConfig(chunk_size=64,
                        chunk_overlap=8), index_cfg=IndexConfig())
    said = [r.getMessage() for r in caplog.records if "tokens the embedder reads" in r.getMessage()]
    assert len(said) == 1, said
    n = len(store.nodes)
    assert f"{n} of {n} chunks (100%) are longer than the 32 tokens the embedder reads" in said[0]
    assert "lower chunking.chunk_size (now 64)" in said[0]
    caplog.clear()
    build_index(_docs(8), tmp_path / "j", _ShortInputEmbedder(), chunking=ChunkingConfig(chunk_size=16,
                chunk_overlap=2), index_cfg=IndexConfig())
    assert "tokens the embedder reads" not in caplog.text  # every chunk fits: not a word
    assert max_input_tokens(FakeEmbedder()) is None  # an embedder that says no limit: nothing checked
    minilm = type("M", (), {"tokenizer_dir": str(minilm_path())})()
    assert max_input_tokens(minilm) == 256  # read from the model folder, without loading the model


def test_an_on_disk_index_under_a_non_utf8_folder_name_is_refused_before_any_embedding(tmp_path):
    with pytest.raises(InputError, match="not UTF-8 text"):
        build_index(_docs(8), tmp_path / "idx\udcff", _NoEmbedding(), chunking=CH, index_cfg=IndexConfig(kind="ivf", on_disk=True))
