"""One training stage: fine-tune a cross-encoder (the bundled all-MiniLM-L6-v2, or an earlier stage's output) into
a 1-logit (premise, hypothesis) -> P(supported) or (passage, question) -> P(relevant) model, export fp16, check it.

Stages chain (recipes/*.json): general NLI first, then the claim-level pool from that checkpoint (support), and
question-passage relevance from the same checkpoint (relevance); ``combine.py`` then fits the combiners and
``package.py`` assembles the judge folder. Seeded end to end (python, numpy, torch; the data split is a hash of each
record's group). Uses CUDA when torch sees it, else the CPU. Writes into ``out``:

  model.safetensors (fp16) + config.json + tokenizer files    a sentence-transformers CrossEncoder folder
  training_config.json     this recipe (TrainConfig), library versions, device, timings, export check (status ok,
                           failed, or unmeasured with its reason: over 0 held-out pairs it compares nothing)
  data_manifest.json       sha256 of every input file, licences, record/example counts per source and label
  heldout_metrics.json     AUROC per source of the bare cross-encoder on the held-out slice of the pool (None where
                           it cannot be measured, its reason under "unmeasured")
  heldout_examples.jsonl   that held-out slice
"""
from __future__ import annotations

import json
import math
import platform
import random
import time
from dataclasses import asdict
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from corpora.errors import UsageError, warn
from corpora.jsonl import validation_error
from corpora.paths import input_file

from rag.precision import cross_encoder_logits, native_bf16
from judge_train.manifest import manifest
from judge_train.data import (DataConfig, Example, build_examples, heldout, read_pool, read_relevance_pool,
                                   relevance_examples)
from judge_train.out_folder import finished, fresh, replaceable_out
from corpora.jsonl import read_json_object
from judge_train.rerank_data import RerankGroup, rerank_groups

RECIPE = "cross-encoder-stage"


class TrainConfig(BaseModel):
    """The whole recipe; ``training_config.json`` holds it, so ``TrainConfig(**saved['recipe'])`` repeats a run."""

    model_config = ConfigDict(extra="forbid")

    recipe: str = RECIPE
    # what the cross-encoder learns: 'support' (premise, claim) -> supported, 'relevance' (passage, question) -> the
    # passage bears on the question, 'rerank' the same pairs ranked: a query's relevant passage above its hard
    # negatives (listwise softmax cross-entropy over groups, judge_train/rerank_data.py; batch_size counts groups)
    task: Literal["support", "relevance", "rerank"] = "support"
    # 'minilm' = the bundled all-MiniLM-L6-v2 (rag.models.minilm_path()), or a folder: a CrossEncoder trained by an
    # earlier stage (e.g. general NLI first, then the claim-level pool)
    base_model: str = "minilm"
    seed: int = Field(13, ge=0, le=2**32 - 1)  # what numpy and torch accept
    # ranges as ragdoctor/options.py RULES gives the flags (MAX_EPOCHS, MAX_BATCH_SIZE; a test keeps them equal):
    # a recipe file is held to the same, before any data is read (1e308 epochs would overflow planned_steps)
    epochs: float = Field(2.0, gt=0, le=100, allow_inf_nan=False)
    max_examples: int | None = Field(None, ge=1)  # cap on training examples after balancing (None: all)
    max_length: int = Field(128, ge=8)  # at most the base model's positions (checked when it loads)
    batch_size: int = Field(16, ge=1, le=65536)
    lr: float = Field(5e-5, gt=0, lt=1, allow_inf_nan=False)  # AdamW's peak rate: the recipes use 2e-5 to 5e-5
    warmup_ratio: float = Field(0.1, ge=0, le=1)
    weight_decay: float = Field(0.01, ge=0, le=1, allow_inf_nan=False)  # AdamW's weight decay (the recipes: 0.01)
    export_check_pairs: int = Field(128, ge=0)
    data: DataConfig = Field(default_factory=DataConfig)


Log = Callable[[str], None]


def load_recipe(path: str | Path) -> TrainConfig:
    """A recipe file (flat) or a stage's training_config.json (the TrainConfig under 'recipe'), as a TrainConfig."""
    path = input_file(path)
    saved = read_json_object(path)
    recipe = saved.get("recipe")
    try:
        return TrainConfig(**(recipe if isinstance(recipe, dict) else saved))
    except ValidationError as exc:
        raise validation_error(path, None, exc) from None


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


