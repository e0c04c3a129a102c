"""The OpenInference reader (corpora/openinference.py) on spans made by the real openinference-instrumentation-llama-index
instrumentor around a real llama-index query engine (bundled corpus, bundled MiniLM, a fake LLM), exported with the
OpenTelemetry SDK's in-memory exporter and encoded as OTLP JSON by the OTLP exporter's own encoder (no collector, no
network); the same spans as a Phoenix spans export; and malformed or partial spans."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpora import openinference as oi
from corpora.errors import InputError
from corpora.run_folder import RunFolder
from ragdoctor.cli import main
from tests.rag.llama_engine import FirstSentenceLLM, bundled_index, keep_top_reranker

pytestmark = pytest.mark.slow  # MiniLM embeds part of the bundled corpus
QUESTIONS = ["What does PagedAttention page?", "What does FlashAttention avoid?", "How does LoRA adapt a model?"]


@pytest.fixture(scope="module")
def recorded():
    """(the finished OTel spans, the llama-index responses) of three queries, one of them with a reranker."""
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    index = bundled_index(limit=40)
    engine = index.as_query_engine(llm=FirstSentenceLLM(), similarity_top_k=3)
    cut = index.as_query_engine(llm=FirstSentenceLLM(), similarity_top_k=3, node_postprocessors=[keep_top_reranker(2)])
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        responses = [engine.query(QUESTIONS[0]), engine.query(QUESTIONS[1]), cut.query(QUESTIONS[2])]
    finally:
        instrumentor.uninstrument()
    return exporter.get_finished_spans(), responses


def otlp_json(spans) -> str:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return MessageToJson(encode_spans(spans))


def hex_ids(obj):
    """The OTLP/JSON spec's hex ids (what the collector writes) in place of protobuf's base64."""
    import base64

    if isinstance(obj, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else hex_ids(v))
                for k, v in obj.items()}
    return [hex_ids(x) for x in obj] if isinstance(obj, list) else obj


def check_traces(traces, responses) -> None:
    assert [t.question for t in traces] == QUESTIONS
    for t, r in zip(traces, responses):
        assert t.answer == r.response and t.outcome == "answered"
        assert t.metadata["source"] == "openinference" and t.metadata["span_name"].endswith(".query")
        assert {"retrieve", "generate", "total"} <= set(t.latency_ms) and t.latency_ms["total"] >= \
            t.latency_ms["retrieve"] > 0
        assert t.prompt and t.question in t.prompt[-1]["content"] and t.generator == "first-sentence-fake"
        assert "minilm" in t.embedder.lower()
        retrieved = [c.chunk_id for c in t.ranked()]
        assert len(retrieved) == 3 and all(c.text and c.doc_id and c.score is not None for c in t.chunks)
    # what reached the prompt, in the engine's order (the reranker's output for the third, its cut node a candidate)
    for t, r in zip(traces, responses):
        assert [c.chunk_id for c in t.chunks] == [n.node.node_id for n in r.source_nodes]
        assert [c.doc_id for c in t.chunks] == [n.node.metadata["doc_id"] for n in r.source_nodes]
    assert [len(t.candidates) for t in traces] == [0, 0, 1] and traces[2].candidates[0].rank == 3
    assert "rerank" in traces[2].latency_ms


def test_otlp_json_from_the_real_instrumentor(recorded, tmp_path):
    spans, responses = recorded
    path = tmp_path / "spans.json"
    path.write_text(otlp_json(spans))
    assert oi.detect(path) == "otlp"
    traces, errors = oi.load(path)
    assert errors == []
    check_traces(traces, responses)
    # the same export with hex ids, one export per line (the collector's file exporter)
    lines = tmp_path / "collector.jsonl"
    export = hex_ids(json.loads(path.read_text()))
    lines.write_text("\n".join(json.dumps({"resourceSpans": [rs]}) for rs in export["resourceSpans"]) + "\n")
    again, errors = oi.load(lines)
    assert errors == [] and [t.model_dump(exclude={"created_at"}) for t in again] == \
        [t.model_dump(exclude={"created_at"}) for t in traces]


def phoenix_rows(spans) -> list[dict]:
    """The spans as Phoenix's get_spans_dataframe() rows: context.* and flat attributes.* columns, a semantic
    convention's list (retrieval.documents, llm.input_messages) kept as one column of dicts."""
    rows = []
    for s in spans:
        attrs: dict = {}
        for k, v in s.attributes.items():
            for conv in ("retrieval.documents", "llm.input_messages", "llm.output_messages"):
                if k.startswith(conv + "."):
                    n, _, rest = k[len(conv) + 1:].partition(".")
                    items = attrs.setdefault(conv, [])
                    while len(items) <= int(n):
                        items.append({})
                    items[int(n)][rest] = v
                    break
            else:
                attrs[k] = list(v) if isinstance(v, tuple) else v
        rows.append({"name": s.name, "span_kind": s.attributes.get("openinference.span.kind"),
                     "parent_id": format(s.parent.span_id, "016x") if s.parent else None,
                     "start_time": s.start_time // 1_000_000, "end_time": s.end_time // 1_000_000,  # epoch ms
                     "status_code": s.status.status_code.name, "status_message": s.status.description or "",
                     "context.span_id": format(s.context.span_id, "016x"),
                     "context.trace_id": format(s.context.trace_id, "032x"),
                     **{f"attributes.{k}": v for k, v in attrs.items()}})
    return rows


