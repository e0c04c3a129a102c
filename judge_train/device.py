"""The GPU path, this side: get a training run onto a lent GPU machine and its result back (issue 11, item 5).

The device tool copies the working tree (tracked files, untracked files git does not ignore, and the ignored paths a
call names in ``carry``) and refuses more than 64 MiB. This repository's tracked weights (three fp16 cross-encoders,
45 MB each) are over that on their own, and the training pool and the bundled MiniLM live outside the checkout. So::

    python -m judge_train.device pack       # .device/: the pool (tar.xz), the bundled MiniLM in fp16, the wheels
                                            #   the device image lacks (pydantic), a manifest with every sha256
    python -m judge_train.device stash      # tracked files of 1 MiB or more -> .device-stash/ (ignored), so they stay
    python -m judge_train.device size       # what would travel now, against the limit
    (device) bash judge_train/gpu_run.sh --out $OUT ...          with carry [".device"]; judge_train/gpu_run.py
    python -m judge_train.device restore    # the stashed weights back, each checked against its sha256
    python -m judge_train.device unpack DIR --out runs/judge/X   # a stage folder brought back in parts, checked

``pack`` and ``stash`` add both folders to ``.git/info/exclude``. While weights are stashed ``make check`` refuses to
pass, so a commit cannot delete them by accident.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from corpora.digest import sha256_file
from corpora.errors import InputError
from judge_train.out_folder import replaceable_out

LIMIT_BYTES = 64 * 1024 * 1024
STASH_MIN_BYTES = 1024 * 1024
PAYLOAD = ".device"
STASH = ".device-stash"
STASH_LIST = "STASHED.json"
# what the device image lacks of the training code's imports (its python is 3.12 with torch, transformers, numpy,
# scipy, scikit-learn and pandas: /work/.library/device/KINDS.md), and sentence-transformers at this checkout's
# version (the image's is older), so the stages are trained by the same library code as here
WHEELS = ("pydantic", "pydantic-core", "annotated-types", "typing-inspection", "sentence-transformers")
# the bundled MiniLM's files a SentenceTransformer / CrossEncoder load reads (README, data_config: not needed)
BASE_FILES = ("config.json", "config_sentence_transformers.json", "modules.json", "sentence_bert_config.json",
              "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
              "1_Pooling/config.json")
PART_BYTES = 15 * 1024 * 1024  # the device returns files of at most 16 MiB


class DeviceError(Exception):
    """A one-line reason the step cannot run (the CLI prints it and exits 2)."""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _exclude(repo: Path, *names: str) -> None:
    """Add ``/name/`` lines to .git/info/exclude (kept out of git without touching the tracked .gitignore)."""
    path = Path(_git(repo, "rev-parse", "--git-path", "info/exclude").strip())
    path = path if path.is_absolute() else repo / path
    have = path.read_text().splitlines() if path.exists() else []
    new = [f"/{n}/" for n in names if f"/{n}/" not in have]
    if new:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join([*have, *new]) + "\n")


def travelling(repo: Path, carry: tuple[str, ...] = ()) -> dict[str, int]:
    """Size of every file a device call would copy: tracked files present on disk, untracked files git does not
    ignore, and the files under ``carry``."""
    names = _git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    sizes = {n: (repo / n).stat().st_size for n in names if n and (repo / n).is_file()}
    for c in carry:
        root = repo / c
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        sizes.update({p.relative_to(repo).as_posix(): p.stat().st_size for p in files})
    return sizes


def stash(repo: Path, min_bytes: int = STASH_MIN_BYTES) -> list[str]:
    """Move every tracked file of ``min_bytes`` or more into .device-stash/ (same relative path); returns them."""
    dest = repo / STASH
    if (dest / STASH_LIST).exists():
        raise DeviceError(f"weights are already stashed in {dest}: python -m judge_train.device restore")
    _exclude(repo, STASH, PAYLOAD)
    names = [n for n in _git(repo, "ls-files", "-z").split("\0")
             if n and (repo / n).is_file() and (repo / n).stat().st_size >= min_bytes]
    listed = {n: sha256_file(repo / n) for n in names}
    dest.mkdir(exist_ok=True)
    (dest / STASH_LIST).write_text(json.dumps(listed, indent=1) + "\n")
    for n in names:
        (dest / n).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(repo / n), dest / n)
    return names


def restore(repo: Path) -> list[str]:
    """Put the stashed files back, each checked against the sha256 it had when stashed; removes .device-stash/."""
    dest = repo / STASH
    if not (dest / STASH_LIST).exists():
        return []
    listed: dict[str, str] = json.loads((dest / STASH_LIST).read_text())
    for n, digest in listed.items():
        src = dest / n
        if not src.exists() and (repo / n).exists() and sha256_file(repo / n) == digest:
            continue  # already back (an interrupted restore)
        if not src.exists() or sha256_file(src) != digest:
            raise DeviceError(f"{src}: missing or changed since it was stashed; restore it by hand (git checkout -- {n})")
        (repo / n).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(src), repo / n)
    shutil.rmtree(dest)
    return list(listed)


def cast_weights(src: Path, dst: Path, from_dtype: str, to_dtype: str) -> None:
    """A safetensors file with its ``from_dtype`` tensors cast to ``to_dtype`` (others, e.g. int64 ids, unchanged)."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(src))
    save_file({k: v.astype(to_dtype) if v.dtype == from_dtype else v for k, v in tensors.items()}, str(dst),
              metadata={"format": "pt"})


