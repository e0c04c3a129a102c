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