def test_a_phoenix_spans_export(recorded, tmp_path):
    spans, responses = recorded
    path = tmp_path / "phoenix.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in phoenix_rows(spans)))
    assert oi.detect(path) == "phoenix"
    traces, errors = oi.load(path)
    assert errors == []
    check_traces(traces, responses)
    array = tmp_path / "phoenix.json"
    array.write_text(json.dumps(phoenix_rows(spans), indent=2))
    assert oi.detect(array) == "phoenix" and [t.question for t in oi.load(array)[0]] == QUESTIONS
    import pandas as pd

    pq = tmp_path / "phoenix.parquet"
    pd.DataFrame(phoenix_rows(spans)).to_parquet(pq)
    assert [t.answer for t in oi.load(pq)[0]] == [r.response for r in responses]


def test_import_then_eval_and_eval_directly(recorded, tmp_path, monkeypatch, capsys):
    spans, _ = recorded
    monkeypatch.chdir(tmp_path)
    Path("spans.json").write_text(otlp_json(spans))
    assert main(["import", "spans.json", "--out", "runs/prod"]) == 0
    assert "imported 3 traces" in capsys.readouterr().out
    assert main(["import", "spans.json", "--out", "runs/prod"]) == 0  # a second import appends nothing
    assert "0 new, 3 already there" in capsys.readouterr().out
    assert len(RunFolder("runs/prod").traces.read()) == 3
    assert main(["eval", "runs/prod/traces.jsonl", "--judges", "lexical"]) == 0
    assert main(["eval", "spans.json", "--judges", "lexical", "--out", "runs/direct"]) == 0
    a, b = (json.loads(Path(f"runs/{r}/summary.json").read_text())["metrics"] for r in ("prod", "direct"))
    assert [(m["metric"], m["n"], m["mean"]) for m in a] == [(m["metric"], m["n"], m["mean"]) for m in b]
    # every trace measured by both paths ("Keys and values.", a bare answer its fragment cannot tell, is unmeasured by
    # answer relevance on both)
    assert {m["metric"] for m in a if m["n"] == 3} >= {"groundedness", "context_precision"}
    capsys.readouterr()


def _export(spans: list[dict]) -> dict:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def _span(sid: str, parent: str | None, kind: str, start: int, end: int, **attrs) -> dict:
    kv = [{"key": "openinference.span.kind", "value": {"stringValue": kind}}]
    for k, v in attrs.items():
        key = k.replace("__", ".")
        kv.append({"key": key, "value": {"doubleValue": v} if isinstance(v, float) else {"stringValue": v}})
    out = {"traceId": "ab" * 16, "spanId": sid * 8, "name": kind.lower(), "startTimeUnixNano": str(start),
           "endTimeUnixNano": str(end), "attributes": kv, "status": {"code": "STATUS_CODE_OK"}}
    return {**out, "parentSpanId": parent * 8} if parent else out


