"""The GPU path, the device side: run training recipes on a lent GPU machine from the payload judge_train/device.py
packed, and write what comes back into ``--out`` (the device tool's $OUT: at most 8 files of 16 MiB).

Started by judge_train/gpu_run.sh (which installs the carried wheels first). Uses only what the device image holds
(torch, transformers, sentence-transformers, numpy, scipy, scikit-learn) plus pydantic from the payload: never the
pipeline's stack (llama-index, faiss, bm25s, the bundled model packages). The same code trains on a CPU, which is
how the tests run it. Steps:

1. unpack the pool, cast the fp16 MiniLM back to fp32 (the run starts from the fp16-rounded base weights);
2. each recipe (judge_train/recipes/<name>.json or a path) through judge_train.train.train, unchanged except that
   ``base_model`` "minilm" is the unpacked MiniLM, "runs/judge/<stage>" an earlier recipe's output here, and the
   pool is the unpacked one (``--max-examples`` caps a smoke run);
3. ``--combine SUPPORT[:RELEVANCE]``: judge_train.package.build on those outputs, so the pool's worst-source
   numbers (the choice rule) come back for each candidate;
4. ``--embed-passages N``: embedding throughput of the MiniLM on this device in fp32, fp16 and bf16, and each
   variant's smallest cosine against fp32 (issue 16); ``--judge-pairs N``: claim-sentence pairs/s of a trained stage
   through the judge's scorer, fp32 and bf16 (the GPU row of the Ray scale-out table);
5. ``summary.json`` (every stage's timings and held-out metrics, every combine report, the embedding table),
   ``log.txt``, and with ``--bring-back STAGE`` that stage's folder as tar parts of 15 MiB plus ``split.json``
   (rebuild it here with ``python -m judge_train.device unpack DIR --out runs/judge/STAGE``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import tarfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

RECIPES = Path(__file__).parent / "recipes"
STAGE_PREFIX = "runs/judge/"


class Log:
    def __init__(self, path: Path):
        self.path = path
        self.t0 = time.time()

    def __call__(self, msg: str) -> None:
        line = f"[{time.time() - self.t0:7.1f}s] {msg}"
        print(line, flush=True)
        with open(self.path, "a") as fh:
            fh.write(line + "\n")


def recipe_path(name: str) -> Path:
    path = Path(name)
    return path if path.suffix == ".json" else RECIPES / f"{name}.json"


def prepare(payload: Path, work: Path, log: Log) -> tuple[Path, Path]:
    """Unpack the pool and the fp32 base into ``work``; returns (pool folder, base folder)."""
    from judge_train.device import cast_weights

    pool = work / "pool"
    if not (pool / "train").is_dir():
        with tarfile.open(payload / "pool.tar.xz") as tar:
            tar.extractall(pool, filter="data")
    base = work / "minilm"
    if base.exists():
        shutil.rmtree(base)
    shutil.copytree(payload / "minilm", base)
    cast_weights(base / "model.safetensors", base / "model.safetensors", "float16", "float32")
    log(f"payload ready: pool {pool / 'train'}, base {base}")
    return pool / "train", base


def stage_config(name: str, pool: Path, base: Path, runs: Path, max_examples: int | None):
    """The recipe's TrainConfig with the paths of this machine (and the smoke cap)."""
    from judge_train.train import load_recipe

    cfg = load_recipe(recipe_path(name))
    start = cfg.base_model
    if start == "minilm":
        start = str(base)
    elif start.startswith(STAGE_PREFIX):
        start = str(runs / start[len(STAGE_PREFIX):])
    update: dict = {"base_model": start, "data": cfg.data.model_copy(update={"data_dir": str(pool)})}
    if max_examples:
        update["max_examples"] = max_examples
    return cfg.model_copy(update=update)


def _best_of(run: Callable[[], object], device: str, rounds: int = 3) -> tuple[float, object]:
    """The fastest of ``rounds`` timed calls (CUDA synchronised around each) and the last call's result."""
    import torch

    best, result = float("inf"), None
    for _ in range(rounds):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        result = run()
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, result


def embed_bench(base: Path, texts: list[str], log: Log, batch_size: int = 128) -> list[dict]:
    """Passages/s of the MiniLM embedder on this machine's device in fp32, fp16 and bf16 (one warm-up pass, then the
    best of three timed passes), and each variant's smallest cosine against fp32."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows, ref = [], None
    for dtype in ("fp32", "fp16", "bf16"):
        model = SentenceTransformer(str(base), device=device, local_files_only=True)
        if dtype != "fp32":
            model = model.to(torch.float16 if dtype == "fp16" else torch.bfloat16)
        model.encode(texts[: batch_size], batch_size=batch_size)
        best, vecs = _best_of(partial(model.encode, texts, batch_size=batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True), device)
        vecs = np.asarray(vecs, dtype=np.float64)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        ref = vecs if ref is None else ref
        row = {"dtype": dtype, "device": device, "passages": len(texts), "batch_size": batch_size,
               "passages_per_s": round(len(texts) / best, 1), "min_cosine_vs_fp32": round(float((vecs * ref).sum(1).min()), 6)}
        log(f"embedding {row}")
        rows.append(row)
        del model
    return rows


def judge_bench(stage: Path, pairs: list[tuple[str, str]], log: Log, max_length: int = 160) -> list[dict]:
    """Claim-sentence pairs/s of a trained stage through the judge's own scorer (eval/judges/cross_encoder.py) on this
    machine's device, fp32 and bf16 autocast at two batch sizes (best of three timed passes after a warm-up), and
    bf16's largest |P(supported) - fp32| over the pairs. The Ray scale-out table needs this GPU number."""
    import numpy as np
    import torch

    from eval.judges.cross_encoder import CrossEncoderScorer
    from rag.precision import bf16_autocast

    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows, ref = [], None
    for batch_size in (32, 256):
        scorer = CrossEncoderScorer(stage, max_length=max_length, batch_size=batch_size, device=device)
        for precision in ("fp32", "bf16"):
            with bf16_autocast(device, precision == "bf16"):
                scorer.support(pairs[:batch_size])
                best, verdicts = _best_of(partial(scorer.support, pairs), device)
            probs = np.array([s.supported for s in verdicts])
            ref = probs if ref is None else ref
            row = {"precision": precision, "batch_size": batch_size, "device": device, "pairs": len(pairs),
                   "max_length": max_length, "pairs_per_s": round(len(pairs) / best, 1),
                   "max_abs_dp_vs_fp32": round(float(np.abs(probs - ref).max()), 4)}
            log(f"judge {row}")
            rows.append(row)
    return rows


