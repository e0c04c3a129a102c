"""The OpenInference reader (corpora/openinference.py) on span trees and export shapes it once read wrong: a query split
into sub-questions that each rerank, Phoenix's UNKNOWN kind, a first row over 64 KB, an all-zero parent id, a JSON
input of an unknown key, parallel retrievers, a Phoenix REST page, a lone surrogate. Hand-made spans, no model."""
from __future__ import annotations

import base64
import json

from corpora import openinference as oi
from ragdoctor.cli import main

MS = 1_000_000
TRACE = "ab" * 16


def _export(spans: list[dict]) -> dict:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def _span(sid: str, parent: str | None, kind: str, start: int, end: int, **attrs) -> dict:
    """An OTLP span; ``docs=[ids]`` (RETRIEVER) or ``out=[ids]`` (RERANKER) add documents "ID text." by id."""
    kv = [{"key": "openinference.span.kind", "value": {"stringValue": kind}}]
    for key, prefix in (("docs", "retrieval.documents"), ("out", "reranker.output_documents")):
        for i, doc in enumerate(attrs.pop(key, [])):
            kv += [{"key": f"{prefix}.{i}.document.id", "value": {"stringValue": doc}},
                   {"key": f"{prefix}.{i}.document.content", "value": {"stringValue": f"{doc} text."}}]
    kv += [{"key": k.replace("__", "."), "value": {"stringValue": v}} for k, v in attrs.items()]
    out = {"traceId": TRACE, "spanId": sid * 8, "name": kind.lower(), "startTimeUnixNano": str(start),
           "endTimeUnixNano": str(end), "attributes": kv}
    return {**out, "parentSpanId": parent * 8} if parent else out


def _load(tmp_path, spans, name="spans.json"):
    path = tmp_path / name
    path.write_text(json.dumps(_export(spans)), encoding="utf-8")
    return oi.load(path)


def _query(sid: str = "a1", start: int = 0, end: int = 100 * MS, **attrs) -> dict:
    return _span(sid, None, "CHAIN", start, end, **{"input__value": "Compare A and B?", "output__value": "A; B.",
                                                    **attrs})


def test_each_sub_question_keeps_its_reranked_documents(tmp_path):
    """A root CHAIN with a CHAIN per sub-question, each retrieving and reranking, and one sub-question that does not
    rerank: every reranker's output is a context, and so is the retrieval of the branch without one."""
    spans = [_query(),
             _span("b1", "a1", "CHAIN", 1 * MS, 40 * MS, input__value="What is A?"),
             _span("c1", "b1", "RETRIEVER", 2 * MS, 10 * MS, docs=["a1", "a2", "a3"]),
             _span("d1", "b1", "RERANKER", 11 * MS, 20 * MS, out=["a2"]),
             _span("b2", "a1", "CHAIN", 41 * MS, 80 * MS, input__value="What is B?"),
             _span("c2", "b2", "RETRIEVER", 42 * MS, 50 * MS, docs=["b1", "b2", "b3"]),
             _span("d2", "b2", "RERANKER", 51 * MS, 60 * MS, out=["b3", "a2"]),  # a2 again: once, its first rank
             _span("b3", "a1", "CHAIN", 81 * MS, 90 * MS, input__value="And C?"),
             _span("c3", "b3", "RETRIEVER", 82 * MS, 85 * MS, docs=["c1"])]
    (trace,), errors = _load(tmp_path, spans)
    assert errors == []
    assert [(c.chunk_id, c.rank) for c in trace.contexts] == [("a2", 1), ("b3", 2), ("c1", 3)]
    assert [(c.chunk_id, c.rank) for c in trace.candidates] == [("a1", 4), ("a3", 5), ("b1", 6), ("b2", 7)]
    assert trace.latency_ms["rerank"] == 18.0 and trace.latency_ms["retrieve"] == 19.0

    # one query, its reranker beside the retriever below a wrapper span: the reranker's branch is the whole query
    plain = [_query(), _span("e1", "a1", "CHAIN", 1 * MS, 9 * MS),
             _span("c1", "e1", "RETRIEVER", 2 * MS, 5 * MS, docs=["x", "y"]),
             _span("d1", "a1", "RERANKER", 10 * MS, 12 * MS, out=["y"])]
    (trace,), _ = _load(tmp_path, plain)
    assert [c.chunk_id for c in trace.contexts] == ["y"] and [(c.chunk_id, c.rank) for c in trace.candidates] == [
        ("x", 2)]