def test_partial_and_malformed_spans_are_reported_and_skipped(tmp_path, capsys):
    ms = 1_000_000
    good_retriever = _span("b2", "a1", "RETRIEVER", 2 * ms, 5 * ms, **{
        "retrieval__documents__0__document__id": "kv#0", "retrieval__documents__0__document__content": "KV text.",
        "retrieval__documents__0__document__score": 0.9, "retrieval__documents__1__document__id": "x#0"})
    spans = [
        _span("a1", None, "CHAIN", 1 * ms, 9 * ms, input__value="What does the KV cache store?",
              output__value="Keys and values."),
        good_retriever,  # its second document has no content: that document is reported and skipped
        _span("c3", None, "CHAIN", 10 * ms, 20 * ms, input__value="An answer with no retrieval?",
              output__value="Yes, it answers from memory."),  # no RETRIEVER span: judged with what it has
        _span("d4", "ee", "LLM", 1, 2),  # its parent is not in the file
        {**_span("f5", "a1", "LLM", 3, 4), "startTimeUnixNano": "soon"},  # bad time
        {**_span("f6", "a1", "LLM", 3, 4), "spanId": "!!"},  # bad id
        _span("a7", None, "CHAIN", 30 * ms, 31 * ms, output__value="no question"),  # a root without input.value
        _span("a8", None, "EMBEDDING", 40 * ms, 41 * ms, input__value="index build"),  # not a query
    ]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_export(spans), indent=1))
    traces, errors = oi.load(path)
    assert [t.question for t in traces] == ["What does the KV cache store?", "An answer with no retrieval?"]
    first, second = traces
    assert [c.chunk_id for c in first.contexts] == ["kv#0"] and first.latency_ms == {"total": 8.0, "retrieve": 3.0}
    assert second.contexts is None and second.metadata["contexts_missing"] == oi.NO_RETRIEVAL
    msgs = [e.one_line() for e in errors]
    assert any("span b2b2b2b2b2b2b2b2: retrieval.documents.1: no document.content" in m for m in msgs)
    assert any("span d4d4d4d4d4d4d4d4: its parent span eeeeeeeeeeeeeeee is not in the file" in m for m in msgs)
    assert any("spans[4]" in m and "startTimeUnixNano 'soon' is not a time" in m and "f5f5" in m for m in msgs)
    assert any("spans[5]" in m and "spanId '!!' is neither hex nor base64" in m for m in msgs)
    assert any("span a7a7a7a7a7a7a7a7: the root span has no input.value" in m for m in msgs)
    assert all(m.startswith(str(path)) for m in msgs) and len(msgs) == 5

    # a JSON-lines export names the line of a bad one
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps(_export(spans[:3])) + "\n{torn\n" + json.dumps(_export([spans[3]])) + "\n")
    traces, errors = oi.load(lines)
    assert len(traces) == 2 and any(e.line == 2 and "malformed JSON" in e.message for e in errors)

    # eval: the trace without retrieval is judged on what it has, its context metrics unmeasured with the reason
    run = tmp_path / "ev"
    assert main(["eval", str(path), "--judges", "lexical", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert "d4d4d4d4d4d4d4d4" in err and "1 root span(s) that are not queries (EMBEDDING 1)" in err
    judged = {j["sample_id"]: {r["metric"]: r for r in j["results"]}
              for j in map(json.loads, (run / "results.jsonl").read_text().splitlines())}
    no_ret = judged["c3c3c3c3c3c3c3c3"]
    assert no_ret["groundedness"]["status"] == "unmeasured"
    assert no_ret["groundedness"]["reason"] == f"no contexts in the input record: {oi.NO_RETRIEVAL}"
    assert no_ret["answer_relevance"]["status"] == "ok"
    assert judged["a1a1a1a1a1a1a1a1"]["groundedness"]["status"] == "ok"


def test_a_file_with_no_query_trace_is_one_error(tmp_path):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_export([_span("a8", None, "EMBEDDING", 1, 2, input__value="x")])))
    with pytest.raises(InputError, match="no query trace in the span export"):
        oi.load(path)