def _fp16_copy(base: Path, out: Path) -> dict:
    """The sentence-transformers folder ``base`` with model.safetensors in fp16 (half the bytes); gpu_run.py casts it
    back to fp32 before training, so the run starts from the fp16-rounded weights (max |error| ~1e-3 of a weight)."""
    cast_weights(base / "model.safetensors", out / "model.safetensors", "float32", "float16")
    for name in BASE_FILES:
        if (base / name).exists():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(base / name, out / name)
    return {"source": str(base), "source_sha256": sha256_file(base / "model.safetensors")}


def _wheels(out: Path, python: str = "3.12") -> list[str]:
    """Download the wheels the device image lacks, at the versions installed here, for its CPython on x86-64."""
    from importlib.metadata import version

    pins = [f"{name}=={version(name)}" for name in WHEELS]
    plats = [a for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
             for a in ("--platform", p)]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
           python, "--implementation", "cp", *plats, "-d", str(out), *pins]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise DeviceError(f"pip download failed for {' '.join(pins)}: {done.stderr.strip().splitlines()[-1:]}")
    return sorted(p.name for p in out.glob("*.whl"))


def pack(repo: Path, data_dir: Path, base: Path, *, wheels: bool = True, preset: int = 9) -> dict:
    """Write .device/ (replacing it): pool.tar.xz, minilm/ (fp16), wheels/, manifest.json. Returns the manifest."""
    if not data_dir.is_dir():
        raise DeviceError(f"training pool not found: {data_dir} (pass --data-dir)")
    if not (base / "model.safetensors").is_file():
        raise DeviceError(f"not a sentence-transformers folder with model.safetensors: {base}")
    out = repo / PAYLOAD
    if out.exists():
        shutil.rmtree(out)
    (out / "minilm").mkdir(parents=True)
    (out / "wheels").mkdir()
    _exclude(repo, STASH, PAYLOAD)
    t0 = time.time()
    with tarfile.open(out / "pool.tar.xz", "w:xz", preset=preset) as tar:
        tar.add(data_dir, arcname="train")
    man = {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "data_dir": str(data_dir),
           "base": _fp16_copy(base, out / "minilm"), "wheels": _wheels(out / "wheels") if wheels else [],
           "seconds": 0.0}
    man["seconds"] = round(time.time() - t0, 1)
    man["files"] = {p.relative_to(out).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
                    for p in sorted(out.rglob("*")) if p.is_file()}
    (out / "manifest.json").write_text(json.dumps(man, indent=1) + "\n")
    return man