def test_a_phoenix_root_of_kind_unknown_is_no_kind(tmp_path):
    """Phoenix writes UNKNOWN for a span without an OpenInference kind (an HTTP server span around the query)."""
    def row(sid, parent, kind, name, **attrs):
        return {"name": name, "span_kind": kind, "parent_id": parent and parent * 8, "start_time": 1700000000000,
                "end_time": 1700000000020, "status_code": "OK", "context.span_id": sid * 8, "context.trace_id": TRACE,
                **{f"attributes.{k}": v for k, v in attrs.items()}}
    rows = [row("f0", None, "UNKNOWN", "POST /ask"), row("e0", "f0", "UNKNOWN", "middleware"),
            row("a1", "e0", "CHAIN", "query", **{"input.value": "What is KV?", "output.value": "Keys."}),
            row("b2", "a1", "RETRIEVER", "retrieve", **{"retrieval.documents": [
                {"document.id": "kv#0", "document.content": "KV text."}]})]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (trace,), errors = oi.load(path)
    assert errors == [] and trace.sample_id == "a1" * 8 and [c.chunk_id for c in trace.contexts] == ["kv#0"]


def test_detect_reads_past_64_kb(tmp_path):
    """A Phoenix JSONL row over 64 KB (long documents), and a pretty-printed OTLP file whose first key is not
    resourceSpans, are span exports for eval as they are for import."""
    long_doc = "lorem ipsum " * 10_000
    rows = [{"name": "retrieve", "span_kind": "RETRIEVER", "parent_id": "a1" * 8, "start_time": 1700000000001,
             "end_time": 1700000000005, "status_code": "OK", "context.span_id": "b2" * 8, "context.trace_id": TRACE,
             "attributes.retrieval.documents": [{"document.id": "d1", "document.content": long_doc}]},
            {"name": "query", "span_kind": "CHAIN", "parent_id": None, "start_time": 1700000000000,
             "end_time": 1700000000010, "status_code": "OK", "context.span_id": "a1" * 8, "context.trace_id": TRACE,
             "attributes.input.value": "What is lorem?", "attributes.output.value": "Ipsum."}]
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(big.read_text().split("\n", 1)[0]) > 65536
    assert oi.detect(big) == "phoenix"
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps({"partialSuccess": {"note": "x" * 70_000}, **_export([_query()])}, indent=2))
    assert oi.detect(pretty) == "otlp"
    array = tmp_path / "rows.json"  # a pretty-printed array of Phoenix rows, its first row over 64 KB
    array.write_text(json.dumps(rows, indent=2))
    assert oi.detect(array) == "phoenix"
    other = tmp_path / "other.json"  # a pretty-printed document that is not spans
    other.write_text(json.dumps([{"question": "q", "contexts": [long_doc], "span_kind": "x"}], indent=2))
    assert oi.detect(other) is None
    assert main(["eval", str(big), "--judges", "lexical", "--out", str(tmp_path / "ev")]) == 0


def test_an_all_zero_parent_span_id_is_no_parent(tmp_path):
    for zero in ("0" * 16, base64.b64encode(bytes(8)).decode()):
        spans = [{**_query(), "parentSpanId": zero}, _span("c1", "a1", "RETRIEVER", 1 * MS, 2 * MS, docs=["x"])]
        (trace,), errors = _load(tmp_path, spans)
        assert errors == [] and trace.sample_id == "a1" * 8 and [c.chunk_id for c in trace.contexts] == ["x"]


def test_a_json_value_of_an_unknown_key_is_read_or_warned_about(tmp_path, caplog):
    """An object of one string ({"q": ...}) is that string; anything else is kept as its JSON text, with a warning
    naming the span, never used silently."""
    spans = [_query(input__value=json.dumps({"q": "What is X?"}),
                    output__value=json.dumps({"generations": [["X is Y"]]}))]
    (trace,), errors = _load(tmp_path, spans)
    assert trace.question == "What is X?" and trace.answer == json.dumps({"generations": [["X is Y"]]})
    warned = [r.getMessage() for r in caplog.records if "output.value is a JSON object" in r.getMessage()]
    assert len(warned) == 1 and "a1" * 8 in warned[0] and "generations" in warned[0] and "\n" not in warned[0]