def test_a_retriever_that_found_nothing_is_an_empty_list_not_missing(tmp_path):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_export([_span("a1", None, "CHAIN", 1, 9, input__value="Q?", output__value="A."),
                                        _span("b2", "a1", "RETRIEVER", 2, 3)])))
    (trace,), _ = oi.load(path)
    assert trace.contexts == [] and "contexts_missing" not in trace.metadata


def test_detect_leaves_other_jsonl_alone(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"question": "q", "contexts": ["c"], "answer": "a"}) + "\n")
    trace = tmp_path / "traces.jsonl"
    trace.write_text(json.dumps({"sample_id": "s", "question": "q"}) + "\n")
    assert oi.detect(rows) is None and oi.detect(trace) is None and oi.detect(tmp_path / "missing.json") is None


def test_a_phoenix_row_nested_as_its_rest_api_writes_it(tmp_path):
    row = {"name": "query", "context": {"trace_id": "cd" * 16, "span_id": "a1" * 8}, "span_kind": "CHAIN",
           "parent_id": None, "start_time": "2026-12-01T10:00:00.000+00:00", "end_time": "2026-12-01T10:00:00.250Z",
           "status_code": "OK", "attributes": {"input": {"value": "What is LoRA?"}, "output": {"value": "Adapters."}}}
    child = {**row, "name": "retrieve", "context": {"trace_id": "cd" * 16, "span_id": "b2" * 8}, "parent_id": "a1" * 8,
             "span_kind": "RETRIEVER", "attributes": {"retrieval": {"documents": [
                 {"document": {"id": "lora#0", "content": "LoRA adds adapters.", "score": 0.5,
                               "metadata": {"doc_id": "lora"}}}]}}}
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(child) + "\n")
    assert oi.detect(path) == "phoenix"
    (t,), errors = oi.load(path)
    assert errors == [] and t.question == "What is LoRA?" and t.answer == "Adapters."
    assert [(c.chunk_id, c.doc_id, c.score) for c in t.chunks] == [("lora#0", "lora", 0.5)]
    assert t.latency_ms["total"] == 250.0


# --- shapes real exports take that the reader once got wrong -----------------------------------------------------

def _load_one(tmp_path, spans, name="spans.json"):
    path = tmp_path / name
    path.write_text(json.dumps(_export(spans)), encoding="utf-8")
    return oi.load(path)


def test_queries_below_a_span_of_another_instrumentation_are_imported(tmp_path):
    """An HTTP server span (no OpenInference kind) around the query: the CHAIN below it is the trace."""
    http = {"traceId": "ab" * 16, "spanId": "99" * 8, "name": "POST /ask", "startTimeUnixNano": "0",
            "endTimeUnixNano": "100", "attributes": [{"key": "http.method", "value": {"stringValue": "POST"}}]}
    mid = {**http, "spanId": "98" * 8, "parentSpanId": "99" * 8, "name": "handler", "attributes": []}
    spans = [http, mid, _span("a1", "98", "CHAIN", 1, 9, input__value="What is KV?", output__value="Keys."),
             _span("b2", "a1", "RETRIEVER", 2, 3, retrieval__documents__0__document__id="kv#0",
                   retrieval__documents__0__document__content="KV text."),
             _span("c3", "99", "CHAIN", 20, 29, input__value="Second?", output__value="Yes.")]
    traces, errors = _load_one(tmp_path, spans)
    assert errors == [] and [t.sample_id for t in traces] == ["a1" * 8, "c3" * 8]
    assert [c.chunk_id for c in traces[0].contexts] == ["kv#0"] and traces[1].contexts is None


def test_otlp_json_status_codes_as_numbers(tmp_path):
    """The OTLP/JSON mapping writes enums as integers: status code 2 is ERROR, never an answered query."""
    failed = {**_span("a1", None, "CHAIN", 1, 9, input__value="Q?", output__value="partial"),
              "status": {"code": 2, "message": "boom"}}
    ok = {**_span("c3", None, "CHAIN", 10, 19, input__value="Q2?", output__value="A."), "status": {"code": 1}}
    (t1, t2), errors = _load_one(tmp_path, [failed, ok])
    assert errors == [] and (t1.outcome, t1.error) == ("error", "the root span failed: boom")
    assert t2.outcome == "answered"