def planned_steps(n: int, cfg: TrainConfig) -> int:
    """Optimiser steps the recipe takes over ``n`` training examples (groups for rerank): what fine_tune and
    fine_tune_listwise run, and what train checks before the model loads."""
    if n == 0:
        return 0
    if cfg.task == "rerank":
        return max(1, int(round(n * cfg.epochs / cfg.batch_size)))
    return int(round(math.ceil(n / cfg.batch_size) * cfg.epochs))  # _batches: ceil(n / batch_size) per epoch


def _check_base_model(cfg: TrainConfig) -> None:
    """A base model folder that is missing, or one a judge command stopped writing, is found before the pool is read
    (minutes), naming the recipe's field; a damaged one is the model load's to say."""
    if cfg.base_model == "minilm":
        return
    from judge_train.out_folder import unfinished

    base = Path(cfg.base_model)
    if not base.is_dir():
        raise UsageError(f"the recipe's base_model {cfg.base_model}: {'not a folder' if base.exists() else 'folder not found'}"
                         " ('minilm' or a CrossEncoder folder, e.g. an earlier stage's)")
    if (why := unfinished(base)) is not None:
        raise UsageError(f"the recipe's base_model {why}: rerun that stage first")
    if not (base / "config.json").is_file():
        raise UsageError(f"the recipe's base_model {cfg.base_model}: not a CrossEncoder folder (no config.json)")


def _check_max_length(cfg: TrainConfig) -> None:
    """A max_length past the base model's position embeddings fails only after the data load and a forward pass:
    refused at once, naming the limit."""
    config = Path(_base_path(cfg.base_model)) / "config.json"
    try:
        limit = json.loads(config.read_text(encoding="utf-8")).get("max_position_embeddings")
    except (OSError, ValueError, AttributeError):
        return  # no readable config: the model load says what is wrong
    if isinstance(limit, int) and cfg.max_length > limit:
        raise UsageError(f"max_length {cfg.max_length}: the base model {cfg.base_model} reads at most {limit} "
                         "tokens")


def _optimiser(model, cfg: TrainConfig, total: int):
    """AdamW (no decay on biases and LayerNorms), linear warm-up over ``warmup_ratio`` of the steps, then decay."""
    import torch

    decay = [p for n, p in model.named_parameters() if not any(k in n for k in ("bias", "LayerNorm", "layer_norm"))]
    no_decay = [p for n, p in model.named_parameters() if any(k in n for k in ("bias", "LayerNorm", "layer_norm"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
    warm = max(1, int(total * cfg.warmup_ratio))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm)))
    return opt, sched


def _amp(device: str) -> tuple[str, bool]:
    """bfloat16 matmuls (fp32 weights, fp32 loss): on a GPU, and on a CPU that multiplies bf16 natively (AMX or
    AVX512-BF16: 1.8x fp32 for MiniLM); elsewhere fp32."""
    amp_device = "cuda" if device.startswith("cuda") else "cpu"
    return amp_device, amp_device == "cuda" or native_bf16()


def _step(model, opt, sched, loss) -> None:
    import torch

    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()


def _fit(ce, batches: list, loss_of: Callable, cfg: TrainConfig, device: str, log: Log, unit: str,
         seen_key: str) -> dict:
    """The loop both tasks share: one optimiser step per batch of ``batches``, the loss from ``loss_of(batch,
    forward)`` where ``forward(first_texts, second_texts)`` returns fp32 logits (the model under bf16 autocast where
    ``_amp`` allows it), AdamW, linear warm-up then decay, gradient clipping at 1."""
    import torch

    model, tok = ce.model, ce.tokenizer
    model.to(device)
    model.train()
    total = len(batches)
    opt, sched = _optimiser(model, cfg, total)
    amp_device, use_amp = _amp(device)

    def forward(first: list[str], second: list[str]):
        feats = tok(first, second, padding=True, truncation=True, max_length=cfg.max_length,
                    return_tensors="pt").to(device)
        with torch.autocast(amp_device, dtype=torch.bfloat16, enabled=use_amp):
            logits = model(**feats).logits
        return logits.float()

    t0, seen, running = time.time(), 0, []
    for step, batch in enumerate(batches, 1):
        loss = loss_of(batch, forward)
        _step(model, opt, sched, loss)
        seen += len(batch)
        running.append(loss.item())
        if step % 50 == 0 or step == total:
            rate = seen / (time.time() - t0)
            log(f"step {step}/{total}  loss {np.mean(running[-50:]):.4f}  {rate:.1f} {unit}/s  "
                f"eta {(total - step) * cfg.batch_size / max(rate, 1e-9) / 60:.1f} min")
    model.eval()
    return {"steps": total, seen_key: seen, "bf16_autocast": use_amp, "seconds": round(time.time() - t0, 1),
            "final_loss": round(float(np.mean(running[-50:])), 4) if running else None}