def pool_texts(pool: Path, n: int) -> list[str]:
    """``n`` evidence passages of the pool (its claim sources first), for the embedding benchmark."""
    from judge_train.data import DataConfig, read_pool

    records, _ = read_pool(DataConfig(data_dir=str(pool), heldout_percent=10))
    seen, texts = set(), []
    for r in records:
        if r.evidence not in seen:
            seen.add(r.evidence)
            texts.append(r.evidence)
        if len(texts) >= n:
            break
    return texts


def run(args) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out / "log.txt")
    import torch

    from judge_train.train import train

    work = Path(args.work)
    runs = work / "runs"
    summary: dict = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                     "torch": torch.__version__, "stages": {}, "combine": {}, "embedding": []}
    log(f"device: {summary['device']}, torch {torch.__version__}")
    pool, base = prepare(Path(args.payload), work, log)
    for name in [n for n in args.recipes.split(",") if n]:
        cfg = stage_config(name, pool, base, runs, args.max_examples)
        stem = recipe_path(name).stem
        res = train(cfg, runs / stem, log=log)
        metrics = json.loads((runs / stem / "heldout_metrics.json").read_text())
        summary["stages"][stem] = {"recipe": res["recipe"], "n_train": res["n_train"], "fit": res["fit"],
                                   "export_ok": res["export"]["ok"], "export_status": res["export"]["status"],
                                   "total_seconds": res["total_seconds"], **metrics}
        _write(out, summary)
    for spec in args.combine:
        from judge_train.package import build

        sup, _, rel = spec.partition(":")
        folder = work / "judges" / spec.replace(":", "+")
        res = build(runs / sup, runs / rel if rel else None, folder, str(pool), per_label=args.per_label,
                    percent=args.heldout_percent, log=log)
        report = json.loads((folder / "heldout_metrics.json").read_text())
        summary["combine"][spec] = {"seconds": res["seconds"], "combiner": json.loads((folder / "combiner.json")
                                                                                     .read_text()), "report": report}
        _write(out, summary)
    if args.embed_passages:
        summary["embedding"] = embed_bench(base, pool_texts(pool, args.embed_passages), log)
    if args.judge_pairs:
        stage = runs / (args.bring_back or recipe_path(args.recipes.split(",")[-1]).stem)
        held = [json.loads(line) for line in (stage / "heldout_examples.jsonl").read_text().splitlines()]
        pairs = [(e["premise"], e["hypothesis"]) for e in held][: args.judge_pairs]
        summary["judge"] = judge_bench(stage, pairs, log)
        _write(out, summary)
    if args.bring_back:
        from judge_train.device import split

        folder = runs / args.bring_back
        record = split(folder, out / "stage")
        (out / "stage" / "split.json").write_text(json.dumps(record, indent=1) + "\n")
        summary["brought_back"] = record
        log(f"{folder} -> {out / 'stage'} in {len(record['parts'])} parts")
    _write(out, summary)
    log("done")
    return summary


def _write(out: Path, summary: dict) -> None:
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="judge_train/gpu_run.sh", description=__doc__.split("\n\n")[0])
    p.add_argument("--payload", default=".device", help="the folder judge_train/device.py packed")
    p.add_argument("--out", required=True, help="where results go (the device tool's $OUT)")
    p.add_argument("--work", default="/tmp/ragdoctor-gpu", help="scratch folder for the pool and the stages")
    p.add_argument("--recipes", default="nli-stage,support-stage,relevance-stage",
                   help="comma-separated recipe names (judge_train/recipes) or .json paths, run in order")
    p.add_argument("--max-examples", type=int, help="cap each stage's training examples (a smoke run)")
    p.add_argument("--combine", action="append", default=[], metavar="SUPPORT[:RELEVANCE]",
                   help="assemble a judge from these stages' outputs and report the pool's worst case (repeatable)")
    p.add_argument("--per-label", type=int, default=120, help="held-out records per label per source for combine")
    p.add_argument("--heldout-percent", type=int, default=10, help="the pool's held-out share (the recipes' 10)")
    p.add_argument("--embed-passages", type=int, default=0, help="embedding benchmark on this many pool passages")
    p.add_argument("--judge-pairs", type=int, default=0,
                   help="judge throughput on this many held-out pairs of the --bring-back (else the last) stage")
    p.add_argument("--bring-back", metavar="STAGE", help="return this stage's folder as tar parts")
    run(p.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