@pytest.mark.parametrize("bad, why", [
    ({"status": "OK"}, "status is not an object"),
    ({"attributes": [{"key": "x", "value": {"arrayValue": ["a"]}}]}, "attribute 'x': arrayValue is not an object"),
    ({"attributes": [{"key": "x", "value": {"kvlistValue": {"values": [{"value": {}}]}}}]},
     "attribute 'x': a kvlistValue entry is not a {key, value} object"),
    ({"attributes": [{"key": "x", "value": {"intValue": "abc"}}]}, "attribute 'x': intValue 'abc' is not an integer"),
    ({"attributes": [{"key": "x", "value": {"doubleValue": [1]}}]}, "attribute 'x': doubleValue [1] is not a number"),
])
def test_malformed_nested_shapes_are_span_errors_not_crashes(tmp_path, bad, why):
    spans = [_span("c3", None, "CHAIN", 10, 19, input__value="Q2?", output__value="A."),
             {**_span("a1", None, "CHAIN", 1, 9, input__value="Q?", output__value="A."), **bad}]
    (trace,), errors = _load_one(tmp_path, spans)
    assert trace.sample_id == "c3" * 8
    assert len(errors) == 1 and why in errors[0].one_line() and "a1a1a1a1a1a1a1a1" in errors[0].one_line()


def test_children_of_a_skipped_span_and_parent_loops_are_reported(tmp_path):
    spans = [{**_span("a1", None, "CHAIN", 1, 9, input__value="Q?", output__value="A."), "endTimeUnixNano": None},
             _span("b2", "a1", "RETRIEVER", 2, 3),
             _span("c3", "d4", "CHAIN", 1, 9, input__value="Q?", output__value="A."), _span("d4", "c3", "LLM", 2, 3),
             _span("e5", "e5", "CHAIN", 1, 9, input__value="Q?", output__value="A."),
             _span("f6", None, "CHAIN", 1, 9, input__value="Q?", output__value="A.")]
    (trace,), errors = _load_one(tmp_path, spans)
    msgs = [e.one_line() for e in errors]
    assert trace.sample_id == "f6" * 8 and len(msgs) == 5, msgs
    assert any("span b2b2b2b2b2b2b2b2: its parent span a1a1a1a1a1a1a1a1 was skipped" in m for m in msgs)
    assert sum("its parent chain loops" in m for m in msgs) == 3


