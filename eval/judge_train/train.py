"""The recipe: fine-tune the bundled all-MiniLM-L6-v2 into a 1-logit (premise, hypothesis) -> P(supported)
cross-encoder, fit the combiner on the held-out slice, export fp16, check the export.

Seeded end to end (python, numpy, torch; the data split is a hash of each record's group). Uses CUDA when torch sees
it, else the CPU (2 cores: about 16 minutes for the default recipe when the machine is quiet). Writes into ``out``:

  model.safetensors (fp16) + config.json + tokenizer files    a sentence-transformers CrossEncoder folder
  combiner.json            logistic-regression coefficients over (cross-encoder logit, lexical, cosine) features
  training_config.json     this recipe (TrainConfig), library versions, device, timings, export check
  data_manifest.json       sha256 of every input file, licences, record/example counts per source and label
  heldout_metrics.json     AUROC per source on the held-out slice of the training pool
"""
from __future__ import annotations

import json
import math
import platform
import random
import shutil
import time
from dataclasses import asdict
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from eval.judge_train.data import (DataConfig, Example, build_examples, manifest, read_pool, read_relevance_pool,
                                   relevance_examples)

RECIPE = "groundedness-minilm-v1"


class TrainConfig(BaseModel):
    """The whole recipe; ``training_config.json`` holds it, so ``TrainConfig(**saved['recipe'])`` repeats a run."""

    model_config = ConfigDict(extra="forbid")

    recipe: str = RECIPE
    # what the cross-encoder learns: 'support' (premise, claim) -> supported, 'relevance' (passage, question) -> the
    # passage bears on the question
    task: Literal["support", "relevance"] = "support"
    # 'minilm' = the bundled all-MiniLM-L6-v2 (rag.models.minilm_path()), or a folder: a CrossEncoder trained by an
    # earlier stage (e.g. general NLI first, then the claim-level pool)
    base_model: str = "minilm"
    seed: int = 13
    epochs: float = Field(2.0, gt=0)
    max_examples: int | None = None  # cap on training examples after balancing (None: all)
    max_length: int = 128
    batch_size: int = 16
    lr: float = 5e-5
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    combiner: bool = True
    combiner_features: list[str] = Field(default_factory=lambda: ["ce_logit", "lexical", "cosine"])
    relevance_pairs_per_label: int = 300
    export_check_pairs: int = 128
    data: DataConfig = Field(default_factory=DataConfig)


Log = Callable[[str], None]


def _seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def _base_path(base: str) -> str:
    if base == "minilm":
        from rag.models import minilm_path

        return str(minilm_path())
    return base


