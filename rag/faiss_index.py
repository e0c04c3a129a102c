"""faiss index construction by kind (flat, IVF, HNSW, IVF-PQ, SQ8), GPU placement when faiss reports a GPU,
and save/load of CPU index files (a GPU index is copied back to the CPU before writing, so files are portable)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rag.config import IndexConfig


def gpu_count() -> int:
    import faiss

    get = getattr(faiss, "get_num_gpus", None)
    return int(get()) if get else 0


def factory_string(cfg: IndexConfig, n: int, dim: int) -> str:
    """The faiss factory string for ``cfg``, with list counts and code sizes fitted to a corpus of ``n`` vectors."""
    nlist = max(1, min(cfg.nlist, n // 39 or 1))  # faiss wants >= 39 training points per centroid
    if cfg.kind == "flat":
        return "Flat"
    if cfg.kind == "ivf":
        return f"IVF{nlist},Flat"
    if cfg.kind == "hnsw":
        return f"HNSW{cfg.hnsw_m}"
    if cfg.kind == "sq8":
        return "SQ8"
    if cfg.kind == "ivfpq":
        m = next(m for m in (dim // 8, dim // 12, dim // 16, dim // 4, dim // 2, 1) if m and dim % m == 0)
        bits = max(1, min(cfg.pq_bits, int(math.log2(max(2, n))) - 1))
        return f"IVF{nlist},PQ{m}x{bits}np"  # np: skip polysemous training (minutes, unused here)
    raise ValueError(f"unknown index kind {cfg.kind!r}")


def build(vectors: np.ndarray, cfg: IndexConfig):
    """A trained CPU index holding ``vectors`` (inner product on normalised vectors = cosine)."""
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n, dim = vectors.shape
    index = faiss.index_factory(dim, factory_string(cfg, n, dim), faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        index.train(vectors)
    index.add(vectors)
    return index


def tune(index, cfg: IndexConfig) -> None:
    """Apply search-time parameters (nprobe, efSearch) to a CPU or GPU index."""
    import faiss

    try:
        ivf = faiss.extract_index_ivf(index)
        ivf.nprobe = min(cfg.nprobe, ivf.nlist)
    except (RuntimeError, AttributeError):
        pass
    hnsw = getattr(index, "hnsw", None)
    if hnsw is not None:
        hnsw.efSearch = cfg.ef_search


def to_device(index, cfg: IndexConfig):
    """Move to GPU 0 when faiss sees one and the kind supports it; otherwise return the CPU index unchanged."""
    if cfg.use_gpu == "never" or cfg.kind == "hnsw" or gpu_count() == 0:
        return index, "cpu"
    import faiss

    res = faiss.StandardGpuResources()
    co = faiss.GpuClonerOptions()
    co.useFloat16 = False
    gpu_index = faiss.index_cpu_to_gpu(res, 0, index, co)
    gpu_index._ragdoctor_res = res  # keep resources alive as long as the index
    return gpu_index, "gpu"


def save(index, path: str | Path) -> None:
    import faiss

    if "Gpu" in type(index).__name__:
        index = faiss.index_gpu_to_cpu(index)
    faiss.write_index(index, str(path))


def load(path: str | Path):
    import faiss

    return faiss.read_index(str(path))


def search(index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, positions) for a batch of queries; positions are -1 where fewer than k results exist."""
    k = max(1, min(k, index.ntotal))
    return index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
