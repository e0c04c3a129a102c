"""Embedding backends (rag/embedding_backends.py): the bf16 backend is checked against fp32 before use and the pass
is remembered; a backend that disagrees is refused in one line; the manifest records the backend and an index is never
queried with another one; an index built and queried with torch-bf16 through the CLI."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpora.records import Document
from rag import embedding_backends
from rag.config import ChunkingConfig, IndexConfig, PipelineConfig
from rag.embeddings import FakeEmbedder, SentenceTransformerEmbedder, make_embedder
from rag.manifest import IndexMismatch, read_manifest
from rag.models import ModelUnavailable
from rag.store import build_index, ensure_index, load_index

ROOT = Path(__file__).resolve().parents[2]
CH = ChunkingConfig(chunk_size=64, chunk_overlap=8)
DOCS = [Document(id=f"d{i}", title=t, text=f"{t} is explained in note {i}. " * 3)
        for i, t in enumerate(["kv cache memory", "lora adapter rank", "speculative decoding", "tensor parallel"])]


class _Bf16Fake(FakeEmbedder):
    """The fake embedder claiming another backend: manifest plumbing without a model."""

    def __init__(self):
        super().__init__()
        self.backend = "torch-bf16"


def test_verify_backend_passes_close_vectors_refuses_far_ones_and_remembers_a_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    base = {s: rng.normal(size=16) for s in embedding_backends.CHECK_SENTENCES}
    fp32 = lambda texts: np.stack([base[t] for t in texts])  # noqa: E731
    close = lambda texts: fp32(texts) + 1e-3  # noqa: E731
    far = lambda texts: fp32(texts) * np.array([1.0] * 8 + [-1.0] * 8)  # noqa: E731
    with pytest.raises(ModelUnavailable) as err:
        embedding_backends.verify_backend("m", "torch-bf16", "cpu", fp32=fp32, candidate=far)
    assert "disagrees with fp32" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "models" / "embedding-backends.json").exists()  # a failure is not remembered
    low = embedding_backends.verify_backend("m", "torch-bf16", "cpu", fp32=fp32, candidate=close)
    assert 0.99 <= low <= 1.0
    record = json.loads((tmp_path / "models" / "embedding-backends.json").read_text())
    assert [k.split("|")[:2] for k in record] == [["m", "torch-bf16"]]
    # remembered: the check does not run again for the same model, backend, torch and device
    assert embedding_backends.verify_backend("m", "torch-bf16", "cpu", fp32=fp32, candidate=far) == low
    assert embedding_backends.verify_backend("m", "torch", "cpu", fp32=fp32, candidate=far) is None


@pytest.mark.slow
def test_bf16_minilm_agrees_with_fp32_and_caches_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path))
    bf16 = make_embedder("minilm", backend="torch-bf16", device="cpu")
    fp32 = make_embedder("minilm", device="cpu")
    texts = ["Aspirin inhibits cyclooxygenase.", "The KV cache grows with the context length."]
    a, b = bf16.embed(texts), fp32.embed(texts)
    assert bf16.check_cosine is not None and bf16.check_cosine >= 0.99 and fp32.check_cosine is None
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.all(np.sum(a * b, axis=1) >= 0.99) and not np.array_equal(a, b)
    assert bf16.cache_id.endswith("#torch-bf16") and fp32.cache_id == fp32.model_id  # vectors never mixed in the cache
    assert (tmp_path / "models" / "embedding-backends.json").exists()


@pytest.mark.slow
def test_a_corrupted_backend_is_refused_before_it_embeds(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGDOCTOR_CACHE", str(tmp_path))  # no remembered pass
    real = SentenceTransformerEmbedder._run

    def corrupted(self, texts, backend):
        vecs = real(self, texts, backend)
        return vecs if backend == "torch" else np.roll(vecs, 1, axis=1)  # as if the bf16 kernels were broken

    monkeypatch.setattr(SentenceTransformerEmbedder, "_run", corrupted)
    emb = make_embedder("minilm", backend="torch-bf16", device="cpu", use_cache=False)
    with pytest.raises(ModelUnavailable, match=r"embedding backend torch-bf16 .* disagrees with fp32: cosine"):
        emb.embed(["anything"])


def test_manifest_records_the_backend_and_another_backend_is_refused(tmp_path):
    store = build_index(DOCS, tmp_path / "i", _Bf16Fake(), chunking=CH, index_cfg=IndexConfig())
    assert store.manifest.embedding_backend == "torch-bf16" == read_manifest(tmp_path / "i").embedding_backend
    with pytest.raises(IndexMismatch) as err:
        load_index(tmp_path / "i", FakeEmbedder())
    msg = str(err.value)
    assert "embedding backend 'torch-bf16' at build time vs 'torch' now" in msg and "\n" not in msg
    with pytest.raises(IndexMismatch, match="embedding backend"):
        ensure_index(DOCS, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig(), strict_embedder=True)
    _, built = ensure_index(DOCS, tmp_path / "i", _Bf16Fake(), chunking=CH, index_cfg=IndexConfig())
    assert not built  # same embedder and backend: up to date
    _, built = ensure_index(DOCS, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert built and read_manifest(tmp_path / "i").embedding_backend == "torch"  # `ragdoctor index` rebuilds


def test_a_manifest_from_before_backends_reads_as_fp32(tmp_path):
    build_index(DOCS, tmp_path / "i", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    path = tmp_path / "i" / "manifest.json"
    raw = json.loads(path.read_text())
    raw.pop("embedding_backend")
    path.write_text(json.dumps(raw))
    assert load_index(tmp_path / "i", FakeEmbedder()).manifest.embedding_backend == "torch"


def test_config_hash_unchanged_for_fp32_and_changed_by_another_backend():
    fp32, bf16 = PipelineConfig(), PipelineConfig(embedding={"backend": "torch-bf16"})
    assert "backend" not in json.dumps(fp32.model_dump(exclude={"embedding": {"backend"}}))
    assert fp32.config_hash() == PipelineConfig(embedding={"backend": "torch"}).config_hash() != bf16.config_hash()
    with pytest.raises(ValueError, match="embedding.backend"):
        PipelineConfig(embedding={"backend": "onnx-int9"})
    from corpora.errors import InputError

    with pytest.raises(InputError, match="fake embedder has no backend"):
        make_embedder("fake", backend="torch-bf16")


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ["PYTHONPATH"], str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "ragdoctor.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=env)


@pytest.mark.slow
def test_cli_builds_and_queries_a_bf16_index_and_refuses_the_other_backend(tmp_path):
    from rag.fake_server import FakeOpenAIServer

    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d.model_dump(include={"id", "title", "text"})) + "\n" for d in DOCS))
    common = ["--corpus", str(corpus), "--embedder", "minilm", "--index-dir", str(tmp_path / "idx")]
    p = _cli("index", *common, "--embedding-backend", "torch-bf16", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "index built" in p.stdout and "torch-bf16" in p.stdout
    assert read_manifest(tmp_path / "idx").embedding_backend == "torch-bf16"
    with FakeOpenAIServer() as srv:
        p = _cli("ask", "What is LoRA adapter rank?", *common, "--embedding-backend", "torch-bf16",
                 "--base-url", srv.base_url, "--json", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        trace = json.loads(p.stdout)
        assert trace["contexts"][0]["doc_id"] == "d1"  # the query was embedded with the index's backend
        p = _cli("ask", "What is LoRA?", *common, "--base-url", srv.base_url, cwd=tmp_path)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "embedding backend 'torch-bf16' at build time vs 'torch' now" in p.stderr


def test_ray_workers_build_the_configured_backend():
    from rag.ray_index import EmbedWorker

    worker = EmbedWorker("minilm", 8, "cpu", "torch-bf16")  # the model itself loads on first use
    assert worker.embedder.backend == "torch-bf16" and worker.embedder.cache is None
    assert EmbedWorker("minilm", 8, "cpu").embedder.backend == "torch"


def test_a_model_folder_is_named_by_its_contents_not_only_its_path(tmp_path):
    """Weights retrained or replaced in place are another embedder: its id (which the index manifest and the
    embedding cache key on) changes, so the index is rebuilt and no cached vector of the old model is reused."""
    folder = tmp_path / "my-embedder"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"old weights")
    before = make_embedder(str(folder), use_cache=False).model_id
    assert before.startswith(f"st:{folder.resolve()}@")
    assert make_embedder(str(folder), use_cache=False).model_id == before  # the same folder: the same embedder
    (folder / "model.safetensors").write_bytes(b"new weights")
    assert make_embedder(str(folder), use_cache=False).model_id != before
