"""The manifest saved beside an index: what it was built from and with, how many vectors it holds, and the size and
sha256 of every index file. Checked on every load, so an index is never queried with an embedder, normalisation or
chunking it was not built with, nor with a truncated, replaced or foreign file (that says "rebuild the index")."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from corpora.digest import sha256_file
from corpora.errors import InputError
from corpora.records import Document
from rag.config import BM25_LEGACY, ChunkingConfig, IndexConfig

MANIFEST_VERSION = 2  # 2: vector count and file checksums
REBUILD = "rebuild the index with `ragdoctor index --rebuild`"


class IndexMismatch(RuntimeError):
    """The index on disk was built differently from what the caller wants to query it with, or its files do not
    match its manifest."""


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bytes: int
    sha256: str


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = MANIFEST_VERSION
    embedder_id: str
    embedding_backend: str = "torch"  # rag/embedding_backends.BACKENDS; absent in manifests from before backends: fp32
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
    n_vectors: int
    files: dict[str, FileEntry]  # path relative to the index folder -> size and sha256

    @model_validator(mode="before")
    @classmethod
    def _legacy_bm25(cls, data):
        """A manifest from before the BM25 keys: its BM25 was built with the values of then, not today's defaults."""
        if isinstance(data, dict) and isinstance(data.get("index"), dict):
            data = {**data, "index": {**BM25_LEGACY, **data["index"]}}
        return data


def corpus_checksum(docs: Iterable[Document]) -> str:
    """sha256 over (id, title, text) of every document, in id order: changes when any document changes."""
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.id):
        h.update(json.dumps([d.id, d.title, d.text]).encode("utf-8"))
    return h.hexdigest()


def file_entries(index_dir: Path) -> dict[str, FileEntry]:
    """Size and sha256 of every file under ``index_dir`` but the manifest itself."""
    return {p.relative_to(index_dir).as_posix(): FileEntry(bytes=p.stat().st_size, sha256=sha256_file(p))
            for p in sorted(index_dir.rglob("*")) if p.is_file() and p.name != "manifest.json"}


def verify_files(manifest: Manifest, index_dir: Path) -> None:
    """Every file the manifest lists, with its size and sha256: IndexMismatch naming the first that differs."""
    for name, entry in manifest.files.items():
        path = index_dir / name
        if not path.is_file():
            why = "missing"
        elif path.stat().st_size != entry.bytes:
            why = f"{path.stat().st_size:,} bytes, the manifest says {entry.bytes:,}"
        elif sha256_file(path) != entry.sha256:
            why = "its sha256 differs from the manifest's"
        else:
            continue
        raise IndexMismatch(f"index at {index_dir}: {name} does not match its manifest ({why}); {REBUILD}")


def unreadable(path: Path) -> str | None:
    """Why the file at ``path`` cannot be read (permissions, an I/O error), or None when it can (or is not there): a
    manifest this process may not read is neither ours nor foreign, and is named as unreadable. Only a regular file is
    opened (a FIFO would block)."""
    try:
        if not path.is_file():
            return None
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None


def read_manifest(index_dir: Path) -> Manifest:
    path = index_dir / "manifest.json"
    if not path.exists():
        raise InputError(index_dir, "no index here (manifest.json missing): build one with `ragdoctor index`")
    if (why := unreadable(path)) is not None:  # not "not a ragdoctor manifest": nothing could tell
        raise InputError(path, f"{why}: give this process read access to the index folder's files")
    if not holds_our_index(index_dir):  # a user's own manifest.json: never advise a rebuild, which would replace it
        raise InputError(index_dir, f"holds a {path.name} that is not a ragdoctor index manifest: not an index (it is "
                                    "never replaced); choose another index folder")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise InputError(path, f"unreadable manifest ({str(exc).splitlines()[0]}); {REBUILD}") from None
    if isinstance(raw, dict) and raw.get("version") != MANIFEST_VERSION and "embedder_id" in raw:
        raise InputError(path, f"index built by another ragdoctor version (manifest version {raw.get('version')}, "
                               f"this one reads {MANIFEST_VERSION}); {REBUILD}")
    try:
        return Manifest.model_validate(raw)
    except ValueError as exc:
        raise InputError(path, f"unreadable manifest ({str(exc).splitlines()[0]}); {REBUILD}") from None


def manifest_version(index_dir: Path) -> int | None:
    try:
        raw = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return None
    return raw.get("version") if isinstance(raw, dict) else None


MANIFEST_KEYS = frozenset({"embedder_id", "corpus_checksum", "n_chunks"})  # what makes a manifest.json ours
INDEX_FILES = frozenset({"manifest.json", "chunks.jsonl", "dense.faiss", "dense.ivfdata", "bm25"})
INDEX_DATA = frozenset({"chunks.jsonl", "dense.faiss"})  # in every index, whatever its kind


def is_index_manifest(index_dir: Path) -> bool:
    """True when ``index_dir`` holds a manifest this project wrote (any version, even one that no longer loads)."""
    try:
        raw = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return False
    return isinstance(raw, dict) and MANIFEST_KEYS <= set(raw)


def holds_our_index(index_dir: Path) -> bool:
    """Whether ``index_dir`` is an index this project wrote, and so may be rebuilt in place: its manifest.json has the
    manifest's own fields; or, damaged (truncated, edited), it lies among nothing but index files and still shows its
    ``"embedder_id"`` key or lies beside an index's chunks and vectors. A folder holding a user's own
    ``manifest.json`` (an extension's, a package's) is not: it is never replaced, nor called an index to rebuild."""
    path = index_dir / "manifest.json"
    if not path.is_file():
        return False
    if is_index_manifest(index_dir):
        return True
    try:
        names = {p.name for p in index_dir.iterdir()}
        text = path.read_bytes()[:1_000_000].decode("utf-8", "replace")
    except OSError:
        return False
    damaged_ours = '"embedder_id"' in text and not _json_object(text)  # a truncated manifest: its first keys are there
    return names <= INDEX_FILES and (damaged_ours or INDEX_DATA <= names)


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def check_compatible(manifest: Manifest, index_dir: Path, *, embedder_id: str, dim: int, normalized: bool,
                     backend: str = "torch") -> None:
    """Raise :class:`IndexMismatch` naming what differs between the saved index and the query-time embedder."""
    problems = []
    if manifest.embedder_id != embedder_id:
        problems.append(f"embedder '{manifest.embedder_id}' at build time vs '{embedder_id}' now")
    if manifest.embedding_backend != backend:
        problems.append(f"embedding backend '{manifest.embedding_backend}' at build time vs '{backend}' now "
                        f"(set embedding.backend / --embedding-backend {manifest.embedding_backend})")
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