def fine_tune_listwise(ce, groups: list[RerankGroup], cfg: TrainConfig, device: str, log: Log) -> dict:
    """Softmax cross-entropy over each group's logits, the relevant passage (first) the target; ``batch_size``
    groups per step; otherwise as ``fine_tune``."""
    import torch

    rng = random.Random(cfg.seed)
    order = [groups[i] for _ in range(math.ceil(cfg.epochs)) for i in rng.sample(range(len(groups)), len(groups))]
    total = planned_steps(len(groups), cfg)  # never past the end of ``order``
    batches = [order[s * cfg.batch_size : (s + 1) * cfg.batch_size] for s in range(total)]

    def loss_of(batch: list[RerankGroup], forward):
        width = min(len(g.passages) for g in batch)
        logits = forward([p for g in batch for p in g.passages[:width]],
                         [g.query for g in batch for _ in range(width)]).view(len(batch), width)
        return torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long,
                                                                     device=logits.device))

    return _fit(ce, batches, loss_of, cfg, device, log, "groups", "groups_seen")


def fine_tune(ce, examples: list[Example], cfg: TrainConfig, device: str, log: Log) -> dict:
    """Binary cross-entropy on the single logit, over length-bucketed batches of ``batch_size`` examples."""
    import torch

    rng = random.Random(cfg.seed)
    plan = [_batches(examples, cfg.batch_size, rng) for _ in range(math.ceil(cfg.epochs))]
    total = planned_steps(len(examples), cfg)  # len(plan[0]) * epochs: _batches makes ceil(n / batch_size)
    batches = [[examples[i] for i in b] for epoch in plan for b in epoch][:total]
    loss_fn = torch.nn.BCEWithLogitsLoss()

    def loss_of(exs: list[Example], forward):
        logits = forward([e.premise for e in exs], [e.hypothesis for e in exs]).squeeze(-1)
        return loss_fn(logits, torch.tensor([float(e.label) for e in exs], device=logits.device))

    return _fit(ce, batches, loss_of, cfg, device, log, "ex", "examples_seen")


def export_fp16(ce, out: Path) -> None:
    """Save the CrossEncoder with fp16 weights, and a config that loads them back as fp32 (fp16 matmuls are slow
    or missing on CPUs); sentence-transformers' generated README is replaced by our MODEL_CARD.md. transformers'
    "Writing model shards" bar stays quiet (quiet_model_loading): the training log says what was written."""
    from rag.embeddings import quiet_model_loading

    model = ce.model
    model.half()
    try:
        with quiet_model_loading():
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
    raw = cross_encoder_logits(ce, pairs, 32)
    return 1 / (1 + np.exp(-np.asarray(raw, dtype=np.float64).reshape(-1)))


def check_export(ref: np.ndarray, out: Path, pairs: list[tuple[str, str]], max_length: int, *,
                 why_none: str = "no pairs to compare") -> dict:
    """Load the exported folder the way the project does (CrossEncoderScorer) and compare P(supported) with the
    fp32 model's scores on the same pairs. ``status`` is "ok", "failed" or, over no pair (``why_none`` says why),
    "unmeasured": a comparison of nothing is no evidence, so ``ok`` and ``max_abs_diff`` are then None, never a
    pass."""
    if not pairs:
        return {"pairs": 0, "max_abs_diff": None, "ok": None, "status": "unmeasured", "reason": why_none}
    from eval.judges.cross_encoder import CrossEncoderScorer

    scorer = CrossEncoderScorer(out, max_length=max_length, device="cpu")
    got = np.array([s.supported for s in scorer.support(pairs)])
    diff = float(np.max(np.abs(got - ref)))
    ok = bool(diff <= 1e-2)  # NaN compares False: a failure
    return {"pairs": len(pairs), "max_abs_diff": round(diff, 6) if math.isfinite(diff) else None, "ok": ok,
            "status": "ok" if ok else "failed",
            "reason": None if math.isfinite(diff) else "scores that are not finite numbers",
            "loaded_dtype": str(scorer.model.model.dtype)}


