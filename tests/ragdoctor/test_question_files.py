"""Question files (`ragdoctor run --questions FILE`) and single questions (`ragdoctor ask`) as a user hands them in:
exit 0 with each bad line skipped (one line naming file, line and field) and counted, or exit 2 with one error line;
never a traceback, and nothing already answered lost. Fake embedder and fake LLM server: no model needed."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from corpora.records import Question
from rag.config import PipelineConfig
from rag.fake_server import FakeOpenAIServer
from rag.llm import FakeLLM, LLMError
from ragdoctor import flow
from ragdoctor.cli import main
from tests.bad_input_cases import DOCS, jsonl

GOOD = {"id": "q1", "question": "What does the KV cache store?"}


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def ws(tmp_path_factory, server):
    """A corpus and its index (fake embedder), shared: every test writes its own question file and run name."""
    ws = tmp_path_factory.mktemp("questions")
    jsonl(ws / "corpus.jsonl", [{"id": i, "title": t, "text": x} for i, t, x in DOCS])
    assert main(["index", "--embedder", "fake", "--index-dir", str(ws / "idx"), "--corpus",
                 str(ws / "corpus.jsonl")]) == 0
    return ws


@pytest.fixture(autouse=True)
def in_ws(ws, monkeypatch):
    monkeypatch.chdir(ws)  # messages name the files as given: relative


def pipe(ws: Path, server) -> list[str]:
    return ["--embedder", "fake", "--index-dir", str(ws / "idx"), "--corpus", str(ws / "corpus.jsonl"),
            "--base-url", server.base_url, "--no-rerank"]


def cli(argv: list[str], capsys) -> tuple[int, str, list[str]]:
    """Exit status, stdout and the stderr lines, checked against the contract's shape."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and "internal error" not in err, err
    assert all(ln.startswith("ragdoctor: ") for ln in lines), err
    errors = [ln for ln in lines if ln.startswith("ragdoctor: error: ")]
    assert len(errors) == (code == 2), err  # exit 2: exactly one error line; else none
    return code, out, lines


def run(ws: Path, server, capsys, name: str, data: bytes, suffix: str = ".jsonl") -> tuple[int, list[str], list]:
    """``ragdoctor run`` on ``data`` written to NAME.SUFFIX, into runs/NAME: status, stderr lines, traced ids."""
    (ws / f"{name}{suffix}").write_bytes(data)
    code, _, lines = cli(["run", *pipe(ws, server), "--questions", f"{name}{suffix}", "--name", name], capsys)
    traces = ws / "runs" / name / "traces.jsonl"
    ids = [json.loads(ln)["sample_id"] for ln in traces.read_text().splitlines()] if traces.exists() else []
    return code, lines, ids


def lines_of(rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows).encode()


# --- what a question set is ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "data", "suffix"), [
    ("plain", b"What does the KV cache store?\nWhat is LoRA?\n", ".txt"),
    ("csv", b"id,question\nq1,What does the KV cache store?\n", ".csv"),
    ("array", b'[{"id": "q1", "question": "What does the KV cache store?"}]\n', ".json"),
], ids=["plain-text", "csv", "json-array"])
def test_a_file_that_is_not_jsonl_is_refused_saying_what_a_question_set_is(ws, server, capsys, name, data, suffix):
    code, lines, ids = run(ws, server, capsys, name, data, suffix)
    assert code == 2 and ids == []
    assert f"{name}{suffix}: not a question set: expected JSONL, one JSON object a line" in lines[-1]
    assert '{"id": "q1", "question": ' in lines[-1] and "line 1: " in lines[-1]


def test_a_jsonl_file_whose_lines_are_all_bad_records_keeps_the_first_lines_reason(ws, server, capsys):
    code, lines, _ = run(ws, server, capsys, "allbad", lines_of([{"id": "a", "question": "  "}, {"id": "b"}]))
    assert code == 2 and "not a question set" not in lines[-1]
    assert "allbad.jsonl: no valid questions (2 bad lines skipped; first: line 1: field 'question': is blank)" in \
        lines[-1]


@pytest.mark.parametrize(("name", "data", "why"), [
    ("empty", b"", "no questions found"),
    ("blanks", b"\n  \r\n\t\n", "no questions found"),
    ("utf16", json.dumps(GOOD).encode("utf-16"), "not valid UTF-8"),
], ids=["empty", "blank-lines", "utf-16"])
def test_a_file_with_no_question_is_one_error_line(ws, server, capsys, name, data, why):
    code, lines, _ = run(ws, server, capsys, name, data)
    assert code == 2 and why in lines[-1] and f"{name}.jsonl" in lines[-1]


# --- bad lines among good ones ----------------------------------------------------------------------------------

