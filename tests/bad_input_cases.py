"""The table of hostile inputs tests/test_bad_inputs.py runs, one ``Case`` per command and input (issue 12), with
the workspace data it is written against and the helpers that prepare and check a case."""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragdoctor.cli import main
from tests.files import symlink_loop

DOCS = [("kv", "KV cache", "The KV cache stores keys and values for every token. It grows with sequence length."),
        ("fa", "FlashAttention", "FlashAttention tiles the attention computation to avoid HBM traffic."),
        ("lora", "LoRA", "LoRA adds low-rank adapters to frozen weights. The rank r is often 8."),
        ("ring", "Ring all-reduce", "Ring all-reduce sends about twice the gradient size per GPU."),
        ("spec", "Speculative decoding", "A small draft model proposes tokens that the large model verifies."),
        ("cap", "Cairo", "القاهرة هي عاصمة مصر وأكبر مدنها.")]
QUESTIONS = [("q1", "What does the KV cache store?", "Keys and values for every token.", ["kv"]),
             ("q2", "What does FlashAttention tile?", "The attention computation.", ["fa"]),
             ("q3", "What rank do LoRA adapters often use?", "The rank r is often 8.", ["lora"]),
             ("q4", "How much does ring all-reduce send per GPU?", "About twice the gradient size.", ["ring"])]
CTX = [{"id": "kv#0", "doc_id": "kv", "text": DOCS[0][2]}, {"id": "fa#0", "doc_id": "fa", "text": DOCS[1][2]}]
ROW = {"id": "r1", "question": "What does the KV cache store?", "contexts": CTX,
       "answer": "The KV cache stores keys and values for every token.", "reference": "Keys and values.",
       "relevant_ids": ["kv"]}
LABELS = [{"evidence": DOCS[i % 4][2], "text": DOCS[(i + i % 2) % 4][2], "label": 1 - i % 2} for i in range(8)]
PIPE = ["--embedder", "fake", "--index-dir", "idx", "--corpus", "corpus.jsonl", "--base-url", "{url}"]
def jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def last_judgement(path: Path, sample_id: str) -> dict:
    return [j for j in map(json.loads, path.read_text().splitlines()) if j["sample_id"] == sample_id][-1]


def result(path: Path, sample_id: str, metric: str, judge: str) -> dict:
    return next(r for r in last_judgement(path, sample_id)["results"] if r["metric"] == metric and r["judge"] == judge)


@dataclass
class Case:
    id: str
    argv: list[str]
    code: int
    err: str = ""  # a regex the one error line (code 2) or some stderr line (code 0) must contain
    outcome: str = "error"  # error | unmeasured | ok
    prep: Callable[[Path], None] | None = None
    check: Callable[[Path, str, str], None] | None = None
    env: dict[str, str] | None = None


def write(rel: str, rows) -> Callable[[Path], None]:
    return lambda ws: jsonl(ws / rel, rows) and None


def raw(rel: str, data: bytes) -> Callable[[Path], None]:
    def prep(ws: Path) -> None:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
    return prep


def truncate(rel: str) -> Callable[[Path], None]:
    return lambda ws: (ws / rel).write_bytes((ws / rel).read_bytes()[: (ws / rel).stat().st_size // 2]) and None


def foreign_faiss(ws: Path) -> None:
    import faiss
    import numpy as np

    index = faiss.IndexFlatIP(256)
    index.add(np.eye(256, dtype="float32")[:2])
    faiss.write_index(index, str(ws / "idx" / "dense.faiss"))


def unmeasured(log: str, sid: str, metric: str, judge: str, reason: str):
    def check(ws: Path, out: str, err: str) -> None:
        r = result(ws / log, sid, metric, judge)
        assert r["status"] == "unmeasured" and reason in r["reason"], r
    return check


def measured(log: str, sid: str, metric: str, judge: str, value: float | None = None):
    def check(ws: Path, out: str, err: str) -> None:
        r = result(ws / log, sid, metric, judge)
        assert r["status"] == "ok" and (value is None or abs(r["value"] - value) < 1e-9), r
    return check


def file_has(rel: str, text: str):
    return lambda ws, out, err: None if text in (ws / rel).read_text() else pytest.fail(f"{rel} lacks {text!r}")


def edit_summary(old: str, new: str) -> Callable[[Path], None]:
    """Hand-edit runs/r1/summary.json: replace the first ``old`` with ``new`` (the text must be there)."""
    def prep(ws: Path) -> None:
        path = ws / "runs/r1/summary.json"
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new, 1))
    return prep


def no_bom_in(rel: str):
    return lambda ws, out, err: None if "\ufeff" not in (ws / rel).read_text(encoding="utf-8") else \
        pytest.fail(f"{rel} keeps the byte-order mark")


EV = ["--judges", "lexical,labels", "--out", "ev"]


def not_written(*rels: str):
    return lambda ws, out, err: None if not any((ws / r).exists() for r in rels) else \
        pytest.fail(f"one of {rels} was written")


def eval_config_names(source: str):
    """config.json is valid UTF-8 JSON naming the source exactly (a name from a shell with a byte that is not UTF-8),
    and no temporary file is left beside it."""
    def check(ws: Path, out: str, err: str) -> None:
        cfg = json.loads((ws / "ev" / "config.json").read_text(encoding="utf-8"))
        assert cfg["source"].endswith(source), cfg["source"]
        assert not [p.name for p in (ws / "ev").iterdir() if p.name.endswith(".tmp")]
    return check


def otlp(*spans: dict) -> str:
    """An OTLP JSON export of OpenInference spans (one line: the collector's file exporter's shape)."""
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def oi_span(sid: str, parent: str | None, kind: str, **attrs: str) -> dict:
    kv = [{"key": k.replace("__", "."), "value": {"stringValue": v}} for k, v in
          {"openinference.span.kind": kind, **attrs}.items()]
    span = {"traceId": "ab" * 16, "spanId": sid * 8, "name": kind.lower(), "startTimeUnixNano": "1000000",
            "endTimeUnixNano": "9000000", "attributes": kv}
    return {**span, "parentSpanId": parent * 8} if parent else span


ROOT = oi_span("a1", None, "CHAIN", input__value=ROW["question"], output__value=ROW["answer"])
RETRIEVER = oi_span("b2", "a1", "RETRIEVER", retrieval__documents__0__document__id="kv#0",
                    retrieval__documents__0__document__content=DOCS[0][2])
SPANS = "inputs/spans.json"
ROWS = "inputs/x.jsonl"
GATE = ["gate", "runs/r1", "--pyproject", "none.toml"]
ME = ["meta-eval", "--dataset", "jsonl", "--judge", "lexical", "--resamples", "50", "--out", "me"]