def export_line(export: dict) -> str:
    """The export check as the training log says it."""
    if export["status"] == "unmeasured":
        return (f"export check: unmeasured ({export['reason']}): the exported weights were not compared with the "
                "trained model")
    return (f"export check: max |dP| = {export['max_abs_diff']} over {export['pairs']} pairs "
            f"({'ok' if export['ok'] else 'FAILED'}{': ' + export['reason'] if export.get('reason') else ''})")


def _auroc(y: list[int], s: list[float] | np.ndarray) -> tuple[float | None, str | None]:
    """(AUROC, None), or (None, why it cannot be measured)."""
    from sklearn.metrics import roc_auc_score

    s = np.asarray(s, dtype=float)
    if len(set(y)) < 2:
        n_pos = sum(1 for v in y if v == 1)
        return None, (f"held-out examples of one label only ({n_pos} supported, {len(y) - n_pos} not): AUROC needs "
                      "both")
    if not np.isfinite(s).all():
        return None, f"{int((~np.isfinite(s)).sum())} held-out score(s) are not finite numbers"
    return float(roc_auc_score(y, s)), None


def _with_min(per: dict[str, float | None], why: dict[str, str], empty: str) -> dict:
    """Held-out metrics as heldout_metrics.json holds them: ``values`` per source plus 'min' (the worst source), each
    rounded, None where unmeasured; ``unmeasured`` names the reason for every None (``empty``: why there is no source
    at all)."""
    vals = [v for v in per.values() if v is not None]
    out: dict[str, float | None] = {k: (round(v, 4) if v is not None else None) for k, v in per.items()}
    out["min"] = round(min(vals), 4) if vals else None
    reasons = dict(why)
    if out["min"] is None:
        reasons["min"] = empty if not per else "no source measured (" + "; ".join(
            f"{k}: {w}" for k, w in why.items()) + ")"
    return {"values": out, "unmeasured": reasons}


def heldout_auroc(out: Path, held: list[Example], cfg: TrainConfig, empty: str = "0 held-out examples") -> dict:
    """AUROC of the exported cross-encoder alone on each source's held-out slice, and the minimum over sources
    (``_with_min``: a source or a minimum that cannot be measured is None with its reason, never 0 or NaN)."""
    if not held:
        return _with_min({}, {}, empty)
    from eval.judges.cross_encoder import CrossEncoderScorer

    scorer = CrossEncoderScorer(out, max_length=cfg.max_length)
    scores = [s.supported for s in scorer.support([(e.premise, e.hypothesis) for e in held])]
    per: dict[str, float | None] = {}
    why: dict[str, str] = {}
    for src in sorted({e.source for e in held}):
        idx = [i for i, e in enumerate(held) if e.source == src]
        per[src], reason = _auroc([held[i].label for i in idx], [scores[i] for i in idx])
        if reason:
            why[src] = reason
    return _with_min(per, why, empty)


def _pairs(items: list) -> list[tuple[str, str]]:
    """The (first, second) pairs the cross-encoder reads: an Example's (premise, hypothesis), a group's
    (passage, query) for each of its passages."""
    out: list[tuple[str, str]] = []
    for it in items:
        if isinstance(it, RerankGroup):
            out += [(p, it.query) for p in it.passages]
        else:
            out.append((it.premise, it.hypothesis))
    return out


def reciprocal_rank(scores: list[float] | np.ndarray) -> float:
    """1 / the rank of the first score among all (ties count against it: a constant scorer gets 1 / n)."""
    s = np.asarray(scores, dtype=float)
    return 1.0 / (1 + int((s[1:] >= s[0]).sum()))


