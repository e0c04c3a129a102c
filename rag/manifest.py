"""The manifest saved beside an index: what it was built from and with. Checked on every load, so an index is
never queried with an embedder, normalisation or chunking it was not built with."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from corpora.errors import InputError
from corpora.records import Document
from rag.config import ChunkingConfig, IndexConfig

MANIFEST_VERSION = 1


class IndexMismatch(RuntimeError):
    """The index on disk was built differently from what the caller wants to query it with."""


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = MANIFEST_VERSION
    embedder_id: str
    dim: int
    normalized: bool
    chunking: ChunkingConfig
    index: IndexConfig
    factory: str
    corpus_checksum: str
    n_documents: int
    n_chunks: int
    faiss_version: str
    bm25: bool = True
    built_at: str


def corpus_checksum(docs: Iterable[Document]) -> str:
    """sha256 over (id, title, text) of every document, in id order: changes when any document changes."""
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.id):
        h.update(json.dumps([d.id, d.title, d.text]).encode("utf-8"))
    return h.hexdigest()


def read_manifest(index_dir: Path) -> Manifest:
    path = index_dir / "manifest.json"
    if not path.exists():
        raise InputError(index_dir, "no index here (manifest.json missing): build one with `ragdoctor index`")
    try:
        return Manifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(path, f"unreadable manifest ({str(exc).splitlines()[0]}); rebuild the index") from None


def check_compatible(manifest: Manifest, index_dir: Path, *, embedder_id: str, dim: int, normalized: bool) -> None:
    """Raise :class:`IndexMismatch` naming what differs between the saved index and the query-time embedder."""
    problems = []
    if manifest.embedder_id != embedder_id:
        problems.append(f"embedder '{manifest.embedder_id}' at build time vs '{embedder_id}' now")
    if manifest.dim != dim:
        problems.append(f"dimension {manifest.dim} vs {dim}")
    if manifest.normalized != normalized:
        problems.append(f"normalised={manifest.normalized} vs {normalized}")
    if problems:
        raise IndexMismatch(
            f"index at {index_dir} was built differently: {'; '.join(problems)}. "
            "Rebuild it with `ragdoctor index --rebuild` or query with the embedder it was built with."
        )


def check_build_settings(manifest: Manifest, *, chunking: ChunkingConfig, checksum: str) -> list[str]:
    """What makes a saved index stale for this corpus and chunking (empty list: still valid)."""
    stale = []
    if manifest.chunking != chunking:
        stale.append(f"chunking {manifest.chunking.model_dump()} vs {chunking.model_dump()}")
    if manifest.corpus_checksum != checksum:
        stale.append("corpus changed since the index was built")
    return stale
