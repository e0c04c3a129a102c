"""The data manifest of a training stage (``data_manifest.json``): what went in, each input file with its sha256, and
how a pool now differs from what a stage recorded."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from corpora.digest import folder_digest, sha256_file
from corpora.errors import InputError
from corpora.jsonl import read_json_object
from judge_train.data import DEV_FILES, DataConfig
from judge_train.sources import SOURCES, source_files


def manifest(cfg: DataConfig, pool_stats: dict, example_stats: dict, n_train: int, n_heldout: int) -> dict:
    """What went in: every input file with its sha256 and size, per source its licence and label mapping, the
    record and example counts per source and label, and what was dropped and why."""
    data_dir = Path(cfg.data_dir)
    files = []
    for name in SOURCES:
        if cfg.cap_per_label.get(name, 0) <= 0:
            continue
        for f in source_files(name, data_dir):
            files.append({"source": name, "path": str(f.relative_to(data_dir)), "bytes": f.stat().st_size,
                          "sha256": sha256_file(f)})
    return {
        "data_dir": str(data_dir),
        "sources": {n: {**asdict(s), "paths": list(s.paths)} for n, s in SOURCES.items()
                    if cfg.cap_per_label.get(n, 0) > 0},
        "files": files,
        "not_trained_on": list(DEV_FILES),
        # the teacher that chose NoMIRACL positives is an input too: its folder's digest pins which one
        **({"nomiracl_mil_teacher": {"path": cfg.nomiracl_mil_teacher,
                                     "digest": folder_digest(cfg.nomiracl_mil_teacher)}}
           if cfg.nomiracl_mil_teacher else {}),
        **pool_stats,
        **example_stats,
        "n_train": n_train,
        "n_heldout": n_heldout,
    }


def _differs(root: Path, rel: str, digest: str) -> str | None:
    """'missing' or 'changed' when the file ``rel`` under ``root`` is not the one a manifest recorded, else None."""
    p = root / rel
    if not p.is_file():
        return "missing"
    return "changed" if sha256_file(p) != digest else None


def verify_manifest(man: dict, data_dir: str | Path | None = None) -> list[str]:
    """Files whose sha256 no longer matches the manifest (empty list: the data is what the model was trained on)."""
    root = Path(data_dir or man["data_dir"])
    return [f["path"] for f in man["files"] if _differs(root, f["path"], f["sha256"])]


def data_changes(manifest_path: Path, cfg: DataConfig) -> list[str]:
    """How the pool under ``cfg.data_dir`` differs from what a stage's ``data_manifest.json`` records for the same
    sources: each file 'changed', 'missing' or 'added' (empty: the same files, byte for byte). InputError naming the
    manifest when it cannot be read as one."""
    man = read_json_object(manifest_path)
    files = man.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("path"), str)
                                              and isinstance(f.get("sha256"), str) for f in files):
        raise InputError(manifest_path, "missing or not a list of {path, sha256, ...} objects", field="files")
    root = Path(cfg.data_dir)
    recorded = {f["path"]: f["sha256"] for f in files}
    sources = {f.get("source") for f in files} & {n for n, c in cfg.cap_per_label.items() if c > 0}
    out = [f"{rel} {why}" for rel, digest in recorded.items() if (why := _differs(root, rel, digest))]
    for name in sorted(s for s in sources if isinstance(s, str) and s in SOURCES):
        for f in source_files(name, root):
            if f.is_file() and str(f.relative_to(root)) not in recorded:
                out.append(f"{f.relative_to(root)} added")
    return out