def test_json_wrapped_inputs_and_outputs(tmp_path):
    """LangChain's RetrievalQA output ({"query", "result"}) and a chat input ({"messages": [...]}) are unwrapped."""
    spans = [_span("a1", None, "CHAIN", 1, 9, input__value=json.dumps({"query": "What is KV?"}),
                   output__value=json.dumps({"query": "What is KV?", "result": "Keys and values."})),
             _span("c3", None, "CHAIN", 10, 19, output__value="Hi.", input__value=json.dumps(
                 {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello?"}]}))]
    (t1, t2), _ = _load_one(tmp_path, spans)
    assert (t1.question, t1.answer) == ("What is KV?", "Keys and values.") and t2.question == "Hello?"


def test_a_phoenix_parquet_export_with_a_missing_time(tmp_path):
    """pandas writes a missing time as NaT: it is a missing time (the span reported), never a 292-year latency."""
    import pandas as pd

    ts = pd.Timestamp("2026-01-01T10:00:00Z")
    rows = [{"name": "query", "span_kind": "CHAIN", "parent_id": None, "context.span_id": sid * 8,
             "context.trace_id": "cd" * 16, "start_time": start, "end_time": ts + pd.Timedelta(seconds=1),
             "status_code": "OK", "attributes.input.value": "Q?", "attributes.output.value": "A."}
            for sid, start in (("a1", ts), ("b2", pd.NaT))]
    path = tmp_path / "spans.parquet"
    pd.DataFrame(rows).to_parquet(path)
    (trace,), errors = oi.load(path)
    assert trace.sample_id == "a1" * 8 and trace.latency_ms["total"] == 1000.0
    assert len(errors) == 1 and "start_time missing" in errors[0].one_line()


def test_a_span_that_ends_before_it_starts_has_no_latency_never_zero(tmp_path, caplog):
    ms = 1_000_000
    spans = [_span("a1", None, "CHAIN", 9 * ms, 1 * ms, input__value="Q?", output__value="A."),  # clocks disagree
             _span("b2", "a1", "RETRIEVER", 2 * ms, 5 * ms)]
    (trace,), errors = _load_one(tmp_path, spans)
    assert trace.latency_ms == {"retrieve": 3.0} and not errors  # the trace is kept, its total left out
    assert "ends before it starts" in trace.metadata["latency_unmeasured"]
    assert any("ends before it starts" in r.getMessage() for r in caplog.records)


def test_otlp_structures_that_are_not_lists_are_reported_not_read_as_empty(tmp_path):
    good = _export([_span("a1", None, "CHAIN", 1, 9, input__value="Q?", output__value="A.")])
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [good, {"resourceSpans": 5},
                                                       {"resourceSpans": [{"scopeSpans": "x"}]},
                                                       {"resourceSpans": [{"scopeSpans": [{"spans": 7}]}]}]) + "\n")
    traces, errors = oi.load(path)
    assert len(traces) == 1
    assert [(e.line, e.field) for e in errors] == [(2, "resourceSpans"), (3, "resourceSpans[0].scopeSpans"),
                                                   (4, "resourceSpans[0].scopeSpans[0].spans")]


def test_span_ids_are_per_trace_and_documents_are_checked_one_by_one(tmp_path):
    """OpenTelemetry makes span ids unique within a trace only: the same ids in two traces are two queries, each with
    its own children. A document id repeated in one retriever span, and a score that is not a number, are reported
    (one line each, naming the document), never dropped or emptied in silence; a numeric string is a score."""
    docs = {"retrieval__documents__0__document__id": "kv#0", "retrieval__documents__0__document__content": "KV.",
            "retrieval__documents__0__document__score": "0.75",
            "retrieval__documents__1__document__id": "kv#0", "retrieval__documents__1__document__content": "again",
            "retrieval__documents__2__document__id": "kv#1", "retrieval__documents__2__document__content": "More.",
            "retrieval__documents__2__document__score": "high"}
    first = [_span("a1", None, "CHAIN", 1, 9, input__value="What is KV?", output__value="Keys."),
             _span("b2", "a1", "RETRIEVER", 2, 3, **docs)]
    second = [{**s, "traceId": "cd" * 16} for s in
              (_span("a1", None, "CHAIN", 10, 19, input__value="Second?", output__value="Yes."),
               _span("b2", "a1", "RETRIEVER", 11, 12, retrieval__documents__0__document__id="other",
                     retrieval__documents__0__document__content="Other text."))]
    traces, errors = _load_one(tmp_path, first + second)
    assert [t.question for t in traces] == ["What is KV?", "Second?"]
    assert [t.sample_id for t in traces] == [f"{'ab' * 16}-{'a1' * 8}", f"{'cd' * 16}-{'a1' * 8}"]
    assert [(c.chunk_id, c.score) for c in traces[0].contexts] == [("kv#0", 0.75), ("kv#1", None)]
    assert [c.chunk_id for c in traces[1].contexts] == ["other"]
    msgs = sorted(e.one_line() for e in errors)
    assert len(msgs) == 2
    assert "retrieval.documents.1: document.id 'kv#0' repeats retrieval.documents.0; the first kept" in msgs[0]
    assert "retrieval.documents.2.document.score 'high' is not a finite number; left empty" in msgs[1]

    # the same span id twice in one trace is still one span too many
    _, errors = _load_one(tmp_path, first + [first[1]])
    assert [e.message for e in errors if "duplicate span id" in e.message] == [
        f"span {'b2' * 8}: duplicate span id in trace {'ab' * 16}; span skipped"]