def heldout_mrr(out: Path, held: list[RerankGroup], cfg: TrainConfig, empty: str = "0 held-out groups") -> dict:
    """Mean reciprocal rank of each held-out group's relevant passage among its candidates, per source and the
    minimum over sources (the exported model, as the rerank stage loads it); as ``heldout_auroc``, a minimum over no
    group is None with its reason."""
    if not held:
        return _with_min({}, {}, empty)
    from rag.reranker import CrossEncoderReranker

    reranker = CrossEncoderReranker(str(out), max_length=cfg.max_length)
    per: dict[str, list[float]] = {}
    for g in held:
        logits = reranker.score(g.query, list(g.passages))
        per.setdefault(g.source, []).append(reciprocal_rank(logits))
    return _with_min({k: float(np.mean(v)) for k, v in sorted(per.items())}, {}, empty)


def heldout_metrics(name: str, result: dict) -> dict:
    """heldout_metrics.json: ``{name: {source: value, ..., "min": value}}`` as before, and, where a value is None,
    ``{"unmeasured": {key: reason}}`` beside it."""
    metrics: dict = {name: result["values"]}
    if result["unmeasured"]:
        metrics["unmeasured"] = {f"{name}.{k}": why for k, why in result["unmeasured"].items()}
    return metrics


def metrics_line(metrics: dict) -> str:
    """The held-out metrics as the training log says them: each value, or 'unmeasured' with its reason."""
    why = metrics.get("unmeasured", {})
    parts = [f"{name}.{k} " + (f"{v}" if v is not None else f"unmeasured ({why.get(f'{name}.{k}', 'no value')})")
             for name, values in metrics.items() if name != "unmeasured" for k, v in values.items()]
    return "held-out metrics of the bare cross-encoder: " + "; ".join(parts)


def _code_hashes() -> dict:
    """sha256 of the code the examples depend on (claim splitting and example construction change the data)."""
    import hashlib

    import eval.claims
    import judge_train.data
    import judge_train.rerank_data
    import judge_train.sources
    import eval.metrics.verify

    return {m.__name__: hashlib.sha256(Path(m.__file__).read_bytes()).hexdigest()[:16]
            for m in (eval.claims, eval.metrics.verify, judge_train.data, judge_train.rerank_data,
                      judge_train.sources)}


def _versions() -> dict:
    import sentence_transformers
    import sklearn
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__, "sklearn": sklearn.__version__}


def _empty_heldout(cfg: TrainConfig, what: str, records: list | None) -> str:
    """Why a run has no held-out slice, as its warning and its unmeasured checks say it (``records``: the pool's
    records, None where the task does not read them here)."""
    pct = cfg.data.heldout_percent
    if pct == 0:
        return "the recipe's data.heldout_percent is 0"
    if records is None:
        return f"the pool's sources gave none at data.heldout_percent {pct}"
    n_held = sum(heldout(r.group, pct) for r in records)
    if n_held == 0:
        return f"none of the {len(records)} records' groups falls in the held-out {pct}% of the pool; a larger pool has some"
    return f"the {n_held} held-out record(s) gave no {what} (each source's labels are balanced 1:1)"


