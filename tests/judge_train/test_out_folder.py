"""The folder a judge command replaces (judge_train/out_folder.py): only a new, empty or judge-written folder, never
an input, a folder holding one, or one inside one; refused in one line before any work, nothing deleted."""
import json

import pytest

from corpora.errors import InputError, UsageError
from judge_train.out_folder import replaceable_out
from ragdoctor.cli import main
from tests.files import symlink_loop


def _mine(tmp_path, name="mine"):
    """A user's own folder: files ragdoctor did not write."""
    d = tmp_path / name
    d.mkdir()
    (d / "notes.txt").write_text("keep me")
    return d


def test_new_empty_and_judge_written_folders_may_be_replaced(tmp_path):
    assert replaceable_out(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "empty").mkdir()
    replaceable_out(tmp_path / "empty")
    for marker in ("training_config.json", "package.json"):
        d = tmp_path / marker.split(".")[0]
        d.mkdir()
        (d / marker).write_text("{}")
        (d / "model.safetensors").write_bytes(b"x")
        replaceable_out(d, [tmp_path / "elsewhere"])


def test_a_foreign_folder_a_file_and_overlaps_with_inputs_are_refused(tmp_path):
    mine = _mine(tmp_path)
    with pytest.raises(InputError, match="is not a ragdoctor judge folder"):
        replaceable_out(mine)
    (mine / "model.safetensors").write_bytes(b"x")  # a model downloaded by hand is not one a judge command wrote
    with pytest.raises(InputError, match="is not a ragdoctor"):
        replaceable_out(mine)
    with pytest.raises(InputError, match="is not a folder"):
        replaceable_out(mine / "notes.txt")
    stage = tmp_path / "runs" / "stage"
    stage.mkdir(parents=True)
    (stage / "training_config.json").write_text("{}")
    for out, msg in ((stage, "would be replaced before its input"), (tmp_path / "runs", "would be replaced"),
                     (stage / "sub", "lies inside the input")):
        with pytest.raises(UsageError, match=msg):
            replaceable_out(out, [None, "", stage])
    assert (mine / "notes.txt").read_text() == "keep me" and (stage / "training_config.json").is_file()


def test_a_symbolic_link_loop_as_out_or_input_is_refused_in_one_line(tmp_path):
    loop = symlink_loop(tmp_path)
    for out in (loop, loop / "sub"):
        with pytest.raises(InputError, match="loop1: is a symbolic link loop"):
            replaceable_out(out)
    with pytest.raises(InputError, match="loop1: is a symbolic link loop"):
        replaceable_out(tmp_path / "new", [loop])


def _stage(path, recipe="s"):
    import torch
    from safetensors.torch import save_file

    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    save_file({"layer.weight": torch.zeros(2, 3)}, str(path / "model.safetensors"))
    (path / "training_config.json").write_text(json.dumps({"recipe": {"recipe": recipe, "base_model": "minilm",
                                                                      "data": {}}}))
    return path


@pytest.mark.parametrize("command", ["train", "combine", "refit", "interpolate"])
def test_every_judge_command_refuses_a_users_folder_before_any_work(tmp_path, capsys, command):
    mine = _mine(tmp_path)
    pool = tmp_path / "train"
    pool.mkdir()
    stage = _stage(tmp_path / "stage")
    judge = tmp_path / "judge"
    judge.mkdir()
    (judge / "package.json").write_text('{"stages": []}')
    (judge / "combiner.json").write_text('{"support": {"features": ["ce_max"]}}')
    argv = {"train": ["judge", "train", "--data-dir", str(pool)],
            "combine": ["judge", "combine", "--support", str(stage), "--data-dir", str(pool)],
            "refit": ["judge", "refit", str(judge), "--data-dir", str(pool)],
            "interpolate": ["judge", "interpolate", str(stage), str(stage), "--weight", "0.5"]}[command]
    weights = (stage / "model.safetensors").read_bytes()
    loop = symlink_loop(tmp_path)
    for out, msg in ((mine, "is not a ragdoctor"), (tmp_path, "would be replaced before its input"),
                     (loop, "is a symbolic link loop")):
        assert main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("ragdoctor: error: ") and err.count("\n") == 1 and msg in err, err
    assert (mine / "notes.txt").read_text() == "keep me" and (stage / "model.safetensors").read_bytes() == weights


def test_crossfit_report_checks_its_json_path_before_scoring(tmp_path, capsys):
    pool = tmp_path / "train"
    pool.mkdir()
    judge = tmp_path / "judge"
    judge.mkdir()
    (judge / "package.json").write_text('{"stages": []}')
    (judge / "combiner.json").write_text('{"support": {"features": ["ce_max"]}}')
    fold = _stage(tmp_path / "fold")
    assert main(["judge", "crossfit-report", str(judge), "--cross-fit", str(fold), "--data-dir", str(pool),
                 "--json", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and err.count("\n") == 1
