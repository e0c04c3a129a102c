"""Reading the files of a stage or judge folder given to a judge command (config.json, training_config.json,
package.json, model.safetensors): anything damaged, truncated or of another kind is a one-line InputError naming the
file and field, found before any work, never a traceback from deep inside training or packaging."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpora.errors import InputError, UsageError
from corpora.jsonl import read_json_object
from judge_train.out_folder import unfinished

WEIGHTS = "model.safetensors"


def stage_recipe(stage: Path) -> dict[str, Any]:
    """The recipe a trained stage records (its training_config.json's ``recipe``: a name, a base model, the data)."""
    path = stage / "training_config.json"
    recipe = read_json_object(path).get("recipe")
    if not isinstance(recipe, dict):
        raise InputError(path, "missing or not an object", field="recipe")
    for key, kind in (("recipe", str), ("base_model", str), ("data", dict)):
        if not isinstance(recipe.get(key), kind):
            raise InputError(path, f"missing or not a {kind.__name__}", field=f"recipe.{key}")
    return recipe


def load_weights(path: Path) -> dict:
    """The tensors of a safetensors file (InputError when it cannot be read as one)."""
    from safetensors.torch import load_file  # noqa: PLC0415 - torch

    try:
        return load_file(str(path))
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types for a damaged file
        raise InputError(path, f"cannot be read as safetensors weights ({' '.join(str(exc).split())})") from None


def stage_chain(stage: Path) -> Iterator[tuple[Path, dict]]:
    """(folder, recipe) of a trained stage, then of the stage it started from, and so on while the base is a stage
    folder here (each folder once)."""
    visited: set[Path] = set()
    while stage.is_dir() and (stage / "training_config.json").is_file() and stage.resolve() not in visited:
        visited.add(stage.resolve())
        recipe = stage_recipe(stage)
        yield stage, recipe
        stage = Path(recipe["base_model"])


def weights_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a safetensors file (missing, no header, truncated), read from its header alone, without
    loading a tensor; None when it can."""
    if not path.is_file():
        return "file not found (the model's weights)"
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 0 < n <= min(size - 8, 100_000_000):
            return "not a safetensors file (no header)"
        try:
            meta = json.loads(fh.read(n))
            end = max((int(v["data_offsets"][1]) for k, v in meta.items() if k != "__metadata__"), default=0)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return "not a safetensors file (its header is not a tensor table)"
    if size < 8 + n + end:
        return f"truncated ({size} bytes; its header says {8 + n + end})"
    return None


# the stages that can stand in a slot of another task: a reranker reads (passage, question) into one logit of
# relevance, as the relevance stage does (trained listwise instead of by pairs)
READ_AS = {"relevance": {"relevance", "rerank"}}


def stage_problem(folder: Path, *, task: str | None = None, recorded: bool = False) -> str | None:
    """Why ``folder`` cannot be read as a trained stage (a cross-encoder folder a judge command wrote or was given),
    found before any work; None when it can. ``task``: the task its recipe must record, when it records one
    ("support" for --support and --cross-fit, "relevance" for --relevance); ``recorded``: it must carry its recipe
    (what a fold trained on is read from it). Damaged JSON records raise InputError naming the file."""
    if not (folder / "config.json").is_file():
        return f"not a trained stage folder (no config.json): {folder}"
    if (why := unfinished(folder)) is not None:
        return why
    read_json_object(folder / "config.json")
    records = folder / "training_config.json"
    if records.is_file():
        chain = list(stage_chain(folder))  # read whole: a damaged record of a stage it started from is found too
        got = chain[0][1].get("task")
        if task is not None and isinstance(got, str) and got not in READ_AS.get(task, {task}):
            return f"{folder} is a {got} stage, not a {task} stage"
    elif recorded:
        return f"no training_config.json in {folder}: which sources it trained on cannot be told"
    why = weights_problem(folder / WEIGHTS)
    return f"{folder / WEIGHTS}: {why}" if why else None


HELDOUT_FIELD = "recipe.data.heldout_percent"


def recorded_share(folder: Path, recipe: dict[str, Any]) -> int:
    """The held-out share a stage's record gives (``recipe.data.heldout_percent``: the percent of each source's groups
    it never trained on, judge_train/data.py heldout()). UsageError naming the file and field when it gives none, 0 or
    not a whole percent: no slice of the pool can then be told unseen by the stage, so no combiner is fit on one."""
    value = recipe["data"].get("heldout_percent")
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 100:
        return value
    why = ("missing: the stage does not say which groups of the pool it never trained on" if value is None else
           "0: the stage held nothing out (it may have trained on every group of the pool)" if value == 0 else
           f"{value!r} is not a whole percent from 1 to 100")
    raise UsageError(InputError(folder / "training_config.json", f"{why}, so no calibration slice of the pool is "
                                "unseen by it; train it again holding some out (the recipes hold out 10)",
                                field=HELDOUT_FIELD).one_line())


def slot_records(model: Path) -> Path | None:
    """Where a model folder's training record is: the folder itself (a stage trained by ``judge train``), or for the
    ``support/`` or ``relevance/`` slot of a judge folder, ``stages/<the stage>`` (package.json lists the support stage
    first; the relevance stage is the one listed whose recipe's task is relevance); None when neither says."""
    if (model / "training_config.json").is_file():
        return model
    pkg = model.parent / "package.json"
    if model.name not in ("support", "relevance") or not pkg.is_file():
        return None
    names = read_json_object(pkg).get("stages")
    names = [str(n) for n in names] if isinstance(names, list) else []
    for name in names if model.name == "relevance" else names[:1]:
        rec = model.parent / "stages" / name
        if (rec / "training_config.json").is_file() and (
                model.name == "support" or stage_recipe(rec).get("task") == "relevance"):
            return rec
    return None


def heldout_shares(stage: Path) -> tuple[dict[str, int], list[str]]:
    """The held-out share (``recipe.data.heldout_percent``) of a stage folder and of every stage its weights come from
    that is here (the stages it started from, the base of a weight mix), by folder; and the model folders among them
    that record none (no training_config.json: a CrossEncoder from elsewhere; a mix's base that is not here), whose
    share is unknown. A judge folder's ``support/`` and ``relevance/`` are read from its ``stages/`` records (slot_records).
    UsageError (one line) when a record gives none or 0 (recorded_share)."""
    shares: dict[str, int] = {}
    unknown: list[str] = []
    todo, visited = [(stage, True)], set()
    while todo:
        model, must_be_here = todo.pop()
        start = slot_records(model) if model.is_dir() else None
        if start is None:  # a base named by a hub id ("minilm", "cross-encoder/...") is not a folder: nothing to say
            if (model.is_dir() or must_be_here) and str(model) not in unknown:
                unknown.append(str(model))
            continue
        last: dict[str, Any] | None = None
        for folder, recipe in stage_chain(start):
            if folder.resolve() in visited:
                break
            visited.add(folder.resolve())
            shares[str(folder)] = recorded_share(folder, recipe)
            mix = read_json_object(folder / "training_config.json").get("interpolated")
            if isinstance(mix, dict) and isinstance(mix.get("base"), str):  # a weight mix has its base's weights too
                todo.append((Path(mix["base"]), mix["base"] != recipe["base_model"]))  # that one: as the chain's
            last = recipe
        if last is not None and not (Path(last["base_model"]) / "training_config.json").is_file():
            todo.append((Path(last["base_model"]), False))  # started from a model folder here that records nothing?
    return shares, unknown