def train(cfg: TrainConfig, out: str | Path, log: Log = print) -> dict:
    """Run the recipe into ``out`` (replaced if it exists). Returns the summary written to training_config.json."""
    import torch
    from sentence_transformers import CrossEncoder

    import eval.judges.cross_encoder  # noqa: F401 - imported now: an hour-long run must not pick up code edited meanwhile
    from rag.embeddings import quiet_model_loading

    out = replaceable_out(out, [_base_path(cfg.base_model), cfg.data.data_dir], what="stage folder")  # before an hour
    _check_base_model(cfg)
    _check_max_length(cfg)
    t_start = time.time()
    code = _code_hashes()  # now, not after an hour: the files may have moved or changed by then
    _seed_everything(cfg.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    log(f"device: {device} ({torch.get_num_threads()} CPU threads)")
    train_ex: list = []
    held_ex: list = []
    records: list | None = None
    if cfg.task == "rerank":
        train_ex, held_ex, ex_stats = rerank_groups(cfg.data.data_dir, cfg.data.cap_per_label,
                                                    cfg.data.rerank_negatives, cfg.data.heldout_percent,
                                                    cfg.data.rerank_window_words, cfg.seed, cfg.data.drop_dev_overlap)
        pool_stats: dict = {}
        unit = "groups"
    elif cfg.task == "relevance":
        records, pool_stats = read_relevance_pool(cfg.data, cfg.seed)
        train_ex, held_ex, ex_stats = relevance_examples(records, cfg.data, cfg.seed)
        unit = f"examples from {len(records)} records"
    else:
        records, pool_stats = read_pool(cfg.data)
        train_ex, held_ex, ex_stats = build_examples(records, cfg.data, cfg.seed)
        unit = f"examples from {len(records)} records"
    if cfg.max_examples:
        train_ex = train_ex[: cfg.max_examples]
    log(f"pool: {len(train_ex)} training / {len(held_ex)} held-out {unit}")
    what = unit.split(" ")[0]
    no_held = _empty_heldout(cfg, what, records)
    steps = planned_steps(len(train_ex), cfg)
    if steps < 1:  # an export of the untrained head would look like a judge: refused before the model loads
        read = pool_stats.get("records") or {}
        labels = (f"; records read per source and label: "
                  f"{', '.join(f'{src} {dict(c)}' for src, c in read.items())} (each source is balanced to 1:1: "
                  "one that holds a single label gives no example)") if read else ""
        if pool_stats and (none := [n for n, c in cfg.data.cap_per_label.items() if c > 0 and n not in read]):
            labels += f"; no record read from {', '.join(none)} (its files in {cfg.data.data_dir} hold no usable row)"
        raise UsageError(f"the recipe trains nothing: {len(train_ex)} training {unit.split(' ')[0]} x {cfg.epochs:g} "
                         f"epochs at batch size {cfg.batch_size} is {steps} steps (check data.cap_per_label, "
                         f"epochs and max_examples){labels}")
    if not held_ex:  # said before the minutes of training, not found in the JSON afterwards
        warn(f"the held-out slice is empty ({no_held}): the export check and the held-out metrics will be "
             "unmeasured")
    _seed_everything(cfg.seed)  # the head's initialisation must not depend on how much data was read
    with quiet_model_loading():
        ce = CrossEncoder(_base_path(cfg.base_model), num_labels=1, max_length=cfg.max_length, device=device,
                          local_files_only=True)
    fit = (fine_tune_listwise if cfg.task == "rerank" else fine_tune)(ce, train_ex, cfg, device, log)
    log(f"fine-tuned: {fit['steps']} steps in {fit['seconds'] / 60:.1f} min")
    fresh(out)
    check_pairs = _pairs(held_ex)[: cfg.export_check_pairs]
    ref = reference_scores(ce, check_pairs)
    export_fp16(ce, out)
    no_pairs = (f"0 held-out pairs: {no_held}" if not held_ex else
                "0 pairs: the recipe's export_check_pairs is 0")
    export = check_export(ref, out, check_pairs, cfg.max_length, why_none=no_pairs)
    log(export_line(export))
    del ce
    (out / "heldout_examples.jsonl").write_text("".join(json.dumps(asdict(e)) + "\n" for e in held_ex))
    if cfg.task == "rerank":
        metrics = heldout_metrics("heldout_mrr", heldout_mrr(out, held_ex, cfg, f"0 held-out groups: {no_held}"))
    else:
        metrics = heldout_metrics("heldout_auroc", heldout_auroc(out, held_ex, cfg, f"0 held-out {what}: {no_held}"))
    log(metrics_line(metrics))
    man = manifest(cfg.data, pool_stats, ex_stats, len(train_ex), len(held_ex))
    (out / "data_manifest.json").write_text(json.dumps(man, indent=1) + "\n")
    (out / "heldout_metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    summary = {"recipe": json.loads(cfg.model_dump_json()), "device": device, "threads": torch.get_num_threads(),
               "n_train": len(train_ex), "n_heldout": len(held_ex),
               "versions": _versions(), "code_sha256": code, "base_model_path": _base_path(cfg.base_model), "fit": fit,
               "export": export, "folder_bytes": size, "total_seconds": round(time.time() - t_start, 1)}
    (out / "training_config.json").write_text(json.dumps(summary, indent=1) + "\n")
    finished(out)
    log(f"done in {summary['total_seconds'] / 60:.1f} min; folder {size / 1e6:.1f} MB: {out}")
    return summary
