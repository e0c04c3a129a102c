"""Weight interpolation of two stage folders (judge_train/interpolate.py): the mix, its records, one-line refusals."""
import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from corpora.errors import InputError, UsageError
from judge_train.crossfit import trained_sources
from judge_train.interpolate import interpolate
from judge_train.stage_files import slot_records


def _model(path, w, recipe=None, base="runs/judge/nli-stage", extra=None):
    path.mkdir(parents=True)
    tensors = {"layer.weight": torch.full((2, 3), float(w), dtype=torch.float16),
               "position_ids": torch.arange(4, dtype=torch.int64)}
    tensors.update(extra or {})
    save_file(tensors, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({"name": path.name}))
    if recipe:
        (path / "training_config.json").write_text(json.dumps({"recipe": {
            "recipe": recipe, "base_model": str(base), "data": {"cap_per_label": {"faithdial": 5}}}, "n_train": 7}))
        (path / "data_manifest.json").write_text('{"sources": {}}')
    return path


def test_the_mix_is_the_weighted_sum_and_keeps_the_tuned_records(tmp_path):
    base = _model(tmp_path / "nli", 0.0, "nli", base="minilm")
    tuned = _model(tmp_path / "support", 4.0, "support-stage", base=base)
    for a, want in ((0.0, 0.0), (0.25, 1.0), (1.0, 4.0)):
        out = tmp_path / f"mix{a}"
        record = interpolate(base, tuned, a, out)
        mixed = load_file(str(out / "model.safetensors"))
        assert torch.equal(mixed["layer.weight"], torch.full((2, 3), want, dtype=torch.float16))
        assert mixed["layer.weight"].dtype == torch.float16 and torch.equal(mixed["position_ids"], torch.arange(4))
        tc = json.loads((out / "training_config.json").read_text())
        assert tc["recipe"]["recipe"] == f"support-stage-wise{a:g}" and tc["n_train"] == 7
        assert tc["interpolated"] == record and record["weight"] == a and record["tuned_recipe"] == "support-stage"
        assert len(record["base_sha256"]) == 64 and record["base_sha256"] != record["tuned_sha256"]
        assert json.loads((out / "config.json").read_text()) == {"name": "support"}
        assert (out / "data_manifest.json").is_file()
    # cross-fitting reads what the mix trained on from the same chain: the tuned stage's and its base's sources
    assert trained_sources(tmp_path / "mix0.25") == {"faithdial"}


def test_a_judge_folders_support_slot_finds_its_records_under_stages(tmp_path):
    judge = tmp_path / "judge"
    sup = _model(judge / "support", 2.0)
    stage = judge / "stages" / "minilm-support-stage"
    stage.mkdir(parents=True)
    (stage / "training_config.json").write_text(json.dumps({"recipe": {"recipe": "minilm-support-stage",
                                                                       "base_model": "minilm", "data": {}}}))
    (judge / "package.json").write_text(json.dumps({"stages": ["minilm-support-stage", "minilm-nli-stage"]}))
    assert slot_records(sup) == stage
    assert slot_records(_model(tmp_path / "loose", 1.0)) is None
    record = interpolate(_model(tmp_path / "nli", 0.0, "nli"), sup, 0.5, tmp_path / "mix")
    assert record["tuned_recipe"] == "minilm-support-stage"
    assert load_file(str(tmp_path / "mix" / "model.safetensors"))["layer.weight"][0, 0].item() == 1.0