def split(folder: Path, out: Path, part_bytes: int = PART_BYTES) -> dict:
    """A folder as a tar cut into parts of at most ``part_bytes`` (``<name>.tar.000``, ...); returns their record."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f"{folder.name}.tar"
    with tarfile.open(tmp, "w") as tar:
        tar.add(folder, arcname=folder.name)
    digest = sha256_file(tmp)
    parts = []
    with open(tmp, "rb") as fh:
        while chunk := fh.read(part_bytes):
            part = out / f"{folder.name}.tar.{len(parts):03d}"
            part.write_bytes(chunk)
            parts.append(part.name)
    tmp.unlink()
    return {"folder": folder.name, "parts": parts, "sha256": digest}


def unpack(parts_dir: Path, out: Path) -> Path:
    """Join the parts ``split`` wrote (read from parts_dir/split.json), check the sha256, extract the folder to
    ``out`` (replaced if it exists)."""
    replaceable_out(out, [parts_dir], what="stage folder")
    spec_path = parts_dir / "split.json"
    if not spec_path.is_file():
        raise DeviceError(f"{spec_path}: not found (the device run's --bring-back writes it beside the parts)")
    spec = json.loads(spec_path.read_text())
    h = hashlib.sha256()
    joined = out.parent / f".{out.name}.tar"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(joined, "wb") as fh:
        for name in spec["parts"]:
            data = (parts_dir / name).read_bytes()
            h.update(data)
            fh.write(data)
    if h.hexdigest() != spec["sha256"]:
        joined.unlink()
        raise DeviceError(f"{parts_dir}: the joined parts do not match the sha256 in split.json (a part is missing "
                          "or damaged)")
    tmp = out.parent / f".{out.name}.extract"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(joined) as tar:
        tar.extractall(tmp, filter="data")
    joined.unlink()
    if out.exists():
        shutil.rmtree(out)
    (tmp / spec["folder"]).rename(out)
    shutil.rmtree(tmp)
    return out


def _repo() -> Path:
    return Path(_git(Path.cwd(), "rev-parse", "--show-toplevel").strip())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m judge_train.device", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pk = sub.add_parser("pack", help="write .device/: the pool, the bundled MiniLM in fp16, the missing wheels")
    pk.add_argument("--data-dir", default="../shared/data/train")
    pk.add_argument("--no-wheels", action="store_true", help="skip the pip download (a device with pydantic)")
    sub.add_parser("stash", help="move tracked files of 1 MiB or more into .device-stash/ (ignored)")
    sub.add_parser("restore", help="put them back, checked against their sha256")
    sz = sub.add_parser("size", help="what a device call would copy now, against the 64 MiB limit")
    sz.add_argument("--carry", action="append", default=[PAYLOAD])
    up = sub.add_parser("unpack", help="join and extract a stage folder a device run brought back")
    up.add_argument("parts_dir")
    up.add_argument("--out", required=True)
    args = p.parse_args(argv)
    try:
        repo = _repo()
        if args.cmd == "pack":
            from rag.models import minilm_path

            man = pack(repo, Path(args.data_dir), minilm_path(), wheels=not args.no_wheels)
            total = sum(f["bytes"] for f in man["files"].values())
            print(f"{repo / PAYLOAD}: {total / 2**20:.1f} MiB in {len(man['files'])} files ({man['seconds']} s)")
        elif args.cmd == "stash":
            moved = stash(repo)
            print(f"stashed {len(moved)} files in {repo / STASH}; put them back with: python -m judge_train.device "
                  "restore")
        elif args.cmd == "restore":
            print(f"restored {len(restore(repo))} files")
        elif args.cmd == "size":
            sizes = travelling(repo, tuple(c for c in args.carry if (repo / c).exists()))
            total = sum(sizes.values())
            for name, n in sorted(sizes.items(), key=lambda kv: -kv[1])[:5]:
                print(f"{n / 2**20:8.1f} MiB  {name}")
            print(f"{total / 2**20:.1f} MiB would travel (limit {LIMIT_BYTES / 2**20:.0f} MiB)")
            if total > LIMIT_BYTES:
                raise DeviceError("too large for a device call: python -m judge_train.device stash")
        else:
            print(f"stage folder: {unpack(Path(args.parts_dir), Path(args.out))}")
    except (DeviceError, InputError, OSError, subprocess.CalledProcessError) as exc:
        print(f"ragdoctor: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
