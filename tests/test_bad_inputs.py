"""The CLI contract on hostile but fair input, verb by verb (issue 12): every case asserts the exit status, the shape of
what is printed (one ``ragdoctor: error: ...`` line, ``file:line: field 'x': problem`` for input rows, no traceback)
and that nothing already computed is lost (files the user wrote never change; ragdoctor's logs only grow; an error
changes nothing at all). Each case is labelled with its outcome: a clear ``error`` (exit 2), a value ``unmeasured``
with its reason, or ``ok`` (processed; skipped lines reported). Fake embedder and fake LLM server: no model needed."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from rag.fake_server import FakeOpenAIServer
from ragdoctor.cli import main
from tests.bad_input_cases import CASES, DOCS, LABELS, PIPE, QUESTIONS, ROW, Case, jsonl

GATE_TOML = "[tool.ragdoctor.gate]\nmin = { groundedness = 0.1 }\nmax_unmeasured = 1.0\n"


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def template(tmp_path_factory, server):
    """A workspace with a corpus, a question set, an index, a pipeline run, an evaluation and a user's own files."""
    ws = tmp_path_factory.mktemp("ws")
    jsonl(ws / "corpus.jsonl", [{"id": i, "title": t, "text": x} for i, t, x in DOCS])
    jsonl(ws / "questions.jsonl", [{"id": i, "question": q, "reference": r, "relevant_doc_ids": rel}
                                   for i, q, r, rel in QUESTIONS])
    jsonl(ws / "inputs" / "rows.jsonl", [ROW, {**ROW, "id": "r2", "answer": "It stores optimizer state."}])
    jsonl(ws / "inputs" / "labels.jsonl", LABELS)
    (ws / "user").mkdir()
    (ws / "user" / "notes.txt").write_text("my own notes\n")
    (ws / "user" / "config.json").write_text('{"mine": true}\n')
    (ws / "pyproject.toml").write_text(GATE_TOML)
    (ws / "none.toml").write_text("")  # a thresholds file without thresholds: the gate cases give theirs by --min

    cwd = os.getcwd()
    os.chdir(ws)
    try:
        pipe = [a.replace("{url}", server.base_url) for a in PIPE]
        assert main(["index", *pipe[:6]]) == 0
        assert main(["run", *pipe, "--questions", "questions.jsonl", "--name", "r1"]) == 0
        assert main(["eval", "runs/r1/traces.jsonl", "--judges", "lexical,labels"]) == 0
    finally:
        os.chdir(cwd)
    return ws


@pytest.fixture
def ws(template, tmp_path, monkeypatch):
    dst = shutil.copytree(template, tmp_path / "ws")
    monkeypatch.chdir(dst)
    return dst


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


LOGS = ("traces.jsonl", "results.jsonl", "labels.jsonl")
# files ragdoctor itself rewrites as a whole on a successful run: its summaries, tables, configs and the index
REWRITTEN = ("summary.json", "results.parquet", "config.json", "input_errors.txt", "warnings.txt", "gate.xml",
             "run_summary.json", "diagnoses.jsonl", "diagnosis.json", "scores.jsonl", "results.json", "reliability.png")


def assert_nothing_lost(before: dict[str, bytes], after: dict[str, bytes], code: int) -> None:
    for name, data in before.items():
        assert name in after, f"{name} was deleted"
        if code == 2:
            assert after[name] == data, f"{name} changed although the command failed"
        elif name.endswith(LOGS):
            assert after[name].startswith(data), f"{name}: the log was rewritten, not appended to"
        elif name.startswith(("user/", "inputs/", "corpus", "questions")) or name in ("pyproject.toml", "none.toml"):
            assert after[name] == data, f"{name}: a user's file changed"
        else:
            assert name.startswith("idx/") or name.endswith(REWRITTEN) or name.startswith("me/"), name


def test_the_table_covers_every_verb_and_outcome():
    verbs = {c.argv[0] for c in CASES}
    assert {"index", "run", "ask", "eval", "gate", "diagnose", "meta-eval", "label", "summary", "import"} <= verbs
    assert len({c.id for c in CASES}) == len(CASES)
    counts = {o: sum(c.outcome == o for c in CASES) for o in ("error", "unmeasured", "ok")}
    assert counts["error"] >= 50 and counts["unmeasured"] >= 3 and counts["ok"] >= 10, counts


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, ws: Path, server, capsys, monkeypatch):
    if case.prep:
        case.prep(ws)
    for key, value in (case.env or {}).items():
        monkeypatch.setenv(key, value)
    before = snapshot(ws)
    argv = [a.replace("{url}", server.base_url) for a in case.argv]
    code, out, err = run_cli(argv, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == case.code, f"exit {code}, expected {case.code}\n{out}\n{err}"
    assert "Traceback" not in err and "internal error" not in err, err
    assert all(ln.startswith("ragdoctor: ") for ln in lines), err  # nothing but the tool's own one-line messages
    errors = [ln for ln in lines if ln.startswith("ragdoctor: error: ")]
    if case.code == 2:
        assert len(errors) == 1, err
        assert re.search(case.err, errors[0]), f"{case.err!r} not in {errors[0]!r}"
    else:
        assert not errors, err
        if case.err:
            assert any(re.search(case.err, ln) for ln in lines), err
    assert_nothing_lost(before, snapshot(ws), code)
    if case.check:
        case.check(ws, out, err)