def test_a_judge_folders_relevance_slot_mixes_with_a_stage_tuned_from_it(tmp_path, capsys):
    """A reranker fine-tuned from a judge's relevance/ mixes with it: the slot's records are the listed stage whose task
    is relevance, not the support stage listed first."""
    judge = tmp_path / "judge"
    rel = _model(judge / "relevance", 0.0)
    for name, task in (("minilm-support-stage", "support"), ("minilm-relevance-stage", "relevance")):
        (judge / "stages" / name).mkdir(parents=True)
        (judge / "stages" / name / "training_config.json").write_text(json.dumps({"recipe": {
            "recipe": name, "task": task, "base_model": "minilm", "data": {"cap_per_label": {"qnli": 5}}}}))
    (judge / "package.json").write_text(json.dumps({"stages": ["minilm-support-stage", "minilm-relevance-stage"]}))
    assert slot_records(rel) == judge / "stages" / "minilm-relevance-stage"
    reranker = _model(tmp_path / "reranker", 2.0, "minilm-reranker-stage", base=rel)
    record = interpolate(rel, reranker, 0.5, tmp_path / "mix")
    assert record["tuned_recipe"] == "minilm-reranker-stage" and record["base_sources"] == ["qnli"]
    assert load_file(str(tmp_path / "mix" / "model.safetensors"))["layer.weight"][0, 0].item() == 1.0
    # and the command says where such a mix goes: the relevance slot of `judge combine`, not `judge refit --support`
    from ragdoctor.cli import main
    assert main(["judge", "interpolate", str(rel), str(reranker), "--weight", "0.5", "--out", str(tmp_path / "m2")]) == 0
    assert f"use it with: ragdoctor judge combine --support DIR --relevance {tmp_path / 'm2'}" in capsys.readouterr().out


def test_what_cannot_be_mixed_is_refused_in_one_line(tmp_path):
    base = _model(tmp_path / "nli", 0.0, "nli")
    tuned = _model(tmp_path / "support", 1.0, "support")
    other = _model(tmp_path / "other", 1.0, "other", extra={"classifier.bias": torch.zeros(3)})
    wide = _model(tmp_path / "wide", 0.0, "wide")
    save_file({"layer.weight": torch.zeros(2, 4), "position_ids": torch.arange(4)}, str(wide / "model.safetensors"))
    ints = _model(tmp_path / "ints", 0.0, "ints", extra={"position_ids": torch.arange(1, 5)})
    quantised = _model(tmp_path / "q", 0.0, "q", extra={"layer.weight": torch.zeros(2, 3, dtype=torch.int8)})
    relu = _model(tmp_path / "relu", 0.0, "relu")
    (relu / "config.json").write_text(json.dumps({"name": "relu", "hidden_act": "relu"}))
    relevance = _model(tmp_path / "relevance", 0.0, "relevance")
    tc = json.loads((relevance / "training_config.json").read_text())
    tc["recipe"]["task"] = "relevance"
    (relevance / "training_config.json").write_text(json.dumps(tc))
    unfinished = _model(tmp_path / "unfinished", 0.0, "nli")
    (unfinished / ".unfinished").write_text("")
    cases = [((base, tuned, 1.5), "--weight must lie in"), ((tmp_path / "nowhere", tuned, 0.5), "no model.safetensors"),
             ((base, _model(tmp_path / "bare", 1.0), 0.5), "no training records"),
             ((_model(tmp_path / "bare-base", 1.0), tuned, 0.5), "no training records for"),  # what it saw: unknown
             ((base, other, 0.5), "tensor 'classifier.bias' is in one only"),
             ((wide, tuned, 0.5), "tensor 'layer.weight' has shape (2, 4) against (2, 3)"),
             ((ints, tuned, 0.5), "differ in tensor 'position_ids' (torch.int64 against torch.int64, other values)"),
             ((quantised, tuned, 0.5), "differ in tensor 'layer.weight' (torch.int8 against torch.float16"),
             ((relu, tuned, 0.5), "config.json field 'hidden_act' is 'relu' against None"),
             ((relevance, tuned, 0.5), "is a relevance stage and"),
             ((unfinished, tuned, 0.5), "stopped before it finished writing it")]
    for (b, t, a), msg in cases:
        with pytest.raises(UsageError, match=r"\A[^\n]*" + __import__("re").escape(msg)):
            interpolate(b, t, a, tmp_path / "out")
    for out in (tuned, tmp_path, tuned / "inside"):  # the input itself, a folder holding it, one inside it
        with pytest.raises(UsageError, match=r"\A[^\n]*--out .* (would be replaced before its input|lies inside)"):
            interpolate(base, tuned, 0.5, out)
    assert (tuned / "model.safetensors").is_file() and not (tuned / "inside").exists()