def test_parallel_retrievers_count_their_time_once(tmp_path):
    spans = [_query(), _span("c1", "a1", "RETRIEVER", 2 * MS, 3 * MS, docs=["x"]),
             _span("c2", "a1", "RETRIEVER", 2 * MS + MS // 2, 3 * MS + MS // 2, docs=["y"]),  # overlaps c1
             _span("c3", "a1", "RETRIEVER", 5 * MS, 6 * MS, docs=["z"])]  # after both
    (trace,), _ = _load(tmp_path, spans)
    assert trace.latency_ms["retrieve"] == 2.5


def test_a_phoenix_rest_page_is_read(tmp_path):
    """GET /v1/projects/{id}/spans answers {"data": [rows], "next_cursor": ...}; a bad row is named by its place."""
    def row(sid, parent, kind, **attrs):
        return {"id": sid, "name": kind.lower(), "context": {"trace_id": TRACE, "span_id": sid * 8},
                "span_kind": kind, "parent_id": parent and parent * 8, "start_time": "2025-01-01T00:00:00+00:00",
                "end_time": "2025-01-01T00:00:01+00:00", "status_code": "OK", "attributes": attrs, "events": []}
    page = {"data": [row("a1", None, "CHAIN", **{"input.value": "What is lorem?", "output.value": "Ipsum."}),
                     row("b2", "a1", "RETRIEVER", **{"retrieval.documents": [
                         {"document.id": "d1", "document.content": "Lorem."}]}),
                     {**row("c3", "a1", "LLM"), "start_time": "soon"}], "next_cursor": None}
    path = tmp_path / "page.json"
    path.write_text(json.dumps(page))
    assert oi.detect(path) == "phoenix"
    (trace,), errors = oi.load(path)
    assert trace.question == "What is lorem?" and [c.chunk_id for c in trace.contexts] == ["d1"]
    assert [e.field for e in errors] == ["data[2]"] and "c3c3c3c3c3c3c3c3" in errors[0].message
    path.write_text(json.dumps(page, indent=2))  # pretty-printed, as curl | jq writes it
    assert oi.detect(path) == "phoenix"


def test_a_lone_surrogate_is_one_line_naming_the_span_and_field(tmp_path, capsys):
    """JSON's "\\ud83d" escape alone is no Unicode text: the question's trace is skipped, a document's document, each
    with one line that names the span and the attribute; the rest is imported."""
    spans = [_query("a1", 0, 10 * MS, input__value="Qu'est-ce que \ud83d?"),
             _query("a2", 20 * MS, 30 * MS), _span("c2", "a2", "RETRIEVER", 21 * MS, 22 * MS, docs=["x", "y"],
                                                   retrieval__documents__1__document__content="bad \udc00 text"),
             _query("a3", 40 * MS, 50 * MS), _span("e3", "a3", "LLM", 41 * MS, 42 * MS, **{
                 "llm__input_messages__0__message__role": "user",
                 "llm__input_messages__0__message__content": "prompt \ud800"})]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_export(spans)))  # ensure_ascii: the lone surrogates as \\u escapes
    (trace,), errors = oi.load(path)
    assert trace.sample_id == "a2" * 8 and [c.chunk_id for c in trace.contexts] == ["x"]
    msgs = [e.one_line() for e in errors]
    assert len(msgs) == 3 and all("\n" not in m and "validation error" not in m for m in msgs)
    for want in (f"span {'a1' * 8}: input.value holds a lone surrogate ('\\ud83d'): not valid Unicode text; "
                 "trace skipped", f"span {'c2' * 8}: retrieval.documents.1.document.content holds a lone surrogate",
                 f"span {'a3' * 8}: llm.input_messages.0.message.content of span {'e3' * 8} holds a lone surrogate"):
        assert sum(want in m for m in msgs) == 1, (want, msgs)
    assert main(["import", str(path), "--out", str(tmp_path / "run")]) == 0  # written as UTF-8, no traceback
    assert "lone surrogate" in capsys.readouterr().err
