"""ragdoctor/options.py: the range of every numeric option, and the blank check of every option and positional
argument, whatever its ``type=`` makes of the text (README "What ragdoctor promises")."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from ragdoctor.cli import build_parser, main
from ragdoctor.options import MAX_BATCH_SIZE, MAX_EPOCHS, RULES, all_parsers, checked_numbers, once_only


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # the CLI's Parser prints and exits 2; here the message is what is checked
        raise ValueError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="x")
    p.add_argument("run")
    p.add_argument("more", nargs="*")
    p.add_argument("--out", type=Path)
    p.add_argument("--name")
    p.add_argument("--pair", nargs="+")
    p.add_argument("--n", type=int)
    return once_only(checked_numbers(p))


@pytest.mark.parametrize("argv, why", [
    (["r", "--out", ""], "--out: a blank value"),  # Path("") would be "." (the current folder)
    (["r", "--out", "   "], "--out: a blank value"),  # Path("   ") a folder named by spaces
    (["r", "--name", "\t"], "--name: a blank value"),
    (["r", "--pair", "a", ""], "--pair: a blank value"),
    (["", "--name", "n"], "the run is blank"),
    (["  "], "the run is blank"),
    (["r", "a", " "], "the more is blank"),
    (["r", "--n", ""], "--n: must be an integer"),
])
def test_a_blank_value_is_refused_whatever_its_type_makes_of_it(argv, why):
    with pytest.raises(ValueError, match=why):
        _parser().parse_args(argv)


def test_values_that_are_not_blank_are_converted_as_declared():
    args = _parser().parse_args(["r", "a", "b", "--out", "o", "--pair", "x", "y", "--n", "3"])
    assert (args.run, args.more, args.out, args.pair, args.n) == ("r", ["a", "b"], Path("o"), ["x", "y"], 3)
    assert _parser().parse_args(["r"]).more == []  # a '*' positional left out is no blank value


def test_every_positional_argument_of_every_command_refuses_a_blank_value():
    positionals = [(p.prog, a) for p in all_parsers(build_parser()) for a in p._actions
                   if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]
    assert len(positionals) >= 10, positionals
    for prog, action in positionals:
        assert type(action).__name__.startswith("NotBlank"), (prog, action.dest)


@pytest.mark.parametrize("argv, why", [
    (["gate", "", "--min", "groundedness=0.5"], r"gate: the run is blank"),
    (["summary", " "], r"summary: the run is blank"),
    (["eval", "", "--judges", "lexical"], r"eval: the traces is blank"),
    (["label", "", "--sample", "q1", "--metric", "groundedness", "--value", "1"], r"label: the run is blank"),
    (["diagnose", ""], r"diagnose: the run is blank"),
    (["dashboard", "", "--host", "no-such-host.invalid"], r"dashboard: the RUN is blank"),
    (["import", "", "--out", "imp"], r"import: the file is blank"),
    (["judge", "refit", "", "--out", "x"], r"judge refit: the judge is blank"),
    (["judge", "interpolate", "a", " ", "--weight", "0.5", "--out", "x"], r"judge interpolate: the tuned is blank"),
    (["import", "spans.json", "--out", ""], r"import: --out: a blank value"),
    (["import", "spans.json", "--out", "   "], r"import: --out: a blank value"),
    (["judge", "combine", "--support", "s", "--cross-fit", "", "--out", "x"], r"judge combine: --cross-fit: a blank"),
])
def test_the_cli_refuses_a_blank_argument_in_one_line_before_any_work(argv, why, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # a run folder's files here would make `gate ""` read "." and pass
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and why in err, err
    assert sorted(os.listdir(tmp_path)) == ["summary.json"]  # nothing written (import --out "" wrote into ".")


@pytest.mark.parametrize("flag, value", [
    ("--epochs", "1e308"), ("--epochs", "100.5"), ("--lr", "5"), ("--lr", "1"), ("--lr", "1e308"),
    ("--batch-size", "99999999999"), ("--batch-size", "65537"), ("--seed", "-1"),
])
def test_training_numbers_out_of_range_are_usage_errors_before_anything_is_read(flag, value, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:  # --epochs 1e308 used to read the pool (~25 s), then exit 3
        main(["judge", "train", "--out", str(tmp_path / "jt"), "--data-dir", str(tmp_path / "none"), flag, value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument {flag}: must be" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("argv", [  # each also fails fast without the range check (no model, no server started)
    ["ask", "What is LoRA?", "--request-timeout", "1e308", "--config", "no-such.toml"],
    ["run", "--request-timeout", "86401", "--config", "no-such.toml"],
    ["dashboard", "--timeout", "1e308", "--host", "no-such-host.invalid"],
])
def test_a_wait_longer_than_a_day_is_a_usage_error(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:  # 1e308 s overflowed the clock in every request: "every question failed"
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "must be a number > 0 and <= 86400" in err, err


def test_the_training_limits_are_the_recipes_limits():
    """The flags' ranges (RULES) and TrainConfig's agree, and every recipe the project ships is inside them."""
    from pydantic import ValidationError

    from judge_train.train import TrainConfig

    for key, good, bad in [("epochs", MAX_EPOCHS, MAX_EPOCHS + 0.5), ("batch_size", MAX_BATCH_SIZE, MAX_BATCH_SIZE + 1),
                           ("lr", 0.999, 1.0), ("lr", 1e-9, 0.0)]:
        assert RULES[key](str(good)) == good
        with pytest.raises(argparse.ArgumentTypeError):
            RULES[key](str(bad))
        assert getattr(TrainConfig(**{key: good}), key) == good
        with pytest.raises(ValidationError):
            TrainConfig(**{key: bad})


@pytest.mark.parametrize("argv, value", [
    (["eval", "rows.jsonl", "--judges", "llm"], "199"), (["eval", "rows.jsonl", "--judges", "llm"], "10000001"),
    (["eval", "rows.jsonl", "--judges", "llm"], "4e3"), (["eval", "rows.jsonl", "--judges", "llm"], "many"),
    (["meta-eval", "--dataset", "jsonl", "--judge", "llm"], "0"),
])
def test_judge_max_chars_out_of_range_is_a_usage_error_in_one_line(argv, value, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--judge-max-chars", value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1, err
    assert "--judge-max-chars: must be an integer >= 200 and <= 10000000" in err and os.listdir(tmp_path) == [], err
    assert RULES["judge_max_chars"]("200") == 200 and RULES["judge_max_chars"]("10000000") == 10_000_000


@pytest.mark.parametrize("verb", [["judge", "combine", "--support", "s", "--out", "x"], ["judge", "refit", "j", "--out", "x"]])
@pytest.mark.parametrize("value", ["-1", "65", "two"])
def test_max_features_out_of_range_is_a_usage_error_in_one_line(verb, value, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main([*verb, "--max-features", value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and "--max-features" in err, err
    assert RULES["max_features"]("0") == 0 and RULES["max_features"]("64") == 64
