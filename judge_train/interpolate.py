"""Weight interpolation between a fine-tuned cross-encoder and the stage it was tuned from (WiSE-FT, Wortsman et al.
2022): theta = (1 - a) * base + a * tuned, tensor by tensor.

Fine-tuning on the claim-level pool makes the support model better on the pool's sources and can make it worse on a
kind of text it never saw; the general-NLI stage it started from transferred better to long-document QA (issue 11).
A mix keeps part of both without training anything. Both models must have the same architecture (the same tensors
and shapes): in practice a stage and the stage its recipe started from, or another run of the same recipe.

The mixed folder is a stage folder like any other: the tuned stage's records (training_config.json,
data_manifest.json) with the recipe renamed ``<recipe>-wise<a>`` and an ``interpolated`` entry (both folders, their
weights' sha256, ``a``), so cross-fitting (crossfit.trained_sources) reads what the mix was trained on from the same
chain, and the model card lists it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from corpora.digest import sha256_file
from corpora.errors import UsageError
from judge_train.out_folder import finished, fresh, replaceable_out
from corpora.jsonl import read_json_object
from judge_train.stage_files import WEIGHTS, load_weights, slot_records, stage_chain, stage_problem, stage_recipe

RECORDS = ("training_config.json", "data_manifest.json")


# what makes two cross-encoders one architecture beyond their tensors' names and shapes: the same layers, activation
# and labels, and the same tokenizer vocabulary and casing (a mix of two tokenizations reads neither)
ARCHITECTURE_KEYS = ("model_type", "hidden_act", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "vocab_size", "max_position_embeddings", "type_vocab_size", "id2label",
                     "position_embedding_type", "layer_norm_eps")


def _same_model(base: Path, tuned: Path) -> None:
    """UsageError naming the first config.json key or tokenizer part in which the two folders differ."""
    ca, cb = read_json_object(base / "config.json"), read_json_object(tuned / "config.json")
    for key in ARCHITECTURE_KEYS:
        if ca.get(key) != cb.get(key):
            raise UsageError(f"{base} and {tuned} are different models: config.json field '{key}' is "
                             f"{ca.get(key)!r} against {cb.get(key)!r}")
    ta, tb = base / "tokenizer.json", tuned / "tokenizer.json"
    if ta.is_file() and tb.is_file():
        ja, jb = read_json_object(ta), read_json_object(tb)
        for part in ("model", "normalizer", "pre_tokenizer"):  # not truncation: max_length may differ per stage
            if ja.get(part) != jb.get(part):
                raise UsageError(f"{base} and {tuned} have different tokenizers: tokenizer.json's '{part}' differs")


def mix_name(recipe: str, weight: float) -> str:
    return f"{recipe}-wise{weight:g}"


def interpolate(base: Path, tuned: Path, weight: float, out: Path) -> dict:
    """Write the mix (1 - weight) * base + weight * tuned to ``out`` (fp16 weights like every shipped stage) and
    return its ``interpolated`` record. UsageError (one line) when a folder is not a model, lacks records, or the two
    do not have the same tensors."""
    import torch
    from safetensors.torch import save_file

    from judge_train.crossfit import trained_sources

    if not 0.0 <= weight <= 1.0:
        raise UsageError(f"--weight must lie in [0, 1], got {weight:g}")
    for folder in (base, tuned):
        if not (folder / WEIGHTS).is_file():
            raise UsageError(f"not a cross-encoder folder (no {WEIGHTS}): {folder}")
        why = stage_problem(folder)
        if why:
            raise UsageError(why)
    replaceable_out(out, [base, tuned], what="stage folder")
    records, base_records = slot_records(tuned), slot_records(base)
    for folder, found in ((tuned, records), (base, base_records)):
        if found is None:  # the mix's record must say what both halves trained on (cross-fitting reads it)
            raise UsageError(f"no training records for {folder} (training_config.json, or a judge folder's stages/)")
    tc = read_json_object(records / "training_config.json")
    chain = list(stage_chain(records))  # the tuned stage's recipe first, then the stages it started from
    task, base_task = chain[0][1].get("task"), stage_recipe(base_records).get("task")
    started_from = {Path(r["base_model"]).resolve() for _, r in chain}
    if task != base_task and base.resolve() not in started_from:  # a stage and the one it was tuned from may differ
        raise UsageError(f"{base} is a {base_task} stage and {tuned} a {task} stage, and {tuned} was not tuned from "
                         f"it: a mix needs two of one task, or a stage and its starting point")
    _same_model(base, tuned)
    base_sources = sorted(trained_sources(base_records))  # the mix has seen them too; InputError now, before writing
    a, b = load_weights(base / WEIGHTS), load_weights(tuned / WEIGHTS)
    if a.keys() != b.keys():
        odd = sorted(a.keys() ^ b.keys())[0]
        raise UsageError(f"{base} and {tuned} are different architectures: tensor {odd!r} is in one only")
    for key in a:
        if a[key].shape != b[key].shape:
            raise UsageError(f"{base} and {tuned} are different architectures: tensor {key!r} has shape "
                             f"{tuple(a[key].shape)} against {tuple(b[key].shape)}")
        if a[key].is_floating_point() != b[key].is_floating_point() or (
                not a[key].is_floating_point() and not torch.equal(a[key], b[key])):
            raise UsageError(f"{base} and {tuned} differ in tensor {key!r} ({a[key].dtype} against {b[key].dtype}"
                             f"{'' if a[key].dtype != b[key].dtype else ', other values'}): not two runs of one "
                             f"architecture (a quantised copy?)")
    mixed = {}
    for key in a:
        if a[key].is_floating_point():
            t = (1.0 - weight) * a[key].to(torch.float32) + weight * b[key].to(torch.float32)
            mixed[key] = t.to(b[key].dtype).contiguous()
        else:  # integer buffers (position ids), equal in both (checked above)
            mixed[key] = b[key].contiguous()
    fresh(out)
    for f in tuned.iterdir():  # config, tokenizer, sentence-transformers files: the tuned model's
        if f.is_file() and f.name != WEIGHTS and f.name not in RECORDS + ("heldout_metrics.json",
                                                                           "heldout_examples.jsonl"):
            shutil.copy2(f, out / f.name)
    save_file(mixed, str(out / WEIGHTS), metadata={"format": "pt"})
    record = {"base": str(base), "base_sha256": sha256_file(base / WEIGHTS), "tuned": str(tuned),
              "tuned_recipe": tc["recipe"]["recipe"], "tuned_sha256": sha256_file(tuned / WEIGHTS), "weight": weight,
              "base_sources": base_sources}
    tc["recipe"]["recipe"] = mix_name(tc["recipe"]["recipe"], weight)
    tc["interpolated"] = record
    (out / "training_config.json").write_text(json.dumps(tc, indent=1) + "\n")
    if (records / "data_manifest.json").is_file():
        shutil.copy2(records / "data_manifest.json", out / "data_manifest.json")
    finished(out)
    return record
