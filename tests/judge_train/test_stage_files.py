"""The files of the stage and judge folders a judge command reads (judge_train/stage_files.py) and the folders it
writes (judge_train/out_folder.py's unfinished marker): a damaged input is one line with exit 2 before any work, and
a folder a command stopped writing is replaced by its rerun, never taken for a finished stage."""
import json

import pytest

from corpora.errors import InputError
from judge_train.out_folder import UNFINISHED, finished, fresh, replaceable_out
from corpora.jsonl import read_json_object
from judge_train.stage_files import load_weights, stage_recipe
from ragdoctor.cli import main
from tests.judge_train.test_out_folder import _stage


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "malformed JSON at line 1"), ("[1, 2]", r"not a JSON object \(a list\)"),
    (b"\xff\xfe{}", "not valid UTF-8"), (None, "file not found")])
def test_a_json_record_that_is_not_an_object_is_named(tmp_path, text, message):
    path = tmp_path / "x.json"
    if text is not None:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(InputError, match=message) as err:
        read_json_object(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_a_stage_recipe_needs_its_name_base_and_data(tmp_path):
    stage = _stage(tmp_path / "s")
    assert stage_recipe(stage)["recipe"] == "s"
    (stage / "training_config.json").write_text('{"recipe": {"recipe": "s", "data": {}}}')
    with pytest.raises(InputError, match="field 'recipe.base_model': missing or not a str"):
        stage_recipe(stage)
    (stage / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(InputError, match="model.safetensors: cannot be read as safetensors weights"):
        load_weights(stage / "model.safetensors")


def test_an_unfinished_folder_is_replaced_by_the_rerun_and_refused_as_an_input(tmp_path, capsys):
    out = fresh(tmp_path / "out")
    (out / "half.bin").write_bytes(b"x")  # a command stopped here: killed, or failed on its input
    assert (out / UNFINISHED).exists() and replaceable_out(out) == out
    finished(out)
    assert not (out / UNFINISHED).exists()
    stage = _stage(tmp_path / "stage")
    (stage / UNFINISHED).write_text("")
    (tmp_path / "pool").mkdir()
    assert main(["judge", "combine", "--support", str(stage), "--data-dir", str(tmp_path / "pool"),
                 "--out", str(tmp_path / "judge")]) == 2
    assert "stopped before it finished writing it" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["judge", "train", "--from-config", "bad.json"], "bad.json: malformed JSON at line 1"),
    (["judge", "train", "--from-config", "unknown.json"], "unknown.json: field 'epochz': unknown field"),
    (["judge", "combine", "--support", "stage"], "stage/training_config.json: field 'recipe': missing"),
    (["judge", "interpolate", "weights", "weights", "--weight", "0.5"], "model.safetensors: not a safetensors file"),
    (["judge", "combine", "--support", "weights"], "weights/model.safetensors: not a safetensors file"),
    (["judge", "combine", "--support", "half"], "half/model.safetensors: truncated"),
    (["judge", "combine", "--support", "relevance", "--relevance", "relevance"], "is a relevance stage, not a support "),
    (["judge", "train", "--from-config", "stage/training_config.json", "--out", "stage"],
     "would be replaced before its input stage/training_config.json is read"),
])
def test_damaged_judge_inputs_are_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pool").mkdir()
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "unknown.json").write_text(json.dumps({"epochz": 2}))
    (tmp_path / "stage").mkdir()
    (tmp_path / "stage" / "config.json").write_text("{}")
    (tmp_path / "stage" / "training_config.json").write_text("{}")
    weights = _stage(tmp_path / "weights")
    (weights / "model.safetensors").write_bytes(b"garbage")
    whole = _stage(tmp_path / "half") / "model.safetensors"  # a copy cut short: its header promises more bytes
    whole.write_bytes(whole.read_bytes()[:-4])
    relevance = _stage(tmp_path / "relevance")
    tc = json.loads((relevance / "training_config.json").read_text())
    tc["recipe"]["task"] = "relevance"
    (relevance / "training_config.json").write_text(json.dumps(tc))
    out = [] if "--out" in argv else ["--out", "runs/x"]
    pool = [] if argv[1] == "interpolate" else ["--data-dir", "pool"]
    assert main([*argv, *pool, *out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "runs").exists()  # nothing half-written left to block the rerun


def test_a_reranker_stands_in_the_relevance_slot_and_nowhere_else(tmp_path):
    """A reranker reads (passage, question) into one logit of relevance, as the relevance stage does: --relevance takes
    it; --support and --cross-fit do not."""
    from judge_train.stage_files import stage_problem

    reranker = _stage(tmp_path / "reranker")
    tc = json.loads((reranker / "training_config.json").read_text())
    tc["recipe"]["task"] = "rerank"
    (reranker / "training_config.json").write_text(json.dumps(tc))
    assert stage_problem(reranker, task="relevance") is None
    assert stage_problem(reranker, task="support") == f"{reranker} is a rerank stage, not a support stage"