def test_bad_lines_are_skipped_one_line_each_and_the_good_ones_answered(ws, server, capsys):
    rows = ["", GOOD, "   ", {"id": "q2", "question": ""}, {"id": "q3", "question": "\u200b\u200d \ufeff"},
            {"id": "q1", "question": "What is LoRA?"}, {"id": 7, "question": "What rank do LoRA adapters use?"},
            {"id": 7.5, "question": "What is ring all-reduce?"}, {"question": "What does FlashAttention tile?"},
            {"id": "q4", "question": "What is LoRA?", "reference": ["low-rank", "adapters"]}]
    data = b"\xef\xbb\xbf" + lines_of(rows).replace(b"\n", b"\r\n") + b'{"id": "q5", "question": "caf\xe9?"}\r\n'
    code, lines, ids = run(ws, server, capsys, "mixed", data)
    assert code == 0 and ids == ["q1", "7"]
    skipped = [ln.removeprefix("ragdoctor: skipped bad record: ") for ln in lines if "skipped bad record" in ln]
    assert [s.split(": ", 2)[:2] for s in skipped] == [
        ["mixed.jsonl:4", "field 'question'"], ["mixed.jsonl:5", "field 'question'"], ["mixed.jsonl:6", "field 'id'"],
        ["mixed.jsonl:8", "field 'id'"], ["mixed.jsonl:9", "field 'id'"], ["mixed.jsonl:10", "field 'reference'"],
        ["mixed.jsonl:11", "not valid UTF-8 (byte 29)"]], skipped
    assert "duplicate question id 'q1' (first on line 2" in skipped[2] and "missing required field" in skipped[4]
    listed = (ws / "runs" / "mixed" / "input_errors.txt").read_text().splitlines()
    assert len([ln for ln in listed if ln.startswith("mixed.jsonl:")]) == 7


def test_a_gzipped_question_set_is_read(ws, server, capsys):
    code, _, ids = run(ws, server, capsys, "gz", gzip.compress(lines_of([GOOD])), ".jsonl.gz")
    assert code == 0 and ids == ["q1"]


def test_a_question_asked_under_two_ids_is_answered_for_both_and_warned_about(ws, server, capsys):
    rows = [GOOD, {"id": "q2", "question": " what does the KV cache  STORE?"}, {"id": "q3", "question": "What is LoRA?"}]
    code, lines, ids = run(ws, server, capsys, "duptext", lines_of(rows))
    assert code == 0 and ids == ["q1", "q2", "q3"]
    warned = [ln for ln in lines if "ask again what another id asks" in ln]
    assert len(warned) == 1 and "1 question(s)" in warned[0] and "'q2' repeats 'q1'" in warned[0], lines


def test_labels_naming_no_document_are_warned_with_a_count(ws, server, capsys):
    rows = [{**GOOD, "relevant_doc_ids": ["kv", "nowhere"]}, {"id": "q2", "question": "What is LoRA?",
                                                              "relevant_doc_ids": ["gone"]}]
    code, lines, ids = run(ws, server, capsys, "labels", lines_of(rows))
    assert code == 0 and ids == ["q1", "q2"]
    assert any("2 relevant id(s) name no document or chunk of the corpus ('gone', 'nowhere')" in ln for ln in lines)


# --- resume -----------------------------------------------------------------------------------------------------

def test_a_rerun_after_editing_one_question_answers_only_that_one_again(ws, server, capsys):
    rows = [GOOD, {"id": "q2", "question": "What is LoRA?"}, {"id": "q3", "question": "What is ring all-reduce?"}]
    assert run(ws, server, capsys, "resume", lines_of(rows))[0] == 0
    sent = server.received
    rows[1] = {"id": "q2", "question": "What rank do LoRA adapters use?"}
    code, _, ids = run(ws, server, capsys, "resume", lines_of(rows))
    assert code == 0 and server.received - sent == 1 and ids == ["q1", "q2", "q3", "q2"]
    last = json.loads((ws / "runs" / "resume" / "traces.jsonl").read_text().splitlines()[-1])
    assert last["question"] == "What rank do LoRA adapters use?"
    sent = server.received  # the same questions written with CRLF line ends: nothing is answered again
    (ws / "resume.jsonl").write_bytes(lines_of(rows).replace(b"\n", b"\r\n"))
    code, _, ids = run(ws, server, capsys, "resume", (ws / "resume.jsonl").read_bytes())
    assert code == 0 and server.received == sent and len(ids) == 4


# --- a question too long for the generator ----------------------------------------------------------------------

class ContextLimited(FakeLLM):
    """A generator whose window holds 4,000 characters of prompt, refusing longer prompts as llama.cpp does."""

    def chat(self, messages, **kw):
        n = sum(len(str(m.get("content", ""))) for m in messages)
        if n > 4000:
            raise LLMError(f"request ({n} chars) exceeds the available context size (4000)", kind="http_400")
        return super().chat(messages, **kw)


def test_a_question_beyond_the_generators_window_fails_alone_with_the_reason(ws, tmp_path):
    questions = [Question(**GOOD), Question(id="long", question="What is LoRA? " * 1500)]
    cfg = PipelineConfig(corpus=str(ws / "corpus.jsonl"), index_dir=str(ws / "idx"), embedding={"model": "fake"},
                         retrieval={"rerank": False})
    result = flow.answer_questions(cfg, tmp_path / "run" / "traces.jsonl", questions=questions,
                                   llm=ContextLimited(), progress=False)
    by_id = {t.sample_id: t for t in result.traces}
    assert by_id["q1"].outcome == "answered"
    assert by_id["long"].outcome == "error" and "exceeds the available context size" in by_id["long"].error
    assert len(by_id["long"].question) == len(questions[1].question)  # the trace holds what was asked, uncut


# --- ask --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("question", "why"), [("", "the question is blank"), ("   ", "the question is blank"),
                                                ("\u200b\u200b", "the question has no letter or digit")],
                         ids=["empty", "spaces", "zero-width"])
def test_ask_without_a_question_is_a_usage_error(ws, server, capsys, question, why):
    code, out, lines = cli(["ask", question, *pipe(ws, server)], capsys)
    assert code == 2 and out == "" and why in lines[0]


def test_ask_a_50k_character_question(ws, server, capsys):
    code, out, _ = cli(["ask", "What is LoRA? " * 3600, *pipe(ws, server)], capsys)
    assert code == 0 and out.strip()