def _batches(examples: list[Example], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Length-bucketed batches (shuffled chunks sorted by length, then the batches shuffled): little padding, so the
    CPU spends its time on tokens that exist."""
    idx = list(range(len(examples)))
    rng.shuffle(idx)
    chunk = batch_size * 50
    batches: list[list[int]] = []
    for s in range(0, len(idx), chunk):
        part = sorted(idx[s : s + chunk], key=lambda i: len(examples[i].premise) + len(examples[i].hypothesis))
        batches += [part[j : j + batch_size] for j in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def fine_tune(ce, examples: list[Example], cfg: TrainConfig, device: str, log: Log) -> dict:
    """Binary cross-entropy on the single logit, AdamW, linear warm-up then decay, gradient clipping at 1."""
    import torch

    model, tok = ce.model, ce.tokenizer
    model.to(device)
    model.train()
    rng = random.Random(cfg.seed)
    n_epochs = math.ceil(cfg.epochs)
    plan = [_batches(examples, cfg.batch_size, rng) for _ in range(n_epochs)]
    total = int(round(len(plan[0]) * cfg.epochs))
    steps = [b for epoch in plan for b in epoch][:total]
    decay = [p for n, p in model.named_parameters() if not any(k in n for k in ("bias", "LayerNorm", "layer_norm"))]
    no_decay = [p for n, p in model.named_parameters() if any(k in n for k in ("bias", "LayerNorm", "layer_norm"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
    warm = max(1, int(total * cfg.warmup_ratio))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm)))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    use_amp = device.startswith("cuda")
    t0, seen, running = time.time(), 0, []
    for step, batch in enumerate(steps, 1):
        exs = [examples[i] for i in batch]
        feats = tok([e.premise for e in exs], [e.hypothesis for e in exs], padding=True, truncation=True,
                    max_length=cfg.max_length, return_tensors="pt").to(device)
        labels = torch.tensor([float(e.label) for e in exs], device=device)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_amp):
            logits = model(**feats).logits.squeeze(-1)
        loss = loss_fn(logits.float(), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        seen += len(exs)
        running.append(loss.item())
        if step % 50 == 0 or step == total:
            rate = seen / (time.time() - t0)
            log(f"step {step}/{total}  loss {np.mean(running[-50:]):.4f}  {rate:.1f} ex/s  "
                f"eta {(total - step) * cfg.batch_size / max(rate, 1e-9) / 60:.1f} min")
    model.eval()
    return {"steps": total, "examples_seen": seen, "seconds": round(time.time() - t0, 1),
            "final_loss": round(float(np.mean(running[-50:])), 4) if running else None}


def export_fp16(ce, out: Path) -> None:
    """Save the CrossEncoder with fp16 weights, and a config that loads them back as fp32 (fp16 matmuls are slow
    or missing on CPUs); sentence-transformers' generated README is replaced by our MODEL_CARD.md."""
    model = ce.model
    model.half()
    try:
        ce.save_pretrained(str(out))
    finally:
        model.float()
    cfg_path = out / "config.json"
    cfg = json.loads(cfg_path.read_text())
    for key in ("torch_dtype", "dtype"):
        if key in cfg:
            cfg[key] = "float32"
    cfg["id2label"], cfg["label2id"] = {"0": "supported"}, {"supported": 0}
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (out / "README.md").unlink(missing_ok=True)


def reference_scores(ce, pairs: list[tuple[str, str]]) -> np.ndarray:
    """P(supported) of the in-memory fp32 model (taken before the fp16 export rounds its weights)."""
    if not pairs:
        return np.zeros(0)
    raw = ce.predict(pairs, batch_size=32, show_progress_bar=False, convert_to_numpy=True, activation_fn=None)
    return 1 / (1 + np.exp(-np.asarray(raw, dtype=np.float64).reshape(-1)))


def check_export(ref: np.ndarray, out: Path, pairs: list[tuple[str, str]], max_length: int) -> dict:
    """Load the exported folder the way the project does (CrossEncoderScorer) and compare P(supported) with the
    fp32 model's scores on the same pairs."""
    from eval.judges.nli import CrossEncoderScorer

    scorer = CrossEncoderScorer(out, max_length=max_length, device="cpu")
    got = np.array([s.supported for s in scorer.support(pairs)])
    diff = float(np.max(np.abs(got - ref))) if len(pairs) else 0.0
    return {"pairs": len(pairs), "max_abs_diff": round(diff, 6), "ok": diff <= 1e-2,
            "loaded_dtype": str(scorer.model.model.dtype)}


def _auroc(y: list[int], s: list[float] | np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    s = np.asarray(s, dtype=float)
    return float(roc_auc_score(y, s)) if len(set(y)) == 2 and np.isfinite(s).all() else None


def _source_weights(sources: list[str]) -> np.ndarray:
    """Every source weighs the same in the fit, however many rows it has (HaluEval must not set the coefficients)."""
    counts = {src: sources.count(src) for src in set(sources)}
    return np.array([len(sources) / (len(counts) * counts[src]) for src in sources])


def _fit_lr(x: np.ndarray, y: np.ndarray, w: np.ndarray):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0, max_iter=1000).fit(x, y, sample_weight=w)


def _cv_proba(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """5-fold cross-validated P(1) (NaN where there are too few rows of a class to fold)."""
    from sklearn.model_selection import StratifiedKFold

    out = np.full(len(y), np.nan)
    if min(int((y == 0).sum()), int((y == 1).sum())) < 5:
        return out
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(x, y):
        out[te] = _fit_lr(x[tr], y[tr], w[tr]).predict_proba(x[te])[:, 1]
    return out


def _loso(x: np.ndarray, y: np.ndarray, sources: list[str]) -> dict[str, float | None]:
    """Leave one source out: fit on the other sources, AUROC on the one left out (transfer to an unseen source)."""
    src = np.array(sources)
    out: dict[str, float | None] = {}
    for s in sorted(set(sources)):
        tr, te = src != s, src == s
        if len(set(y[tr])) < 2:
            out[s] = None
            continue
        model = _fit_lr(x[tr], y[tr], _source_weights(list(src[tr])))
        out[s] = _auroc(y[te].tolist(), model.predict_proba(x[te])[:, 1])
    return out


FEATURE_COST = {"ce_logit": 0, "lexical": 0, "cosine": 1}  # cosine costs a sentence-embedding pass per text


def _cost(features: list[str]) -> int:
    return sum(FEATURE_COST.get(f, 1) for f in features)


def _choose_features(x: np.ndarray, y: np.ndarray, sources: list[str], names: list[str]) -> tuple[list[str], dict]:
    """The feature subset (always with the cross-encoder) whose leave-one-source-out AUROC, averaged over sources,
    is highest; a feature that costs a model pass (cosine) must add more than 0.005 to be kept, a free one (lexical)
    only has to add something. Chosen on the training pool only."""
    import itertools

    others = [n for n in names if n != "ce_logit"]
    candidates = [["ce_logit", *c] for k in range(len(others) + 1) for c in itertools.combinations(others, k)]
    table = {}
    for cand in candidates:
        cols = [names.index(n) for n in cand]
        per = _loso(x[:, cols], y, sources)
        vals = [v for v in per.values() if v is not None]
        table["+".join(cand)] = {"mean": float(np.mean(vals)) if vals else None, "per_source": per}
    best = ["ce_logit"]
    for cand in candidates:
        m, b = table["+".join(cand)]["mean"], table["+".join(best)]["mean"]
        if m is not None and b is not None and m > b + 0.005 * max(0, _cost(cand) - _cost(best)):
            best = cand
    return best, table


def _fit_one(x: np.ndarray, y: np.ndarray, sources: list[str], names: list[str], what: str) -> tuple[dict, dict]:
    chosen, table = _choose_features(x, y, sources, names) if len(set(sources)) > 1 else (names, {})
    cols = [names.index(n) for n in chosen]
    w = _source_weights(sources)
    model = _fit_lr(x[:, cols], y, w)
    cv = _cv_proba(x[:, cols], y, w)
    report: dict = {"features_chosen": chosen, "leave_one_source_out": table, "per_source": {}}
    for src in [*sorted(set(sources)), "all"]:
        m = np.array([src == "all" or s == src for s in sources])
        ys = y[m].tolist()
        report["per_source"][src] = {"n": int(m.sum()), "combiner_cv": _auroc(ys, cv[m]),
                                     **{n: _auroc(ys, x[m, i]) for i, n in enumerate(names)}}
    spec = {"features": chosen, "coef": model.coef_[0].round(6).tolist(),
            "intercept": round(float(model.intercept_[0]), 6),
            "fit_on": f"{len(y)} held-out {what} pairs, sources weighted equally"}
    return spec, report


def fit_combiners(out: Path, held: list[Example], rel: list[tuple[str, str, int, str]], cfg: TrainConfig,
                  log: Log) -> dict:
    """Fit the support and relevance combiners on the held-out slice with the exported model (as it will be loaded).
    The feature set is chosen by leave-one-source-out AUROC; the report gives, per source, AUROC of each feature
    alone and of the combiner (5-fold cross-validated, so it is not scored on the rows it was fit on)."""
    from eval.judges.compact import CompactNLIScorer, relevance_features, support_features

    scorer = CompactNLIScorer(out, combiner=None)
    names = list(cfg.combiner_features)
    pairs = [(e.premise, e.hypothesis) for e in held]
    t0 = time.time()
    feats = support_features(scorer, pairs, names)
    log(f"held-out support features for {len(pairs)} pairs in {time.time() - t0:.0f}s")
    combiner: dict = {}
    report: dict = {}
    combiner["support"], report["support"] = _fit_one(feats, np.array([e.label for e in held]),
                                                      [e.source for e in held], names, "claim")
    log(f"support combiner: {combiner['support']['features']}")
    if rel:
        t0 = time.time()
        rfeats = relevance_features(scorer, [(q, p) for q, p, _, _ in rel], names)
        log(f"held-out relevance features for {len(rel)} pairs in {time.time() - t0:.0f}s")
        combiner["relevance"], report["relevance"] = _fit_one(rfeats, np.array([lab for _, _, lab, _ in rel]),
                                                              [s for *_, s in rel], names, "relevance")
        log(f"relevance combiner: {combiner['relevance']['features']}")
    (out / "combiner.json").write_text(json.dumps(combiner, indent=2) + "\n")
    return report


def heldout_auroc(out: Path, held: list[Example], cfg: TrainConfig) -> dict[str, float | None]:
    """AUROC of the exported cross-encoder alone on each source's held-out slice, and the minimum over sources."""
    from eval.judges.nli import CrossEncoderScorer

    scorer = CrossEncoderScorer(out, max_length=cfg.max_length)
    scores = [s.supported for s in scorer.support([(e.premise, e.hypothesis) for e in held])]
    per = {}
    for src in sorted({e.source for e in held}):
        idx = [i for i, e in enumerate(held) if e.source == src]
        per[src] = _auroc([held[i].label for i in idx], [scores[i] for i in idx])
    vals = [v for v in per.values() if v is not None]
    per["min"] = min(vals) if vals else None
    return {k: (round(v, 4) if v is not None else None) for k, v in per.items()}


def _code_hashes() -> dict:
    """sha256 of the code the examples depend on (claim splitting and example construction change the data)."""
    import hashlib

    import eval.claims
    import eval.judge_train.data
    import eval.judge_train.sources
    import eval.metrics

    return {m.__name__: hashlib.sha256(Path(m.__file__).read_bytes()).hexdigest()[:16]
            for m in (eval.claims, eval.metrics, eval.judge_train.data, eval.judge_train.sources)}


def _versions() -> dict:
    import sentence_transformers
    import sklearn
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__, "sklearn": sklearn.__version__}


def train(cfg: TrainConfig, out: str | Path, log: Log = print) -> dict:
    """Run the recipe into ``out`` (replaced if it exists). Returns the summary written to training_config.json."""
    import torch
    from sentence_transformers import CrossEncoder

    from rag.embeddings import quiet_model_loading

    out = Path(out)
    t_start = time.time()
    _seed_everything(cfg.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    log(f"device: {device} ({torch.get_num_threads()} CPU threads)")
    if cfg.task == "relevance":
        records, pool_stats = read_relevance_pool(cfg.data, cfg.seed)
        train_ex, held_ex, ex_stats = relevance_examples(records, cfg.data, cfg.seed)
    else:
        records, pool_stats = read_pool(cfg.data)
        train_ex, held_ex, ex_stats = build_examples(records, cfg.data, cfg.seed)
    if cfg.max_examples:
        train_ex = train_ex[: cfg.max_examples]
    log(f"pool: {len(records)} records -> {len(train_ex)} training / {len(held_ex)} held-out examples")
    quiet_model_loading()
    _seed_everything(cfg.seed)  # the head's initialisation must not depend on how much data was read
    ce = CrossEncoder(_base_path(cfg.base_model), num_labels=1, max_length=cfg.max_length, device=device,
                      local_files_only=True)
    fit = fine_tune(ce, train_ex, cfg, device, log)
    log(f"fine-tuned: {fit['steps']} steps in {fit['seconds'] / 60:.1f} min")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    check_pairs = [(e.premise, e.hypothesis) for e in held_ex[: cfg.export_check_pairs]]
    ref = reference_scores(ce, check_pairs)
    export_fp16(ce, out)
    export = check_export(ref, out, check_pairs, cfg.max_length)
    log(f"export check: max |dP| = {export['max_abs_diff']} over {export['pairs']} pairs ({'ok' if export['ok'] else 'FAILED'})")
    del ce
    (out / "heldout_examples.jsonl").write_text("".join(json.dumps(asdict(e)) + "\n" for e in held_ex))
    metrics = {"heldout_auroc": heldout_auroc(out, held_ex, cfg)}
    log(f"held-out AUROC of the bare cross-encoder: {metrics['heldout_auroc']}")
    man = manifest(cfg.data, pool_stats, ex_stats, len(train_ex), len(held_ex))
    (out / "data_manifest.json").write_text(json.dumps(man, indent=1) + "\n")
    (out / "heldout_metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    summary = {"recipe": json.loads(cfg.model_dump_json()), "device": device, "threads": torch.get_num_threads(),
               "versions": _versions(), "code_sha256": _code_hashes(), "base_model_path": _base_path(cfg.base_model), "fit": fit,
               "export": export, "folder_bytes": size, "total_seconds": round(time.time() - t_start, 1)}
    (out / "training_config.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_model_card(out)
    log(f"done in {summary['total_seconds'] / 60:.1f} min; folder {size / 1e6:.1f} MB: {out}")
    return summary


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def write_model_card(out: Path, dev_table: str | None = None, extra: str | None = None) -> Path:
    """MODEL_CARD.md from the folder's own records (recipe, manifest, held-out metrics); ``dev_table`` is the
    meta-evaluation table on the human-labelled dev sets, measured separately (markdown), when there is one;
    ``extra`` more markdown (known limits, what did not work)."""
    summary = json.loads((out / "training_config.json").read_text())
    man = json.loads((out / "data_manifest.json").read_text())
    metrics = json.loads((out / "heldout_metrics.json").read_text()) if (out / "heldout_metrics.json").exists() else {}
    r = summary["recipe"]
    comb = json.loads((out / "combiner.json").read_text()) if (out / "combiner.json").exists() else {}
    feats = "; ".join(f"{k}: {' + '.join(v['features'])}" for k, v in comb.items()) or "none (bare cross-encoder)"
    lines = [f"# {r['recipe']}: compact groundedness judge", "",
             "A (premise, claim) -> P(supported) cross-encoder fine-tuned from all-MiniLM-L6-v2 (Apache-2.0) on a "
             "permissively licensed training pool, shipped as fp16 safetensors, plus `combiner.json`: logistic "
             f"regressions over its logit and cheap features ({feats}; eval/judges/compact.py). The project's "
             "default NLI judge for groundedness (claim vs sentence window) and a signal for context relevance.", "",
             "## Recipe", "",
             f"- base: bundled all-MiniLM-L6-v2 ({summary['base_model_path'].split('site-packages/')[-1]}), 1-logit head, "
             f"BCE loss, AdamW lr {r['lr']}, warm-up {r['warmup_ratio']}, weight decay {r['weight_decay']}, "
             f"batch {r['batch_size']}, max length {r['max_length']} tokens, {r['epochs']} epoch(s), seed {r['seed']}",
             f"- trained on {summary['device']} ({summary['threads']} threads): {summary['fit']['steps']} steps, "
             f"{summary['fit']['seconds'] / 60:.1f} min of fine-tuning, {summary['total_seconds'] / 60:.1f} min in all",
             f"- export: fp16 weights, loaded back as fp32 by CrossEncoderScorer; max |dP| against the fp32 model "
             f"{summary['export']['max_abs_diff']} over {summary['export']['pairs']} held-out pairs; folder "
             f"{summary['folder_bytes'] / 1e6:.1f} MB",
             f"- versions: {', '.join(f'{k} {v}' for k, v in summary['versions'].items())}",
             "- repeat: `ragdoctor judge train --from-config training_config.json --out DIR` (same seed, same data: "
             "`data_manifest.json` holds the sha256 of every input file)", "",
             "## Training data", "",
             "| source | licence | labels | files |", "|---|---|---|---|"]
    for name, s in man["sources"].items():
        n_files = sum(1 for f in man["files"] if f["source"] == name)
        lines.append(f"| {s['origin']} | {s['licence']} | {s['labels']} | {n_files} |")
    lines += ["", f"Examples: {man['n_train']} training, {man['n_heldout']} held out "
              f"({r['data']['heldout_percent']}% of evidence groups, hashed), claim-level (answers split with "
              "eval.claims.decompose, premise = best-matching sentence window), balanced 1:1 per source, with "
              "synthetic hard negatives (one number, entity or negation changed in a supported claim, or the premise "
              "cut to a heading-like fragment), mirrored-negation pairs (the same 'not' added to premise and claim: "
              "supported), and HaluEval questions against their own vs another row's knowledge (relevance). "
              "Per source and kind:", ""]
    lines += ["| source/split | examples (kind=label: n) |", "|---|---|"]
    for key, counts in man["examples"].items():
        lines.append(f"| {key} | {', '.join(f'{k}: {v}' for k, v in counts.items())} |")
    lines += ["", f"Dropped: {man['dropped_dev_overlap']} records overlapping the dev files, "
              f"{man['dropped_cross_source_duplicates']} BEGIN/FaithDial duplicates, short HaluEval answers that only "
              f"the question makes wrong ({sum(man['dropped_unverifiable_short_negatives'].values())}). "
              f"Never trained on: {', '.join(man['not_trained_on'])}.", ""]
    for what in ("support", "relevance"):
        rep = metrics.get(what)
        if not rep:
            continue
        names = [k for k in next(iter(rep["per_source"].values())) if k not in ("n", "combiner_cv")]
        lines += [f"## Held-out slice of the training pool: {what} (AUROC)", "",
                  f"Combiner features (chosen by leave-one-source-out AUROC): {', '.join(rep['features_chosen'])}; "
                  "combiner column 5-fold cross-validated.", "",
                  "| source | n | " + " | ".join(names) + " | combiner |", "|---" * (len(names) + 3) + "|"]
        for src, m in rep["per_source"].items():
            lines.append(f"| {src} | {m['n']} | " + " | ".join(_fmt(m[n]) for n in names) + f" | {_fmt(m['combiner_cv'])} |")
        lines.append("")
    if dev_table:
        lines += ["## Meta-evaluation on the human-labelled dev sets (never trained or tuned on)", "", dev_table, ""]
    if extra:
        lines += [extra.strip(), ""]
    card = out / "MODEL_CARD.md"
    card.write_text("\n".join(lines))
    return card