CASES = [
    # --- index -------------------------------------------------------------------------------------------------
    Case("index-corpus-missing", ["index", "--corpus", "nope.jsonl", *PIPE[:4]], 2, r"nope\.jsonl: file not found"),
    # --- index-lab ---------------------------------------------------------------------------------------------
    Case("index-lab-out-is-folder", ["index-lab", "--out", "inputs", *PIPE[:6]], 2, r"inputs: is a folder"),
    Case("index-lab-no-index-there", ["index-lab", "--out", "lab.json", "--index", "inputs", "--embedder", "fake"], 2,
         r"no index here"),
    Case("index-lab-out-is-a-users-file", ["index-lab", "--out", "user/lab.json", *PIPE[:6]], 2,
         r"user/lab\.json: exists and is not a ragdoctor index lab JSON", prep=raw("user/lab.json", b'{"mine": 1}')),
    Case("retrieval-lab-out-is-a-run-log", ["retrieval-lab", "--out", "runs/r1/results.jsonl", *PIPE[:6]], 2,
         r"results\.jsonl: exists and is not a ragdoctor retrieval lab JSON"),
    Case("index-lab-nlist-zero", ["index-lab", "--out", "lab.json", "--nlist", "0", *PIPE[:6]], 2,
         r"--nlist: must be an integer >= 1"),
    Case("index-corpus-empty-folder", ["index", "--corpus", "inputs/none", *PIPE[:4]], 2,
         r"inputs/none: no readable \.txt", prep=lambda ws: (ws / "inputs/none").mkdir()),
    Case("index-corpus-one-bad-line", ["index", "--corpus", ROWS, *PIPE[:4], "--rebuild"], 0,
         r"skipped bad record: inputs/x\.jsonl:2: field 'text': missing required field", "ok",
         write(ROWS, [{"id": "a", "text": "alpha beta gamma"}, {"id": "b"}])),
    Case("index-corpus-only-bad-lines", ["index", "--corpus", ROWS, *PIPE[:4]], 2,
         r"inputs/x\.jsonl: no valid documents \(2 bad lines skipped; first: line 1: malformed JSON",
         prep=raw(ROWS, b'{"id": "a", "text": \n{"id": "b", "text": NaN}\n')),
    Case("index-corpus-duplicate-id", ["index", "--corpus", ROWS, *PIPE[:4], "--rebuild"], 0,
         r"inputs/x\.jsonl:2: field 'id': duplicate document id 'a'", "ok",
         write(ROWS, [{"id": "a", "text": "one two"}, {"id": "a", "text": "three four"}])),
    Case("index-corpus-not-utf8", ["index", "--corpus", ROWS, *PIPE[:4], "--rebuild"], 0,
         r"inputs/x\.jsonl:2: not valid UTF-8", "ok",
         raw(ROWS, b'{"id": "a", "text": "fine words here"}\n{"id": "b", "text": "caf\xe9"}\n')),
    Case("index-into-user-folder", ["index", *PIPE[:2], "--index-dir", "user", "--corpus", "corpus.jsonl"], 2,
         r"user: is not empty and holds no ragdoctor index manifest: refusing to replace it"),
    Case("index-into-current-folder", ["index", *PIPE[:2], "--index-dir", ".", "--corpus", "corpus.jsonl"], 2,
         r"cannot be the current folder"),
    Case("index-into-a-file", ["index", *PIPE[:2], "--index-dir", "user/notes.txt", "--corpus", "corpus.jsonl"], 2,
         r"user/notes\.txt: exists and is not a folder"),
    Case("ask-question-without-words", ["ask", "???", *PIPE], 2, r"ask: the question has no letter or digit"),
    Case("index-lone-surrogate-record", ["index", "--corpus", ROWS, *PIPE[:4], "--rebuild"], 0,
         r"skipped bad record: inputs/x\.jsonl:1: field 'text': holds a lone surrogate", "ok",
         raw(ROWS, b'{"id": "s", "text": "\\ud800 lone"}\n{"id": "g", "text": "Good words here."}\n')),
    Case("index-chunk-overlap-above-size", ["index", *PIPE[:6]], 2,
         r"field 'chunking': chunk_overlap \(64\) must be smaller than chunk_size \(32\)",
         env={"RAGDOCTOR_CHUNKING__CHUNK_SIZE": "32", "RAGDOCTOR_CHUNKING__CHUNK_OVERLAP": "64"}),
    Case("index-env-section-typo", ["index", *PIPE[:6]], 2,
         r"RAGDOCTOR_CHUNKNG__CHUNK_SIZE: unknown section 'chunkng'", env={"RAGDOCTOR_CHUNKNG__CHUNK_SIZE": "64"}),
    Case("index-config-key-outside-pipeline", ["index", *PIPE[:6], "--config", "user/c.toml"], 2,
         r"user/c\.toml: index_dir: outside the \[pipeline\] table",
         prep=raw("user/c.toml", b'index_dir = "elsewhere"\n[pipeline]\nchunking = { chunk_size = 64 }\n')),
    Case("index-rebuilt-for-another-corpus-says-so", ["index", *PIPE[:4], "--corpus", ROWS], 0,
         r"idx: the index is rebuilt \(corpus changed since the index was built\): it held 6 documents, now 1", "ok",
         write(ROWS, [{"id": "z", "text": "Another corpus entirely."}])),
    Case("ask-top-k-zero", ["ask", "What is LoRA?", *PIPE, "--top-k", "0"], 2, r"--top-k: must be an integer >= 1, got 0"),
    # a flag the command would ignore is not offered: index builds, it neither retrieves nor generates
    Case("index-generation-flag", ["index", *PIPE[:6], "--model", "qwen"], 2, r"unrecognized arguments: --model qwen"),
    Case("index-retrieval-flag", ["index", *PIPE[:6], "--top-k", "3"], 2,
         r"^ragdoctor: error: index: unrecognized arguments: --top-k 3 \(see `ragdoctor index --help`\)$"),
    Case("retrieval-lab-generation-flag", ["retrieval-lab", "--out", "lab.json", *PIPE[:6], "--guardrails"], 2,
         r"unrecognized arguments: --guardrails"),
    Case("index-config-unknown-key", ["index", *PIPE[:6], "--config", "user/c.toml"], 2,
         r"user/c\.toml: field 'retrieval\.top_kk': unknown field", prep=raw("user/c.toml", b"[retrieval]\ntop_kk=1\n")),
    Case("index-truncated-dense", ["index", *PIPE[:6]], 2, r"dense\.faiss does not match its manifest.*rebuild the index",
         prep=truncate("idx/dense.faiss")),
    Case("index-truncated-chunks", ["index", *PIPE[:6]], 2, r"chunks\.jsonl does not match its manifest",
         prep=truncate("idx/chunks.jsonl")),
    Case("index-foreign-dense", ["index", *PIPE[:6]], 2, r"dense\.faiss does not match its manifest \(2,093 bytes",
         prep=foreign_faiss),
    Case("index-corrupt-manifest", ["index", *PIPE[:6]], 2, r"idx/manifest\.json: unreadable manifest",
         prep=truncate("idx/manifest.json")),
    Case("index-rebuild-replaces-own-index", ["index", *PIPE[:6], "--rebuild"], 0, "", "ok"),
    Case("index-config-bool-for-a-number", ["index", *PIPE[:6], "--config", "user/c.toml"], 2,
         r"user/c\.toml: field 'retrieval\.top_k': must be a number, not true or false",
         prep=raw("user/c.toml", b"[retrieval]\ntop_k = true\n")),
    Case("index-config-a-folder", ["index", *PIPE[:6], "--config", "user"], 2, r"user: is a folder, not a file"),
    Case("index-config-not-utf8", ["index", *PIPE[:6], "--config", "user/c.toml"], 2, r"user/c\.toml: not valid UTF-8",
         prep=raw("user/c.toml", b"[retrieval]\nmode = 'd\xe9nse'\n")),
    Case("index-env-not-a-number", ["index", *PIPE[:6]], 2, r"field 'retrieval\.top_k': Input should be a valid "
         r"integer", env={"RAGDOCTOR_RETRIEVAL__TOP_K": "three"}),
    Case("index-env-typo-beside-a-config-file", ["index", *PIPE[:6], "--config", "user/c.toml"], 2,
         r"error: environment variable RAGDOCTOR_RETRIEVAL__TOPK: field 'retrieval\.topk': unknown field",
         prep=raw("user/c.toml", b"[pipeline.retrieval]\ntop_k = 4\n"), env={"RAGDOCTOR_RETRIEVAL__TOPK": "3"}),
    Case("index-env-conflict", ["index", *PIPE[:6]], 2, r"RAGDOCTOR_INDEX__KIND conflicts with RAGDOCTOR_INDEX",
         env={"RAGDOCTOR_INDEX": "flat", "RAGDOCTOR_INDEX__KIND": "flat"}),
    # a folder holding only a user's own manifest.json is not an index: never replaced, never "rebuild it" (audit)
    Case("index-rebuild-into-a-users-manifest-folder", ["index", *PIPE[:2], "--index-dir", "user/ext", "--corpus",
                                                        "corpus.jsonl", "--rebuild"], 2,
         r"user/ext: is not empty and holds no ragdoctor index manifest: refusing to replace it",
         prep=raw("user/ext/manifest.json", b'{"name": "my extension"}')),
    Case("index-into-a-users-manifest-folder", ["index", *PIPE[:2], "--index-dir", "user/ext", "--corpus",
                                                "corpus.jsonl"], 2,
         r"user/ext: holds a manifest\.json that is not a ragdoctor index manifest: not an index",
         prep=raw("user/ext/manifest.json", b'{"name": "my extension"}'),
         check=lambda ws, out, err: None if "rebuild" not in err else pytest.fail(f"advises a rebuild: {err}")),
    Case("index-integer-ids", ["index", "--corpus", ROWS, *PIPE[:4], "--rebuild"], 0, "", "ok",
         write(ROWS, [{"id": 1, "text": "one two three"}, {"id": 2, "text": "four five six"}])),
    # --- run ---------------------------------------------------------------------------------------------------
    Case("run-questions-folder", ["run", *PIPE, "--questions", "user"], 2, r"user: is a folder, not a file"),
    Case("run-questions-missing", ["run", *PIPE, "--questions", "no.jsonl"], 2, r"no\.jsonl: file not found"),
    Case("run-questions-bad-lines", ["run", *PIPE, "--questions", ROWS, "--name", "r2"], 0,
         r"inputs/x\.jsonl:2: field 'question': is blank", "ok",
         write(ROWS, [{"id": "a", "question": "What does the KV cache store?"}, {"id": "b", "question": "  "},
                      {"id": "a", "question": "Again?"}]),
         file_has("runs/r2/input_errors.txt", "duplicate question id 'a'")),
    Case("run-labels-not-in-corpus", ["run", *PIPE, "--questions", ROWS, "--name", "r3"], 0,
         r"warning: inputs/x\.jsonl: 1 relevant id\(s\) name no document or chunk of the corpus \('nowhere'\)", "ok",
         write(ROWS, [{"id": "a", "question": "What does the KV cache store?", "relevant_doc_ids": ["nowhere"]}])),
    Case("run-answerable-as-a-string", ["run", *PIPE, "--questions", ROWS, "--name", "r4"], 0,
         r"inputs/x\.jsonl:2: field 'metadata': metadata\.answerable must be true or false, got 'false'",
         "ok", write(ROWS, [{"id": "a", "question": "What does the KV cache store?"},
                            {"id": "b", "question": "Who won in 2031?", "metadata": {"answerable": "false"}}])),
    Case("run-base-url-malformed", ["run", *PIPE[:-2], "--base-url", "http://127.0.0.1:80a/v1"], 2,
         r"--base-url: not a valid URL \(Port could not be cast"),
    Case("run-limit-zero", ["run", *PIPE, "--limit", "0"], 2, r"--limit: must be an integer >= 1, got 0"),
    Case("run-limit-negative", ["run", *PIPE, "--limit", "-1"], 2, r"--limit: must be an integer >= 1, got -1"),
    Case("run-out-folder", ["run", *PIPE, "--questions", "questions.jsonl", "--out", "user"], 2,
         r"user: is a folder, not a traces log"),
    Case("run-out-user-file", ["run", *PIPE, "--questions", "questions.jsonl", "--out", "user/config.json"], 2,
         r"user/config\.json: not a ragdoctor traces log .*refusing"),
    Case("run-out-beside-a-users-input-errors", ["run", *PIPE, "--questions", "questions.jsonl", "--out",
                                                 "user/traces.jsonl"], 0,
         r"user/input_errors\.txt exists and was not written by ragdoctor: left as it is", "ok",
         raw("user/input_errors.txt", b"MY OWN NOTES\n"), file_has("user/input_errors.txt", "MY OWN NOTES")),
    Case("run-name-is-a-path", ["run", *PIPE, "--name", "../escape"], 2, r"--name: '\.\./escape' is not a folder name"),
    Case("run-server-down", ["run", *PIPE[:-1], "http://127.0.0.1:9/v1", "--questions", "questions.jsonl",
                             "--name", "down", "--limit", "2"], 2, r"every question failed",
         check=lambda ws, out, err: None if len((ws / "runs/down/traces.jsonl").read_text().splitlines()) == 2
         else pytest.fail("traces lost")),
    # --- ask ---------------------------------------------------------------------------------------------------
    Case("ask-blank", ["ask", "  ", *PIPE], 2, r"the question is blank"),
    Case("ask-other-embedder", ["ask", "What is LoRA?", *PIPE[:1], "minilm", *PIPE[2:]], 2, r"built differently"),
    Case("ask-truncated-index", ["ask", "What is LoRA?", *PIPE], 2, r"rebuild the index",
         prep=truncate("idx/dense.faiss")),
    Case("ask-server-down", ["ask", "What is LoRA?", *PIPE[:-1], "http://127.0.0.1:9/v1"], 2, r"generation failed"),
    Case("ask-top-k-negative", ["ask", "What is LoRA?", *PIPE, "--top-k", "-3"], 2, r"--top-k: must be an integer"),
    # --- eval --------------------------------------------------------------------------------------------------
    Case("eval-input-missing", ["eval", "nope.jsonl", *EV], 2, r"nope\.jsonl: file not found"),
    Case("eval-input-folder", ["eval", "runs/r1", *EV], 2, r"runs/r1: is a folder, not a file"),
    Case("eval-input-empty", ["eval", ROWS, *EV], 2, r"inputs/x\.jsonl: no records found", prep=raw(ROWS, b"\n\n")),
    Case("eval-input-only-bad", ["eval", ROWS, *EV], 2, r"no valid records \(2 bad lines skipped; first: line 1: "
         r"field 'question': missing required field\)", prep=write(ROWS, [{"id": "a"}, [1, 2]])),
    Case("eval-one-bad-line", ["eval", ROWS, *EV], 0, r"inputs/x\.jsonl:2: field 'contexts\[0\]\.rank': must be a "
         r"whole number >= 1, got 0", "ok", write(ROWS, [ROW, {**ROW, "id": "b", "contexts": [{"text": "t", "rank": 0}]}]),
         file_has("ev/input_errors.txt", "inputs/x.jsonl:2:")),
    Case("eval-nan-score", ["eval", ROWS, *EV], 0, r"inputs/x\.jsonl:2: malformed JSON: NaN is not a JSON number",
         "ok", raw(ROWS, (json.dumps(ROW) + '\n{"id": "b", "question": "q?", "contexts": [{"text": "t", "score": NaN}]}'
                          '\n').encode())),
    Case("eval-metrics-typo", ["eval", "inputs/rows.jsonl", *EV, "--metrics", "groundednes"], 2,
         r"--metrics: unknown metric 'groundednes' \(valid: groundedness, context_precision"),
    Case("eval-judges-typo", ["eval", "inputs/rows.jsonl", "--judges", "nli,lexcal"], 2,
         r"--judges: unknown judge 'lexcal' \(valid: nli, embedding, lexical, llm, ragas, labels\)"),
    Case("eval-metric-no-judge", ["eval", "inputs/rows.jsonl", "--judges", "lexical", "--metrics", "recall@5"], 2,
         r"no judge among lexical measures 'recall@5'"),
    Case("eval-batch-size-zero", ["eval", "inputs/rows.jsonl", *EV, "--batch-size", "0"], 2, r"--batch-size: must be"),
    Case("eval-limit-zero", ["eval", "inputs/rows.jsonl", *EV, "--limit", "0"], 2, r"--limit: must be an integer >= 1"),
    Case("eval-limit-negative", ["eval", "inputs/rows.jsonl", *EV, "--limit", "-1"], 2, r"--limit: must be an integer"),
    Case("eval-out-a-file", ["eval", "inputs/rows.jsonl", "--judges", "lexical", "--out", "user/notes.txt"], 2,
         r"user/notes\.txt: exists and is not a folder"),
    Case("eval-out-user-folder", ["eval", "inputs/rows.jsonl", "--judges", "lexical", "--out", "user"], 2,
         r"user: is not empty and is not a ragdoctor run folder"),
    Case("eval-beside-a-users-traces-export", ["eval", "user/traces.jsonl", "--judges", "lexical"], 2,
         r"user/config\.json: exists and was not written by `ragdoctor eval`", prep=write("user/traces.jsonl", [ROW])),
    Case("eval-number-overflow", ["eval", ROWS, *EV], 0, r"inputs/x\.jsonl:2: malformed JSON: number 1e999 is out of "
         r"range", "ok", raw(ROWS, (json.dumps(ROW) + '\n{"id": "b", "question": "q?", "contexts": [{"text": "t", '
                                   '"score": 1e999}]}\n').encode())),
    Case("eval-nli-threshold-nan", ["eval", "inputs/rows.jsonl", "--nli-threshold", "nan"], 2, r"--nli-threshold"),
    Case("eval-missing-contexts", ["eval", ROWS, *EV], 0, "", "unmeasured",
         write(ROWS, [ROW, {k: v for k, v in ROW.items() if k != "contexts"} | {"id": "noctx"}]),
         unmeasured("ev/results.jsonl", "noctx", "groundedness", "lexical", "no contexts in the input record")),
    Case("eval-missing-contexts-recall", ["eval", ROWS, *EV], 0, "", "unmeasured",
         write(ROWS, [ROW, {**ROW, "id": "noctx", "contexts": []}]),
         unmeasured("ev/results.jsonl", "noctx", "recall@5", "labels", "no contexts in the input record")),
    Case("eval-contexts-without-doc-ids", ["eval", ROWS, *EV], 0, "", "unmeasured",
         write(ROWS, [{**ROW, "contexts": [c["text"] for c in CTX]}]),
         unmeasured("ev/results.jsonl", "r1", "recall@5", "labels", "the contexts carry no doc_id")),
    Case("eval-empty-relevant-ids-with-reference", ["eval", ROWS, *EV], 0, "", "ok",
         write(ROWS, [{**ROW, "relevant_ids": []}]),
         measured("ev/results.jsonl", "r1", "answer_correctness", "lexical")),
    # a reference with no word in it is none: not applicable, never context precision 0 "against the reference"
    Case("eval-punctuation-reference", ["eval", ROWS, "--judges", "lexical", "--out", "ev"], 0, "", "ok",
         write(ROWS, [{**ROW, "reference": " . "}]),
         lambda ws, out, err: None if (result(ws / "ev/results.jsonl", "r1", "answer_correctness", "lexical")["status"]
                                       == "not_applicable" and not result(ws / "ev/results.jsonl", "r1",
                                       "context_precision", "lexical")["evidence"]["with_reference"])
         else pytest.fail("read as a reference")),
    Case("eval-answer-without-words", ["eval", ROWS, "--judges", "lexical", "--out", "ev"], 0, "", "unmeasured",
         write(ROWS, [{**ROW, "answer": "..."}]),
         unmeasured("ev/results.jsonl", "r1", "answer_relevance", "lexical", "the answer has no words to check")),
    Case("eval-question-without-words", ["eval", ROWS, *EV], 0,
         r"inputs/x\.jsonl:2: field 'question': has no letter or digit: nothing is asked", "ok",
         write(ROWS, [ROW, {**ROW, "id": "r2", "question": "???"}])),
    Case("eval-duplicate-ids", ["eval", ROWS, *EV], 0,
         r"inputs/x\.jsonl:2: field 'id': duplicate id 'r1' \(first on line 1; this line is skipped\)", "ok",
         write(ROWS, [ROW, {**ROW, "answer": "Something else."}])),
    Case("eval-arabic-word-for-word", ["eval", ROWS, *EV], 0, "", "ok",
         write(ROWS, [{**ROW, "contexts": [{"id": "c", "doc_id": "cap", "text": DOCS[5][2]}],
                       "answer": "القاهرة هي عاصمة مصر."}]),
         measured("ev/results.jsonl", "r1", "groundedness", "lexical", 1.0)),
    Case("eval-emoji-answer", ["eval", ROWS, *EV], 0, "", "unmeasured", write(ROWS, [{**ROW, "answer": "🚀👍"}]),
         unmeasured("ev/results.jsonl", "r1", "groundedness", "lexical", "no words to check")),
    Case("eval-blank-contexts", ["eval", ROWS, *EV], 0, "", "unmeasured",
         write(ROWS, [{**ROW, "contexts": [{"id": "c1", "doc_id": "kv", "text": "  "}, {"id": "c2", "text": ""}]}]),
         lambda ws, out, err: (  # nothing for a judge to read; the retrieval metrics still count document ids
             unmeasured("ev/results.jsonl", "r1", "groundedness", "lexical", "every retrieved context is blank")(ws, out, err),
             measured("ev/results.jsonl", "r1", "recall@5", "labels", 1.0)(ws, out, err))),
    Case("eval-unknown-field", ["eval", ROWS, *EV], 0, r"warning: .*field 'refrence' is not one ragdoctor reads", "ok",
         write(ROWS, [{**ROW, "refrence": "x"}]), file_has("ev/warnings.txt", "refrence")),
    Case("eval-bad-outcome", ["eval", ROWS, *EV], 0, r"inputs/x\.jsonl:2: field 'outcome': Input should be", "ok",
         write(ROWS, [ROW, {**ROW, "id": "b", "outcome": "fine"}])),
    Case("eval-nothing-measured", ["eval", ROWS, "--judges", "lexical", "--metrics", "groundedness", "--out", "ev"], 2,
         r"nothing was measured \(no contexts in the input record\)", "error",
         write(ROWS, [{"id": "a", "question": "Q?", "answer": "An answer with words."}])),
    Case("eval-judge-model-no-llm-judge", ["eval", "inputs/rows.jsonl", *EV, "--judge-model", "qwen2.5-1.5b"], 2,
         r"--judge-model: only the llm and ragas judges read it, and the judges run are lexical, labels"),
    Case("eval-nli-model-missing", ["eval", "inputs/rows.jsonl", "--judges", "nli", "--nli-model", "nowhere",
                                    "--out", "ev"], 2, r"--nli-model nowhere: folder not found"),
    # given without the nli judge: that is what is wrong, whatever the folder (it said "folder not found")
    Case("eval-nli-model-missing-without-nli", ["eval", "inputs/rows.jsonl", "--judges", "lexical", "--nli-model",
                                                "nowhere", "--out", "ev"], 2,
         r"--nli-model: only the nli judge reads it, and the judges run are lexical"),
    # beside other judges the run measured something, so it used to end 0 with the named model unavailable
    Case("eval-nli-model-not-a-model", ["eval", "inputs/rows.jsonl", "--judges", "nli,lexical", "--nli-model", "user",
                                        "--out", "ev"], 2, r"--nli-model user: cannot be loaded \(ValueError: Unrecog",
         check=lambda ws, out, err: None if not (ws / "ev").exists() else pytest.fail("ev written")),
    Case("eval-nli-model-no-config", ["eval", "inputs/rows.jsonl", "--nli-model", "inputs", "--out", "ev"], 2,
         r"--nli-model inputs: not a judge folder \(support/, combiner\.json\) or a CrossEncoder folder"),
    Case("eval-nli-model-a-file", ["eval", "inputs/rows.jsonl", "--nli-model", "user/notes.txt", "--out", "ev"], 2,
         r"--nli-model user/notes\.txt: not a folder"),
    Case("eval-foreign-results-log", ["eval", "inputs/rows.jsonl", *EV], 2, r"not a ragdoctor results log",
         prep=raw("ev/results.jsonl", b'{"my": "own data"}\n')),
    # --- import (OpenInference spans) ----------------------------------------------------------------------------
    Case("import-ok", ["import", SPANS, "--out", "imp"], 0, "", "ok", write(SPANS, [otlp(ROOT, RETRIEVER)]),
         file_has("imp/traces.jsonl", '"sample_id":"a1a1a1a1a1a1a1a1"')),
    Case("import-file-missing", ["import", "nope.json", "--out", "imp"], 2, r"nope\.json: file not found"),
    Case("import-not-spans", ["import", "inputs/rows.jsonl", "--out", "imp"], 2,
         r"inputs/rows\.jsonl: no query trace in the span export"),
    Case("import-no-query-span", ["import", SPANS, "--out", "imp"], 2, r"no query trace in the span export",
         prep=write(SPANS, [otlp(oi_span("e5", None, "EMBEDDING", input__value="index build"))])),
    Case("import-orphan-span", ["import", SPANS, "--out", "imp"], 0,
         r"inputs/spans\.json: field 'resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[1\]': span d4d4d4d4d4d4d4d4: "
         r"its parent span eeeeeeeeeeeeeeee is not in the file", "ok",
         write(SPANS, [otlp(ROOT, oi_span("d4", "ee", "LLM"))]), file_has("imp/input_errors.txt", "d4d4d4d4d4d4d4d4")),
    Case("import-bad-span-id", ["import", SPANS, "--out", "imp"], 0, r"spanId '!!' is neither hex nor base64", "ok",
         write(SPANS, [otlp(ROOT, {**RETRIEVER, "spanId": "!!"})])),
    Case("import-torn-line", ["import", SPANS, "--out", "imp"], 0, r"inputs/spans\.json:2: malformed JSON", "ok",
         write(SPANS, [otlp(ROOT), '{"resourceSpans": [', otlp(oi_span("c3", None, "CHAIN", input__value="Q?",
                                                                     output__value="A."))])),
    Case("import-into-user-folder", ["import", SPANS, "--out", "user"], 2, r"user: is not empty and is not a ragdoctor",
         prep=write(SPANS, [otlp(ROOT)])),
    Case("import-over-a-users-traces", ["import", SPANS, "--out", "inputs"], 2, r"not a ragdoctor traces log",
         prep=lambda ws: (write(SPANS, [otlp(ROOT)])(ws), write("inputs/traces.jsonl", [ROW])(ws)) and None),
    Case("import-out-missing", ["import", SPANS], 2, r"the following arguments are required: --out"),
    Case("eval-spans-without-retrieval", ["eval", SPANS, *EV], 0, "", "unmeasured", write(SPANS, [otlp(ROOT)]),
         unmeasured("ev/results.jsonl", "a1a1a1a1a1a1a1a1", "groundedness", "lexical",
                    "no contexts in the input record: no RETRIEVER span was recorded under the root span")),
    Case("eval-spans-root-without-question", ["eval", SPANS, *EV], 0,
         r"span c3c3c3c3c3c3c3c3: the root span has no input\.value", "ok",
         write(SPANS, [otlp(ROOT, RETRIEVER, oi_span("c3", None, "CHAIN", output__value="An answer."))]),
         measured("ev/results.jsonl", "a1a1a1a1a1a1a1a1", "groundedness", "lexical")),
    # --- gate --------------------------------------------------------------------------------------------------
    Case("gate-run-missing", ["gate", "nope", "--min", "groundedness=0.5"], 2, r"nope: no summary\.json"),
    Case("gate-min-twice", [*GATE, "--min", "groundedness=0.5", "--min", "groundedness =0.9"], 2,
         r"--min: 'groundedness' is given twice \(0\.5 and 0\.9\)"),
    Case("gate-judge-never-measures-it", [*GATE, "--min", "groundedness:labels=0.1"], 2,
         r"the labels judge does not measure 'groundedness' \(it is measured by nli, embedding, lexical, llm, ragas\)"),
    Case("gate-metric-typo", [*GATE, "--min", "groundednes=0.5"], 2, r"--min: unknown metric 'groundednes'"),
    Case("gate-judge-typo", [*GATE, "--min", "groundedness:nly=0.5"], 2, r"unknown judge 'nly'"),
    Case("gate-min-out-of-range", [*GATE, "--min", "groundedness=1.5"], 2, r"must be within \[0, 1\]"),
    Case("gate-min-nan", [*GATE, "--min", "groundedness=nan"], 2, r"must be within \[0, 1\]"),
    Case("gate-max-unmeasured-negative", [*GATE, "--max-unmeasured", "-1"], 2, r"--max-unmeasured: must be a number"),
    Case("gate-junit-missing-folder", [*GATE, "--min", "groundedness=0.0", "--junit", "reports/ci/gate.xml"], 0, "", "ok",
         check=lambda ws, out, err: None if (ws / "reports/ci/gate.xml").exists() else pytest.fail("no junit")),
    Case("gate-junit-over-the-results-log", [*GATE, "--min", "groundedness=0.0", "--junit", "runs/r1/results.jsonl"], 2,
         r"results\.jsonl: exists and is not a ragdoctor JUnit report: refusing to replace it"),
    Case("gate-junit-a-folder", [*GATE, "--min", "groundedness=0.0", "--junit", "user"], 2, r"user: is a folder"),
    Case("gate-pyproject-out-of-range", ["gate", "runs/r1", "--pyproject", "user/p.toml"], 2,
         r"min\.groundedness: must be a number within \[0, 1\], got 2",
         prep=raw("user/p.toml", b"[tool.ragdoctor.gate]\nmin = { groundedness = 2 }\n")),
    Case("gate-pyproject-bool-as-string", ["gate", "runs/r1", "--pyproject", "user/p.toml"], 2,
         r"use_ci_lower must be true or false",
         prep=raw("user/p.toml", b'[tool.ragdoctor.gate]\nmin = { groundedness = 0.2 }\nuse_ci_lower = "false"\n')),
    Case("gate-pyproject-metric-typo", ["gate", "runs/r1", "--pyproject", "user/p.toml"], 2, r"unknown metric 'recal@5'",
         prep=raw("user/p.toml", b'[tool.ragdoctor.gate]\nmin = { "recal@5" = 0.2 }\n')),
    Case("gate-summary-malformed", [*GATE, "--min", "groundedness=0.5"], 2, r"runs/r1/summary\.json: not a ragdoctor "
         r"summary", prep=raw("runs/r1/summary.json", b'{"metrics": [{"metric": "groundedness"}]}')),
    Case("gate-no-thresholds", [*GATE], 2, r"no thresholds"),
    Case("gate-abbreviated-flag", [*GATE, "--max", "0.5", "--min", "groundedness=0.1"], 2,
         r"gate: unrecognized arguments: --max 0\.5"),  # never read as --max-unmeasured
    Case("gate-pyproject-tool-not-a-table", ["gate", "runs/r1", "--pyproject", "user/p.toml"], 2,
         r"user/p\.toml: \[tool\] must be a table", prep=raw("user/p.toml", b'tool = "x"\n')),
    Case("gate-junit-a-users-file-before-the-verdict", [*GATE, "--min", "answer_correctness=0.99", "--junit",
                                                        "user/notes.txt"], 2,
         r"user/notes\.txt: exists and is not a ragdoctor JUnit report"),
    Case("gate-default-report-over-a-users-file", [*GATE, "--min", "answer_correctness=0.99"], 1,
         r"warning: no JUnit report written \(runs/r1/gate\.xml: exists and is not a ragdoctor JUnit report", "ok",
         prep=raw("runs/r1/gate.xml", b"my own notes\n")),  # the verdict (exit 1) still comes
    Case("gate-summary-file-writes-its-folders-report", ["gate", "runs/r1/summary.json", "--pyproject", "none.toml",
                                                         "--min", "groundedness=0.0"], 0, "", "ok",
         check=lambda ws, out, err: None if "<testsuite" in (ws / "runs/r1/gate.xml").read_text()
         else pytest.fail("no gate.xml beside the summary")),
    Case("gate-at-the-results-log", ["gate", "runs/r1/results.jsonl", "--min", "groundedness=0.1"], 2,
         r"runs/r1/results\.jsonl: not a ragdoctor summary \(malformed JSON at line 2: Extra data\); give the run "
         r"folder or its summary\.json"),
    Case("gate-stale-summary", [*GATE, "--min", "groundedness=0.1"], 2, r"runs/r1/summary\.json: is from an earlier "
         r"evaluation", prep=lambda ws: (ws / "runs/r1/config.json").write_text(
             (ws / "runs/r1/config.json").read_text().replace('"run_key": "', '"run_key": "0'))),
    Case("gate-quality-failure", [*GATE, "--min", "answer_correctness=0.99"], 1, "", "ok"),
    Case("gate-pyproject-ok", ["gate", "runs/r1"], 0, "", "ok"),
    # a thresholds file the gate cannot read must never turn into a pass on the other thresholds
    Case("gate-pyproject-missing", ["gate", "runs/r1", "--pyproject", "ci.tmol", "--min", "context_precision=0.1"], 2,
         r"ci\.tmol: file not found"),
    Case("gate-pyproject-table-typo", ["gate", "runs/r1", "--pyproject", "user/p.toml", "--min", "recall@5=0.1"], 2,
         r"user/p\.toml: unknown key\(s\) in \[tool\.ragdoctor\]: gates",
         prep=raw("user/p.toml", b"[tool.ragdoctor.gates]\nmin = { groundedness = 0.9 }\n")),
    Case("gate-pyproject-metric-twice", ["gate", "runs/r1", "--pyproject", "user/p.toml"], 2,
         r"min names 'groundedness' twice",
         prep=raw("user/p.toml", b'[tool.ragdoctor.gate]\nmin = { groundedness = 0.5, "groundedness " = 0.9 }\n')),
    Case("gate-ppi-too-few-labels", [*GATE, "--min", "groundedness=0.1", "--ppi"], 1, "", "unmeasured",
         check=lambda ws, out, err: None if "0 labels, need 30" in out and "no value to check" in out
         else pytest.fail(out)),
    Case("gate-ppi-bad-labels-line", [*GATE, "--min", "groundedness=0.1", "--ppi", "--ppi-fallback"], 0,
         r"skipped bad record: runs/r1/labels\.jsonl:1: field 'metric': Input should be", "ok",
         prep=write("runs/r1/labels.jsonl", [{"sample_id": "q1", "metric": "faithfulness", "value": 1, "who": "a"},
                                             {"sample_id": "q1", "metric": "groundedness", "value": 1, "who": "a"}]),
         check=lambda ws, out, err: None if "1 label, need 30" in out else pytest.fail(out)),
    # a report path that is no regular file is refused before the verdict (it lost it, or blocked forever)
    Case("gate-junit-a-fifo", [*GATE, "--min", "groundedness=0.1", "--junit", "user/fifo"], 2,
         r"user/fifo: is not a regular file \(a device, FIFO or socket\)", prep=lambda ws: os.mkfifo(ws / "user/fifo")),
    Case("gate-junit-a-device", [*GATE, "--min", "groundedness=0.1", "--junit", "/dev/full"], 2,
         r"/dev/full: is not a regular file"),
    # a threshold on what the run never evaluated is a configuration mistake, not a quality regression
    Case("gate-min-never-evaluated", [*GATE, "--min", "answer_relevance:nli=0.3"], 2,
         r"threshold 'answer_relevance:nli': the run did not evaluate answer_relevance with the nli judge \(it "
         r"evaluated groundedness \(lexical\)"),
    Case("gate-min-empty-judge", [*GATE, "--min", "groundedness=0.5", "--min", "groundedness:=0.9"], 2,
         r"--min: 'groundedness:' names no judge after ':'"),
    Case("gate-pyproject-empty-judge", ["gate", "runs/r1", "--pyproject", "user/p.toml"], 2,
         r"user/p\.toml: \[tool\.ragdoctor\.gate\] min: 'groundedness:' names no judge",
         prep=raw("user/p.toml", b'[tool.ragdoctor.gate]\nmin = { groundedness = 0.5, "groundedness:" = 0.9 }\n')),
    # a flag with nothing to act on is refused
    Case("gate-ppi-without-a-minimum", [*GATE, "--max-unmeasured", "0.1", "--ppi"], 2,
         r"--ppi chooses what a minimum is compared with, and there is no minimum"),
    Case("gate-ci-lower-without-a-minimum", [*GATE, "--max-unmeasured", "0.1", "--ci-lower"], 2,
         r"--ci-lower chooses what a minimum is compared with"),
    Case("gate-ci-lower-beside-ppi", [*GATE, "--min", "groundedness=0.1", "--ppi", "--ci-lower"], 2,
         r"--ci-lower would do nothing with --ppi"),
    Case("gate-negative-zero-threshold", [*GATE, "--min", "groundedness=-0"], 0, "", "ok",
         check=lambda ws, out, err: None if "needs >= 0.000" in out and "-0.000" not in out else pytest.fail(out)),
    # --- label / summary ---------------------------------------------------------------------------------------
    Case("label-unknown-sample", ["label", "runs/r1", "--sample", "nope", "--metric", "groundedness", "--value", "1"],
         2, r"runs/r1: field 'sample': no sample 'nope' in this run"),
    Case("label-bad-value", ["label", "runs/r1", "--sample", "q1", "--metric", "groundedness", "--value", "maybe"], 2,
         r"--value: 'maybe' is not yes, no or a number"),
    Case("label-metric-typo", ["label", "runs/r1", "--sample", "q1", "--metric", "faithfulness", "--value", "1"], 2,
         r"--metric: invalid choice"),
    Case("label-not-a-run", ["label", "user", "--sample", "q1", "--metric", "groundedness", "--value", "1"], 2,
         r"user: not a run folder"),
    Case("label-ok", ["label", "runs/r1", "--sample", "q1", "--metric", "groundedness", "--value", "no", "--who", "a"],
         0, "", "ok", check=file_has("runs/r1/labels.jsonl", '"value":0.0,"who":"a"')),
    Case("summary-bad-labels-lines", ["summary", "runs/r1"], 0,
         r"skipped bad record: runs/r1/labels\.jsonl:2: field 'when': has no time zone", "ok",
         prep=raw("runs/r1/labels.jsonl", b'{"sample_id": "q1", "metric": "groundedness", "value": 1, "who": "a"}\n'
                  b'{"sample_id": "q2", "metric": "groundedness", "value": 1, "who": "a", "when": "2026-01-01T00:00"}\n'
                  b'not json\n'),
         check=lambda ws, out, err: None if "1 label, need 30" in out and "labels.jsonl:3: malformed JSON" in err
         else pytest.fail(out + err)),
    # --- diagnose ----------------------------------------------------------------------------------------------
    Case("diagnose-run-missing", ["diagnose", "nope"], 2, r"nope: run folder not found"),
    Case("diagnose-not-evaluated", ["diagnose", "user"], 2, r"user: no judged samples"),
    Case("diagnose-foreign-log", ["diagnose", "user"], 2, r"not a ragdoctor results log",
         prep=raw("user/results.jsonl", b'{"x": 1}\n')),
    Case("diagnose-probe-limit-zero", ["diagnose", "runs/r1", "--probes", "--probe-limit", "0"], 2,
         r"--probe-limit: must be an integer >= 1"),
    Case("diagnose-probe-judge-typo", ["diagnose", "runs/r1", "--probes", "--probe-judge", "lexcal"], 2,
         r"--probe-judge: invalid choice"),
    Case("diagnose-ok", ["diagnose", "runs/r1"], 0, "", "ok"),
    Case("diagnose-probes-retrieval-flag", ["diagnose", "runs/r1", "--probes", "--top-k", "1"], 2,
         r"unrecognized arguments: --top-k 1"),  # the probes choose their passages: a retrieval flag would do nothing
    Case("diagnose-probes-guardrails", ["diagnose", "runs/r1", "--probes", "--guardrails"], 2,
         r"--guardrails: the probes regenerate answers from passages they choose, past the rails"),
    Case("diagnose-damaged-config", ["diagnose", "runs/r1"], 2,
         r"runs/r1/config\.json: malformed JSON .*cannot tell which judgements are current",
         prep=raw("runs/r1/config.json", b'{"truncated": ')),
    Case("diagnose-nli-model-without-probes", ["diagnose", "runs/r1", "--nli-model", "user"], 2,
         r"--nli-model: only --probes reads it"),
    Case("diagnose-pipeline-flag-without-probes", ["diagnose", "runs/r1", *PIPE], 2,
         r"--corpus, --index-dir, --embedder, --base-url: only --probes reads them"),
    Case("diagnose-probe-judge-without-probes", ["diagnose", "runs/r1", "--probe-judge", "lexical"], 2,
         r"--probe-judge: only --probes reads it"),
    Case("diagnose-probe-limit-without-probes", ["diagnose", "runs/r1", "--probe-limit", "3"], 2,
         r"--probe-limit: only --probes reads it"),
    Case("diagnose-nli-model-other-probe-judge", ["diagnose", "runs/r1", "--probes", "--probe-judge", "lexical",
                                                  "--nli-model", "user"], 2, r"--probe-judge is lexical"),
    Case("diagnose-probe-nli-model-missing", ["diagnose", "runs/r1", "--probes", "--nli-model", "nowhere"], 2,
         r"--nli-model nowhere: folder not found"),
    # --- meta-eval ---------------------------------------------------------------------------------------------
    Case("meta-eval-path-missing", [*ME, "--path", "nope.jsonl"], 2, r"nope\.jsonl: file not found"),
    Case("meta-eval-path-folder", [*ME, "--path", "user"], 2, r"user: is a folder, not a file"),
    Case("meta-eval-one-bad-line", [*ME, "--path", ROWS], 0, r"inputs/x\.jsonl:9: field 'label': Input should be less "
         r"than or equal to 1", "ok", write(ROWS, [*LABELS, {**LABELS[0], "label": 7}]),
         file_has("me/input_errors.txt", "inputs/x.jsonl:9:")),
    Case("meta-eval-only-bad", [*ME, "--path", ROWS], 2, r"inputs/x\.jsonl: no valid records",
         prep=write(ROWS, [{"evidence": "e"}])),
    Case("meta-eval-limit-zero", [*ME, "--path", "inputs/labels.jsonl", "--limit", "0"], 2, r"--limit/--sample: must be"),
    Case("meta-eval-seed-negative", [*ME, "--path", "inputs/labels.jsonl", "--seed", "-1"], 2, r"--seed: must be"),
    Case("meta-eval-resamples-zero", [*ME[:-2], "--path", "inputs/labels.jsonl", "--resamples", "0"], 2,
         r"--resamples: must be"),
    Case("meta-eval-out-user-folder", [*ME[:-2], "--out", "user", "--path", "inputs/labels.jsonl"], 2,
         r"user: is not empty and is not a ragdoctor meta-eval folder"),
    Case("meta-eval-nli-model-not-a-model", [*ME[:3], "--judge", "nli", "--nli-model", "user", "--path",
                                              "inputs/labels.jsonl"], 2, r"--nli-model user: cannot be loaded"),
    Case("meta-eval-judge-model-no-llm-judge", [*ME, "--path", "inputs/labels.jsonl", "--judge-model", "x"], 2,
         r"--judge-model: only the llm and ragas judges read it"),
    Case("meta-eval-judge-typo", [*ME[:3], "--judge", "lexcal", "--path", "inputs/labels.jsonl"], 2,
         r"--judge: invalid choice"),
    # --- found by the audit of classes of input no case listed (each one failed on the code before it) -------------
    Case("eval-integer-overflow", ["eval", ROWS, *EV], 0, r"inputs/x\.jsonl:2: malformed JSON: number 1000.* is out of "
         r"range", "ok", raw(ROWS, (json.dumps(ROW) + '\n{"id": "b", "question": "q?", "contexts": [{"text": "t", '
                                   '"score": 1' + "0" * 400 + '}]}\n').encode())),
    Case("eval-out-and-name", ["eval", "inputs/rows.jsonl", *EV, "--name", "other"], 2,
         r"--out and --name both name the run folder: give one"),
    Case("eval-nli-threshold-without-nli", ["eval", "inputs/rows.jsonl", *EV, "--nli-threshold", "0.7"], 2,
         r"--nli-threshold: only the nli judge reads it, and the judges run are lexical, labels"),
    Case("eval-judge-url-without-llm", ["eval", "inputs/rows.jsonl", *EV, "--judge-base-url", "http://127.0.0.1:9"], 2,
         r"--judge-base-url: only the llm and ragas judges read it"),
    Case("eval-judge-max-chars-without-llm", ["eval", "inputs/rows.jsonl", *EV, "--judge-max-chars", "8000"], 2,
         r"--judge-max-chars: only the llm judge reads it, and the judges run are lexical, labels"),
    Case("eval-judge-max-chars-with-ragas-only", ["eval", "inputs/rows.jsonl", "--judges", "ragas", "--out", "ev",
                                                  "--judge-max-chars", "8000"], 2,
         r"--judge-max-chars: only the llm judge reads it, and the judges run are ragas"),
    Case("eval-judge-max-chars-too-small", ["eval", "inputs/rows.jsonl", "--judges", "llm", "--out", "ev",
                                            "--judge-max-chars", "199"], 2,
         r"--judge-max-chars: must be an integer >= 200 and <= 10000000, got 199"),
    Case("index-corpus-blank-id", ["index", "--corpus", ROWS, *PIPE[:4], "--rebuild"], 0,
         r"inputs/x\.jsonl:2: field 'id': is blank", "ok",
         write(ROWS, [{"id": "a", "text": "alpha beta gamma"}, {"id": "  ", "text": "delta epsilon"}])),
    Case("index-corpus-null-beir-id", ["index", "--corpus", ROWS, *PIPE[:4], "--rebuild"], 0,
         r"inputs/x\.jsonl:2: field 'id': Input should be a valid string", "ok",
         write(ROWS, [{"_id": "a", "text": "alpha beta gamma"}, {"_id": None, "text": "delta epsilon"}])),
    Case("index-folder-bom", ["index", "--corpus", "inputs/md", "--embedder", "fake", "--index-dir", "idx2"], 0, "",
         "ok", raw("inputs/md/a.md", "\ufeff# Title\nThe KV cache stores keys.\n".encode()),
         no_bom_in("idx2/chunks.jsonl")),
    Case("index-lab-one-vector", ["index-lab", "--out", "lab.json", "--embedder", "fake", "--index-dir", "idx2",
                                  "--corpus", ROWS], 2, r"index holds 1 chunk vector; comparing the index kinds needs "
         r"at least 2", prep=write(ROWS, [{"id": "a", "text": "alpha beta gamma"}])),
    Case("gate-summary-nan", [*GATE, "--min", "groundedness=0.1"], 2, r"runs/r1/summary\.json: not a ragdoctor summary "
         r"\(malformed JSON: NaN is not a JSON number\)", prep=edit_summary('"mean": ', '"mean": NaN, "x": ')),
    Case("gate-summary-mean-out-of-range", [*GATE, "--min", "groundedness=0.1"], 2,
         r"metrics\[0\] 'mean' is not a number within \[0, 1\]", prep=edit_summary('"mean": ', '"mean": 7, "x": ')),
    Case("gate-summary-count-a-bool", [*GATE, "--min", "groundedness=0.1"], 2, r"metrics\[0\] 'n' is not a count",
         prep=edit_summary('"n": ', '"n": true, "x": ')),
    Case("gate-summary-no-ci-lower", [*GATE, "--min", "groundedness=0.1", "--ci-lower"], 2,
         r"metrics\[0\] has measured values but no 'ci_low'", prep=edit_summary('"ci_low": ', '"ci_low": null, "x": ')),
    Case("gate-summary-share-out-of-range", [*GATE, "--max-unmeasured", "0.5"], 2,
         r"unmeasured_share is not a number within \[0, 1\]", prep=edit_summary('"unmeasured_share": ',
                                                                                 '"unmeasured_share": -1, "x": ')),
    Case("summary-row-without-counts", ["summary", "runs/r1"], 0, "", "ok",
         prep=edit_summary('"n_unmeasured": ', '"x": ')),
    Case("gate-ppi-fallback-without-ppi", [*GATE, "--min", "groundedness=0.1", "--ppi-fallback"], 2,
         r"--ppi-fallback .*needs --ppi"),
    Case("label-blank-who", ["label", "runs/r1", "--sample", "q1", "--metric", "groundedness", "--value", "1",
                             "--who", " "], 2, r"^ragdoctor: error: label: --who: a blank value"),
    Case("meta-eval-union-field", [*ME, "--path", ROWS], 0, r"inputs/x\.jsonl:9: field 'evidence': Input should be a "
         r"valid string, or a valid list", "ok", write(ROWS, [*LABELS, {**LABELS[0], "evidence": 5}])),
    Case("meta-eval-judge-url-without-llm", [*ME, "--path", "inputs/labels.jsonl", "--judge-base-url", "http://x"], 2,
         r"--judge-base-url: only the llm and ragas judges read it"),
    Case("meta-eval-judge-max-chars-without-llm", [*ME, "--path", "inputs/labels.jsonl", "--judge-max-chars", "8000"],
         2, r"--judge-max-chars: only the llm judge reads it"),
    # --- the command line itself -------------------------------------------------------------------------------
    Case("unknown-command", ["evaluate", "x"], 2, r"^ragdoctor: error: argument command: invalid choice"),
    Case("unknown-option", ["eval", "inputs/rows.jsonl", "--judgez", "lexical"], 2, r"unrecognized arguments"),
    # a single-valued option given twice would keep only the last value, in silence
    Case("label-sample-twice", ["label", "runs/r1", "--sample", "q1", "--sample", "q2", "--metric", "groundedness",
                                "--value", "1"], 2, r"label: --sample is given twice"),
    Case("ask-rerank-and-no-rerank", ["ask", "What is LoRA?", *PIPE, "--rerank", "--no-rerank"], 2,
         r"--no-rerank and --rerank are both given: give one"),
    Case("gate-pyproject-twice", [*GATE, "--pyproject", "pyproject.toml", "--min", "groundedness=0.1"], 2,
         r"gate: --pyproject is given twice"),
    Case("eval-out-blank", ["eval", "inputs/rows.jsonl", "--judges", "lexical", "--out", ""], 2,
         r"eval: --out: a blank value"),
    Case("gate-junit-blank", [*GATE, "--min", "groundedness=0.1", "--junit", " "], 2, r"--junit: a blank value"),
    Case("eval-ray-option-at-its-default-without-ray", ["eval", "inputs/rows.jsonl", *EV, "--num-workers", "1"], 2,
         r"--num-workers and --gpus-per-worker need --engine ray"),
    # a host this machine cannot listen on: one line naming the option, before the server starts
    Case("dashboard-host-unresolvable", ["dashboard", "runs", "--host", "no-such-host.invalid"], 2,
         r"^ragdoctor: error: --host 'no-such-host\.invalid': not an address or a name this machine resolves"),
    Case("dashboard-host-not-ours", ["dashboard", "runs", "--host", "192.0.2.1"], 2,
         r"^ragdoctor: error: --host 192\.0\.2\.1: cannot listen there"),
    # meta-eval's report folder and what it can measure (audit, session 26)
    Case("meta-eval-out-holds-the-input", [*ME[:-1], "me2", "--path", "me2/scores.jsonl"], 2,
         r"--out me2: its scores\.jsonl is the input file \(--path\)",
         prep=lambda ws: jsonl(ws / "me2/scores.jsonl", LABELS) and jsonl(ws / "me2/results.json", [])
         and (ws / "me2/results.json").write_text('{"dataset": "jsonl", "results": []}') and None),
    Case("meta-eval-out-holds-a-users-scores", [*ME[:-1], "mine", "--path", "inputs/labels.jsonl"], 2,
         r"mine: is not empty and is not a ragdoctor meta-eval folder", prep=write("mine/scores.jsonl", LABELS)),
    Case("meta-eval-out-holds-a-users-results-json", [*ME[:-1], "mine", "--path", "inputs/labels.jsonl"], 2,
         r"mine/results\.json: is not a meta-eval report", prep=raw("mine/results.json", b'{"thesis": 1}')),
    Case("meta-eval-one-label-class", [*ME, "--path", "inputs/one.jsonl"], 2,
         r"nothing could be measured on inputs/one\.jsonl \(every item has the same label",
         prep=write("inputs/one.jsonl", [{**r, "label": 1} for r in LABELS])),
    Case("meta-eval-metric-not-in-the-set", [*ME, "--path", "inputs/labels.jsonl", "--metric", "answer_relevance"], 2,
         r"--metric answer_relevance: jsonl has no such task \(it has groundedness\)"),
    Case("meta-eval-too-few-resamples", [*ME, "--path", "inputs/labels.jsonl", "--resamples", "3"], 2,
         r"--resamples: must be an integer >= 50"),
    Case("meta-eval-group-true", [*ME, "--path", "inputs/g.jsonl"], 0, r"inputs/g\.jsonl:1: field 'group'", "ok",
         write("inputs/g.jsonl", [{**LABELS[0], "group": True}, *LABELS[1:]])),
    Case("judge-train-recipe-unknown-source", ["judge", "train", "--from-config", "inputs/r.json", "--out", "jt"], 2,
         r"inputs/r\.json: field 'data\.cap_per_label': 'nosuch' is not a training source",
         prep=raw("inputs/r.json", b'{"data": {"cap_per_label": {"nosuch": 5}}}')),
    Case("judge-train-recipe-batch-size-0", ["judge", "train", "--from-config", "inputs/r.json", "--out", "jt"], 2,
         r"inputs/r\.json: field 'batch_size': Input should be greater than or equal to 1",
         prep=raw("inputs/r.json", b'{"batch_size": 0}')),
    Case("judge-train-max-length-past-the-model", ["judge", "train", "--max-length", "100000", "--out", "jt",
                                                   "--data-dir", "inputs"], 2,
         r"max_length 100000: the base model minilm reads at most 512 tokens"),
    Case("unknown-option-nested-command", ["judge", "train", "--bogus"], 2,
         r"error: judge train: unrecognized arguments: --bogus \(see `ragdoctor judge train --help`\)$"),
    # blank values, whatever the option's type= makes of them, and blank positional arguments (an unset variable)
    Case("import-out-blank", ["import", SPANS, "--out", ""], 2, r"^ragdoctor: error: import: --out: a blank value",
         prep=write(SPANS, [otlp(ROOT, RETRIEVER)])),
    Case("import-out-spaces", ["import", SPANS, "--out", "   "], 2, r"^ragdoctor: error: import: --out: a blank value",
         prep=write(SPANS, [otlp(ROOT, RETRIEVER)])),
    Case("gate-run-blank", ["gate", "", "--pyproject", "none.toml", "--min", "groundedness=0.1"], 2,
         r"^ragdoctor: error: gate: the run is blank"),
    Case("summary-run-blank", ["summary", " "], 2, r"^ragdoctor: error: summary: the run is blank"),
    Case("eval-traces-blank", ["eval", "", "--judges", "lexical"], 2, r"^ragdoctor: error: eval: the traces is blank"),
    Case("index-corpus-blank-in-env-gate", ["index", *PIPE[:4]], 2,
         r"^ragdoctor: error: environment variable RAGDOCTOR_CORPUS: field 'corpus': is blank",
         env={"RAGDOCTOR_CORPUS": ""}),
    Case("index-corpus-blank-in-config-gate", ["index", *PIPE[:4], "--config", "inputs/c.toml"], 2,
         r"inputs/c\.toml: field 'corpus': is blank", prep=raw("inputs/c.toml", b'[pipeline]\ncorpus = ""\n')),
    # numbers out of any sane range: refused up front, not an overflow after minutes of work (--data-dir nope: were
    # the range check missing, these would stop at the missing pool, never train)
    Case("judge-train-epochs-overflow", ["judge", "train", "--epochs", "1e308", "--out", "jt", "--data-dir", "nope"],
         2, r"judge train: argument --epochs: must be a number > 0 and <= 100, got 1e308"),
    Case("judge-train-lr-5", ["judge", "train", "--lr", "5", "--out", "jt", "--data-dir", "nope"], 2,
         r"argument --lr: must be a number > 0 and < 1, got 5"),
    Case("judge-train-batch-size-huge", ["judge", "train", "--batch-size", "99999999999", "--out", "jt", "--data-dir",
                                         "nope"], 2, r"argument --batch-size: must be an integer >= 1 and <= 65536"),
    Case("judge-train-recipe-epochs-overflow", ["judge", "train", "--from-config", "inputs/r.json", "--out", "jt",
                                                "--data-dir", "nope"], 2,
         r"inputs/r\.json: field 'epochs': Input should be less than or equal to 100",
         prep=raw("inputs/r.json", b'{"epochs": 1e308}')),
    Case("ask-request-timeout-overflow", ["ask", "What is LoRA?", *PIPE, "--request-timeout", "1e308"], 2,
         r"ask: argument --request-timeout: must be a number > 0 and <= 86400, got 1e308"),
    Case("ask-generation-timeout-in-env", ["ask", "What is LoRA?", *PIPE], 2,
         r"environment variable RAGDOCTOR_GENERATION__TIMEOUT: field 'generation\.timeout': Input should be less "
         r"than or equal to 86400", env={"RAGDOCTOR_GENERATION__TIMEOUT": "1e308"}),
    # --- paths the file system makes hard: a symbolic link loop, bytes that are not UTF-8, a folder by its spelling
    Case("index-dir-symlink-loop", ["index", "--embedder", "fake", "--corpus", "corpus.jsonl", "--index-dir", "loop1"],
         2, r"^ragdoctor: error: loop1: is a symbolic link loop", prep=symlink_loop),
    Case("index-dir-under-a-symlink-loop", ["index", "--embedder", "fake", "--corpus", "corpus.jsonl", "--index-dir",
                                            "loop1/idx"], 2, r"loop1: is a symbolic link loop \(on the way to "
         r"loop1/idx\)", prep=symlink_loop),
    Case("ask-index-dir-symlink-loop", ["ask", "What is LoRA?", "--embedder", "fake", "--corpus", "corpus.jsonl",
                                        "--index-dir", "loop1", "--base-url", "{url}"], 2,
         r"loop1: is a symbolic link loop", prep=symlink_loop),
    Case("index-lab-index-dir-symlink-loop", ["index-lab", "--out", "lab.json", "--embedder", "fake", "--corpus",
                                              "corpus.jsonl", "--index-dir", "loop1"], 2,
         r"loop1: is a symbolic link loop", prep=symlink_loop, check=not_written("lab.json")),
    Case("index-lab-out-symlink-loop", ["index-lab", "--out", "loop1", *PIPE[:6]], 2,
         r"loop1: is a symbolic link loop", prep=symlink_loop),
    Case("retrieval-lab-out-symlink-loop", ["retrieval-lab", "--out", "loop1", *PIPE[:6]], 2,
         r"loop1: is a symbolic link loop", prep=symlink_loop),
    Case("meta-eval-out-symlink-loop", [*ME[:-1], "loop1", "--path", "inputs/labels.jsonl"], 2,
         r"loop1: is a symbolic link loop", prep=symlink_loop),
    Case("eval-out-symlink-loop", ["eval", "inputs/rows.jsonl", "--judges", "lexical", "--out", "loop1"], 2,
         r"loop1: is a symbolic link loop", prep=symlink_loop),
    Case("run-out-symlink-loop", ["run", *PIPE, "--questions", "questions.jsonl", "--out", "loop1"], 2,
         r"loop1: is a symbolic link loop", prep=symlink_loop),
    Case("run-out-trailing-slash", ["run", *PIPE, "--questions", "questions.jsonl", "--out", "newd/"], 2,
         r"run: --out newd/ names a folder; --out is the traces file \(e\.g\. newd/traces\.jsonl\)",
         check=not_written("newd", "run_summary.json", "input_errors.txt")),
    Case("eval-records-name-not-utf8", ["eval", "inputs/r\udcff.jsonl", *EV], 0, "", "ok",
         write("inputs/r\udcff.jsonl", [ROW]), eval_config_names("inputs/r\udcff.jsonl")),
    Case("eval-out-name-not-utf8", ["eval", "inputs/rows.jsonl", "--judges", "lexical", "--out", "o\udcff"], 2,
         r"o\\udcff: the folder's path is not UTF-8 text, and results\.parquet cannot be written",
         check=not_written("o\udcff")),
    Case("index-dir-name-not-utf8", ["index", "--embedder", "fake", "--corpus", "corpus.jsonl", "--index-dir",
                                     "idx\udcff"], 0, "", "ok",
         check=lambda ws, out, err: None if (ws / "idx\udcff" / "dense.faiss").is_file() and main(
             ["ask", "What is LoRA?", "--embedder", "fake", "--corpus", "corpus.jsonl", "--index-dir", "idx\udcff",
              "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0", "--json"]) == 2 else pytest.fail(err)),
    Case("index-on-disk-name-not-utf8", ["index", "--embedder", "fake", "--corpus", "corpus.jsonl", "--kind", "ivf",
                                         "--on-disk", "--index-dir", "idx\udcff"], 2,
         r"the index folder's path is not UTF-8 text, and faiss opens an on-disk index", check=not_written("idx\udcff")),
    Case("diagnose-a-records-file", ["diagnose", "inputs/rows.jsonl"], 2,
         r"inputs/rows\.jsonl: is a file, not a run folder: evaluate it first"),
    Case("diagnose-a-run-log", ["diagnose", "runs/r1/results.jsonl"], 2,
         r"runs/r1/results\.jsonl: is a file, not a run folder: give the folder it is in \(runs/r1\)"),
]