def test_cli_interpolate_and_crossfit_report_exit_2_in_one_line(tmp_path, capsys):
    from ragdoctor.cli import main

    base = _model(tmp_path / "nli", 0.0, "nli")
    tuned = _model(tmp_path / "support", 1.0, "support")
    assert main(["judge", "interpolate", str(base), str(tuned), "--weight", "0.7", "--out", str(tmp_path / "m")]) == 0
    assert "0.3 x" in capsys.readouterr().out
    assert main(["judge", "interpolate", str(base), str(tmp_path / "x"), "--weight", "0.7", "--out",
                 str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragdoctor: error:") and "\n" not in err and "Traceback" not in err
    pool = tmp_path / "train"
    pool.mkdir()
    assert main(["judge", "crossfit-report", str(tmp_path), "--cross-fit", str(tuned), "--data-dir", str(pool)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a judge folder" in err and "\n" not in err


def test_a_mix_has_seen_what_its_base_saw(tmp_path):
    """Cross-fitting must not score a source with a mix whose base trained on it (30% of its weights)."""
    base = _model(tmp_path / "full", 0.0, "full-support", base="minilm")
    tc = json.loads((base / "training_config.json").read_text())
    tc["recipe"]["data"]["cap_per_label"] = {"begin": 9}
    (base / "training_config.json").write_text(json.dumps(tc))
    fold = _model(tmp_path / "fold", 1.0, "fold", base="minilm")  # trained on faithdial only
    record = interpolate(base, fold, 0.7, tmp_path / "mix")
    assert record["base_sources"] == ["begin"]
    assert trained_sources(tmp_path / "mix") == {"begin", "faithdial"}
    mix = json.loads((tmp_path / "mix" / "training_config.json").read_text())
    del mix["interpolated"]["base_sources"]  # a record written before base_sources: read from the base's folder
    (tmp_path / "mix" / "training_config.json").write_text(json.dumps(mix))
    assert trained_sources(tmp_path / "mix") == {"begin", "faithdial"}
    base.rename(tmp_path / "moved")  # ...and when that folder is gone, nobody can tell: refused, never "nothing"
    with pytest.raises(InputError, match=r"field 'interpolated.base': the mix's base .*full is not here"):
        trained_sources(tmp_path / "mix")


def test_a_symbolic_link_as_out_is_refused_naming_it(tmp_path):
    base = _model(tmp_path / "nli", 0.0, "nli")
    tuned = _model(tmp_path / "support", 1.0, "support")
    interpolate(base, tuned, 0.5, tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UsageError, match=r"^--out .*link is a symbolic link \(to .*real\)"):
        interpolate(base, tuned, 0.5, tmp_path / "link")
    assert (tmp_path / "real" / "model.safetensors").is_file()


def test_a_stage_mixes_with_its_starting_point_of_another_task(tmp_path):
    """The relevance stage was tuned from the general-NLI stage (a support stage): that mix is what WiSE-FT is, so the
    task check allows it, while two unrelated stages of different tasks stay refused."""
    nli = _model(tmp_path / "nli", 0.0, "nli", base="minilm")
    relevance = _model(tmp_path / "relevance", 2.0, "relevance-stage", base=nli)
    tc = json.loads((relevance / "training_config.json").read_text())
    tc["recipe"]["task"] = "relevance"
    (relevance / "training_config.json").write_text(json.dumps(tc))
    nli_tc = json.loads((nli / "training_config.json").read_text())
    nli_tc["recipe"]["task"] = "support"
    (nli / "training_config.json").write_text(json.dumps(nli_tc))
    assert interpolate(nli, relevance, 0.5, tmp_path / "mix")["weight"] == 0.5
    other = _model(tmp_path / "other", 0.0, "other", base="minilm")
    (other / "training_config.json").write_text(json.dumps({**nli_tc, "recipe": {**nli_tc["recipe"], "recipe": "o"}}))
    with pytest.raises(UsageError, match="was not tuned from it"):
        interpolate(other, relevance, 0.5, tmp_path / "mix2")
