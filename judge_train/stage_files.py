"""Reading the files of a stage or judge folder given to a judge command (config.json, training_config.json,
package.json, model.safetensors): anything damaged, truncated or of another kind is a one-line InputError naming the
file and field, found before any work, never a traceback from deep inside training or packaging."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from corpora.errors import InputError
from corpora.jsonl import read_json_object


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
