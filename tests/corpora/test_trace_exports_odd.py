"""The OpenInference reader (corpora/openinference.py, corpora/otel_spans.py) on span exports of odd but real shapes it
once read wrong: a gzipped export, chat-message JSON inputs and outputs, multimodal prompt messages, documents without
ids, spans whose exporter dropped attributes, a service's spans whose parent is in another service's export, a root
with no output.value, a Phoenix DataFrame indexed by its span id, epoch milliseconds. Hand-made spans, no model."""
from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from corpora import openinference as oi
from corpora.errors import InputError
from corpora.otel_spans import read_spans
from tests.corpora.test_openinference_shapes import MS, TRACE, _export, _load, _query, _span


def _text_id(text: str) -> str:
    """The id the reader gives a document recorded without one (pinned here, not taken from the module)."""
    return "text-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records]


# --- 1. gzip ------------------------------------------------------------------------------------------------------

def test_a_gzipped_export_is_detected_and_read_like_the_plain_one(tmp_path):
    """A ``.gz`` export (OTLP JSON, a collector's JSON lines, Phoenix rows) was read as raw bytes: detect said None and
    load said "not valid UTF-8"."""
    export = _export([_query(), _span("c1", "a1", "RETRIEVER", 1 * MS, 2 * MS, docs=["x", "y"])])
    plain = tmp_path / "spans.json"
    plain.write_text(json.dumps(export))
    whole = tmp_path / "spans.json.gz"
    whole.write_bytes(gzip.compress(json.dumps(export).encode()))
    other = _export([_query("a2", 200 * MS, 300 * MS, input__value="Second?")])
    lines = tmp_path / "collector.jsonl.gz"
    lines.write_bytes(gzip.compress((json.dumps(export) + "\n" + json.dumps(other) + "\n").encode()))
    assert oi.detect(plain) == oi.detect(whole) == oi.detect(lines) == "otlp"
    want, errors = oi.load(plain)
    got, gz_errors = oi.load(whole)
    assert errors == gz_errors == [] and [t.model_dump(exclude={"created_at"}) for t in got] == \
        [t.model_dump(exclude={"created_at"}) for t in want]
    traces, errors = oi.load(lines)
    assert errors == [] and [t.question for t in traces] == ["Compare A and B?", "Second?"]
    assert [c.chunk_id for c in traces[0].contexts] == ["x", "y"]

    row = {"name": "query", "span_kind": "CHAIN", "parent_id": None, "start_time": 1700000000000,
           "end_time": 1700000000010, "status_code": "OK", "context.span_id": "a1" * 8, "context.trace_id": TRACE,
           "attributes.input.value": "What is KV?", "attributes.output.value": "Keys."}
    phoenix = tmp_path / "phoenix.jsonl.gz"
    phoenix.write_bytes(gzip.compress((json.dumps(row) + "\n").encode()))
    assert oi.detect(phoenix) == "phoenix"
    (trace,), errors = oi.load(phoenix)
    assert errors == [] and (trace.question, trace.answer) == ("What is KV?", "Keys.")


def test_a_gz_file_that_is_not_gzip_is_one_line_not_a_traceback(tmp_path):
    """A ``.gz`` that is plain text, or a gzip stream cut short, is no span export: detect says None, load one
    InputError line (gzip's BadGzipFile, EOFError), never a traceback, nor the plain text read as if it were gzip."""
    text = json.dumps(_export([_query()]))
    fake = tmp_path / "spans.json.gz"
    fake.write_text(text)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(text.encode())[:60])
    for path in (fake, cut):
        assert oi.detect(path) is None
        with pytest.raises(InputError, match="unreadable span export") as exc:
            oi.load(path)
        assert "\n" not in str(exc.value) and str(exc.value).startswith(str(path))


# --- 2. chat messages as input and output values ------------------------------------------------------------------

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


@pytest.mark.parametrize("question_value, answer_value, question, answer", [
    ({"role": "user", "content": "What is KV?"},  # one chat message; an Ollama chat response's "message"
     {"model": "llama3", "message": {"role": "assistant", "content": "Keys."}, "done": True}, "What is KV?", "Keys."),
    ({"role": "user", "content": [{"type": "text", "text": "What is in the picture?"}, IMAGE]},  # text parts
     {"id": "chatcmpl-1", "object": "chat.completion", "choices": [  # an OpenAI completion: its first choice
         {"index": 0, "message": {"role": "assistant", "content": "A cat."}, "finish_reason": "stop"}]},
     "What is in the picture?", "A cat."),
    ({"model": "gpt-4o", "messages": [{"role": "system", "content": "Be brief."},  # a chat input: its last message
                                      {"role": "user", "content": [IMAGE, {"type": "text", "text": "Hello?"}]}]},
     {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]}, "Hello?", "Hi."),
])
def test_chat_message_values_are_their_text(tmp_path, caplog, question_value, answer_value, question, answer):
    """Chat messages ({"role", "content"}, content a string or a list of text parts, an image part holding no text), a
    chat response's "message" and an OpenAI completion's choices were kept as their JSON text, with a warning."""
    spans = [_query(input__value=json.dumps(question_value), output__value=json.dumps(answer_value))]
    (trace,), errors = _load(tmp_path, spans)
    assert errors == [] and (trace.question, trace.answer) == (question, answer)
    assert not [m for m in _messages(caplog) if "is a JSON object" in m]


def test_a_value_declared_plain_text_is_never_unwrapped(tmp_path, caplog):
    """input.mime_type "text/plain": a question that starts with "{" is that text; it was read as a JSON object (its
    one string taken as the question). A JSON value declared as such is still unwrapped."""
    spans = [_query(input__value='{"name": "Ada"}', input__mime_type="text/plain",
                    output__value='{"status": "ok", "n": 2}', output__mime_type="text/plain"),
             _query("a2", 200 * MS, 300 * MS, input__value=json.dumps({"query": "What is KV?"}),
                    input__mime_type="application/json")]
    (plain, as_json), errors = _load(tmp_path, spans)
    assert errors == [] and (plain.question, plain.answer) == ('{"name": "Ada"}', '{"status": "ok", "n": 2}')
    assert as_json.question == "What is KV?"
    assert not [m for m in _messages(caplog) if "is a JSON object" in m]


# --- 3. multimodal prompt messages --------------------------------------------------------------------------------

def test_flattened_multimodal_input_messages_are_the_prompt_text(tmp_path):
    """OpenInference writes a multimodal message as ``message.contents.M.message_content.text`` parts (an image part
    holds no text): the prompt's message was empty."""
    user = "llm.input_messages.1.message"
    llm = _span("e1", "a1", "LLM", 10 * MS, 20 * MS, **{
        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "Answer briefly.",
        f"{user}.role": "user",
        f"{user}.contents.0.message_content.type": "text",
        f"{user}.contents.0.message_content.text": "What is in the picture?",
        f"{user}.contents.1.message_content.type": "image",
        f"{user}.contents.1.message_content.image.image.url": "https://example.com/cat.png",
        f"{user}.contents.2.message_content.type": "text",
        f"{user}.contents.2.message_content.text": "One word.",
        "llm.model_name": "gpt-4o"})
    (trace,), errors = _load(tmp_path, [_query(), llm])
    assert errors == [] and trace.generator == "gpt-4o"
    assert trace.prompt == [{"role": "system", "content": "Answer briefly."},
                            {"role": "user", "content": "What is in the picture?\nOne word."}]


# --- 4. documents without document.id -----------------------------------------------------------------------------

def _doc(prefix: str, i: int, text: str, **meta) -> dict[str, str]:
    out = {f"{prefix}.{i}.document.content": text}
    return {**out, f"{prefix}.{i}.document.metadata": json.dumps(meta)} if meta else out


def test_documents_without_ids_are_matched_by_their_text(tmp_path):
    """A document recorded without document.id got an id of its span and place ("<span>-N"): a reranker's output was
    never the retrieved document it is, so the retrieved ones all became candidates and the contexts lost their doc_id
    and title. Its id is now made from its text, the same in every span."""
    retriever = _span("c1", "a1", "RETRIEVER", 1 * MS, 5 * MS, **{
        **_doc("retrieval.documents", 0, "Alpha text.", doc_id="alpha", title="Alpha"),
        **_doc("retrieval.documents", 1, "Beta text.", doc_id="beta", title="Beta"),
        **_doc("retrieval.documents", 2, "Gamma text.", doc_id="gamma", title="Gamma")})
    reranker = _span("d1", "a1", "RERANKER", 6 * MS, 8 * MS, **{
        **_doc("reranker.output_documents", 0, "Gamma text."), "reranker.output_documents.0.document.score": "0.8",
        **_doc("reranker.output_documents", 1, "Alpha text."), "reranker.output_documents.1.document.score": "0.7"})
    (trace,), errors = _load(tmp_path, [_query(), retriever, reranker])
    assert errors == []
    assert [(c.chunk_id, c.doc_id, c.title, c.score, c.rank) for c in trace.contexts] == [
        (_text_id("Gamma text."), "gamma", "Gamma", 0.8, 1), (_text_id("Alpha text."), "alpha", "Alpha", 0.7, 2)]
    assert [(c.chunk_id, c.doc_id, c.rank) for c in trace.candidates] == [(_text_id("Beta text."), "beta", 3)]


def test_two_documents_with_the_same_text_and_no_id_are_one(tmp_path):
    """The same text twice without an id was two contexts; now the second is reported as a repeat, the first kept."""
    retriever = _span("c1", "a1", "RETRIEVER", 1 * MS, 5 * MS, **{
        **_doc("retrieval.documents", 0, "Same text.", doc_id="first"),
        **_doc("retrieval.documents", 1, "Same text.", doc_id="second"),
        **_doc("retrieval.documents", 2, "Other text.")})
    (trace,), errors = _load(tmp_path, [_query(), retriever])
    assert [(c.chunk_id, c.doc_id) for c in trace.contexts] == [(_text_id("Same text."), "first"),
                                                                (_text_id("Other text."), None)]
    assert len(errors) == 1 and f"span {'c1' * 8}: retrieval.documents.1: no document.id, and the same " \
        "document.content as retrieval.documents.0; the first kept" in errors[0].one_line()


# --- 5. incomplete documents and dropped attributes ---------------------------------------------------------------

def test_a_retrieval_with_documents_missing_is_unmeasured(tmp_path):
    """A retriever whose exporter dropped attributes (OpenTelemetry's attribute count limit drops the best-ranked
    documents first), or whose document indices have a gap, was read as if its documents were all it retrieved."""
    spans = [_query("a1", 0, 10 * MS),
             {**_span("c1", "a1", "RETRIEVER", 1 * MS, 2 * MS, docs=["x", "y"]), "droppedAttributesCount": 3},
             _query("a2", 20 * MS, 30 * MS),
             _span("c2", "a2", "RETRIEVER", 21 * MS, 22 * MS, **{
                 **_doc("retrieval.documents", 0, "X."), "retrieval.documents.0.document.id": "x",
                 **_doc("retrieval.documents", 2, "Z."), "retrieval.documents.2.document.id": "z"}),
             _query("a3", 40 * MS, 50 * MS), _span("c3", "a3", "RETRIEVER", 41 * MS, 42 * MS, docs=["p", "q"]),
             _span("d3", "a3", "RERANKER", 43 * MS, 44 * MS, **{
                 **_doc("reranker.output_documents", 0, "p text."), "reranker.output_documents.0.document.id": "p",
                 **_doc("reranker.output_documents", 3, "q text."), "reranker.output_documents.3.document.id": "q"}),
             _query("a4", 60 * MS, 70 * MS), _span("c4", "a4", "RETRIEVER", 61 * MS, 62 * MS, docs=["k"])]
    (dropped, gap, reranked, whole), errors = _load(tmp_path, spans)
    for t in (dropped, gap, reranked):
        assert t.contexts is None and t.candidates == [], t.sample_id
    assert "RETRIEVER span " + "c1" * 8 in dropped.metadata["contexts_missing"]
    assert "dropped 3 of its attributes" in dropped.metadata["contexts_missing"]
    assert "RETRIEVER span " + "c2" * 8 in gap.metadata["contexts_missing"]
    assert "retrieval.documents.1 missing" in gap.metadata["contexts_missing"]
    assert "RERANKER span " + "d3" * 8 in reranked.metadata["contexts_missing"]
    assert "reranker.output_documents.1 and 1 more missing" in reranked.metadata["contexts_missing"]
    assert [c.chunk_id for c in whole.contexts] == ["k"] and "contexts_missing" not in whole.metadata
    msgs = [e.one_line() for e in errors]
    assert len(msgs) == 3, msgs
    for sid in ("c1", "c2", "d3"):
        assert sum(f"span {sid * 8}: " in m and "contexts are left unmeasured" in m for m in msgs) == 1, (sid, msgs)


def test_a_root_whose_exporter_dropped_attributes_says_so(tmp_path):
    """A root span with no input.value because its exporter dropped attributes was reported as if it had none; a root
    with dropped attributes and its question is kept, with an error saying its text may be incomplete."""
    spans = [{**_span("a1", None, "CHAIN", 0, 10 * MS, output__value="A."), "droppedAttributesCount": 130},
             {**_query("a2", 20 * MS, 30 * MS), "droppedAttributesCount": "2"}]  # OTLP JSON may write a string
    (trace,), errors = _load(tmp_path, spans)
    assert trace.sample_id == "a2" * 8
    msgs = [e.one_line() for e in errors]
    assert len(msgs) == 2, msgs
    assert any(f"span {'a1' * 8}: the root span has no input.value (the question) (the exporter dropped 130 of its "
               "attributes); trace skipped" in m for m in msgs)
    assert any(f"span {'a2' * 8}: the exporter dropped 2 of its attributes" in m and "may be incomplete" in m
               for m in msgs)


def test_a_malformed_dropped_attributes_count_is_a_span_error(tmp_path):
    spans = [_query(), {**_query("a2", 20 * MS, 30 * MS), "droppedAttributesCount": "many"}]
    (trace,), errors = _load(tmp_path, spans)
    assert trace.sample_id == "a1" * 8
    assert len(errors) == 1 and "droppedAttributesCount 'many' is not a count" in errors[0].one_line()


# --- 6. a service's spans whose parent is in another export -------------------------------------------------------

def test_a_span_with_a_remote_parent_is_a_root(tmp_path, caplog):
    """A service's first span, whose parent is the caller's span in the caller's export, was skipped as an orphan with
    everything below it. OTLP's span flags say its parent is remote (0x100: known, 0x200: remote); a lone orphan in a
    trace with no root in the file is read as a root too, with a warning. Two orphans under one missing parent are a
    partial export: still skipped, each reported; so is an orphan whose flags say its parent is local."""
    def in_trace(trace_id: str, span: dict, **extra) -> dict:
        return {**span, "traceId": trace_id, **extra}

    spans = [in_trace("cd" * 16, _span("a1", "ff", "CHAIN", 0, 10 * MS, input__value="Remote?",
                                       output__value="Yes."), flags=0x300),
             in_trace("cd" * 16, _span("c1", "a1", "RETRIEVER", 1 * MS, 2 * MS, docs=["x"])),
             in_trace("ef" * 16, _span("a2", "ee", "CHAIN", 20 * MS, 30 * MS, input__value="Orphan?",
                                       output__value="Alone.")),
             in_trace("12" * 16, _span("b1", "dd", "CHAIN", 40 * MS, 50 * MS, input__value="One?", output__value="1")),
             in_trace("12" * 16, _span("b2", "dd", "CHAIN", 51 * MS, 60 * MS, input__value="Two?", output__value="2")),
             in_trace("34" * 16, _span("b3", "cc", "CHAIN", 61 * MS, 70 * MS, input__value="Local?",
                                       output__value="No."), flags=0x100)]
    traces, errors = _load(tmp_path, spans)
    assert [(t.sample_id, t.question) for t in traces] == [("a1" * 8, "Remote?"), ("a2" * 8, "Orphan?")]
    assert [c.chunk_id for c in traces[0].contexts] == ["x"]
    msgs = [e.one_line() for e in errors]
    assert len(msgs) == 3, msgs
    for sid, parent in (("b1", "dd"), ("b2", "dd"), ("b3", "cc")):
        assert any(f"span {sid * 8}: its parent span {parent * 8} is not in the file" in m for m in msgs), (sid, msgs)
    guessed = [m for m in _messages(caplog) if "read as the root of their trace" in m]
    assert len(guessed) == 1 and f"span {'a2' * 8} (parent {'ee' * 8})" in guessed[0]
    assert "a1" * 8 not in guessed[0]


# --- 7. a root with no output.value -------------------------------------------------------------------------------

def _llm(sid: str, parent: str, start: int, end: int, **attrs) -> dict:
    return _span(sid, parent, "LLM", start, end, **{"llm.input_messages.0.message.role": "user",
                                                    "llm.input_messages.0.message.content": "Q", **attrs})


def test_a_root_without_output_value_answers_with_its_last_llm_output(tmp_path, caplog):
    """A root span that recorded no output.value (a streamed response) was an error with an empty answer, its LLM
    spans' output ignored. The answer is now the output message of the LLM span that ends last (never an earlier
    call's), said in metadata and a warning; an LLM span whose output is a tool call holds no answer."""
    out = "llm.output_messages.0.message"
    spans = [_span("a1", None, "CHAIN", 0, 100 * MS, input__value="What is KV?"),
             _llm("e1", "a1", 1 * MS, 10 * MS, **{f"{out}.role": "assistant", f"{out}.content": "Draft."}),
             _llm("e2", "a1", 20 * MS, 40 * MS, **{f"{out}.role": "assistant", f"{out}.content": "Keys and values."}),
             _llm("e3", "a1", 25 * MS, 30 * MS, **{f"{out}.role": "assistant", f"{out}.content": "Started last."}),
             _span("a2", None, "CHAIN", 200 * MS, 300 * MS, input__value="Search for KV?"),
             _llm("f1", "a2", 201 * MS, 210 * MS, **{f"{out}.role": "assistant", f"{out}.content": "Earlier text."}),
             _llm("f2", "a2", 220 * MS, 230 * MS, **{f"{out}.role": "assistant",
                                                     f"{out}.tool_calls.0.tool_call.function.name": "search",
                                                     f"{out}.tool_calls.0.tool_call.function.arguments": '{"q": "KV"}'}),
             _span("a3", None, "CHAIN", 400 * MS, 500 * MS, input__value="What is LoRA?"),
             _llm("b9", "a3", 401 * MS, 410 * MS, output__value=json.dumps(
                 {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Adapters."}}]}))]
    (streamed, tool, completion), errors = _load(tmp_path, spans)
    assert errors == []
    assert (streamed.answer, streamed.outcome, streamed.error) == ("Keys and values.", "answered", None)
    assert "e2" * 8 in streamed.metadata["answer_from"]
    assert (tool.answer, tool.outcome) == ("", "error") and "answer_from" not in tool.metadata
    assert completion.answer == "Adapters." and "b9" * 8 in completion.metadata["answer_from"]
    warned = [m for m in _messages(caplog) if "with no output.value" in m]
    assert len(warned) == 1 and "2 root span(s)" in warned[0] and "a1" * 8 in warned[0]


# --- 8. a Phoenix DataFrame indexed by its span id ----------------------------------------------------------------

def _phoenix_rows() -> list[dict]:
    def row(sid, parent, kind, start, **attrs):
        return {"name": kind.lower(), "span_kind": kind, "parent_id": parent and parent * 8,
                "start_time": 1700000000000 + start, "end_time": 1700000000000 + start + 5, "status_code": "OK",
                "context.span_id": sid * 8, "context.trace_id": TRACE, **{f"attributes.{k}": v for k, v in attrs.items()}}
    return [row("a1", None, "CHAIN", 0, **{"input.value": "What is KV?", "output.value": "Keys."}),
            row("b2", "a1", "RETRIEVER", 1, **{"retrieval.documents": [
                {"document.id": "kv#0", "document.content": "KV text."}]})]


def test_phoenix_rows_without_their_span_id_say_how_to_write_them(tmp_path):
    """get_spans_dataframe() is indexed by context.span_id; to_json(orient="records") drops the index, so each row had
    no span id: detect said the file was no span export, and load reported a missing id with no hint of why."""
    import pandas as pd

    path = tmp_path / "spans.jsonl"
    pd.DataFrame(_phoenix_rows()).set_index("context.span_id").to_json(path, orient="records", lines=True)
    assert "context.span_id" not in path.read_text()
    assert oi.detect(path) == "phoenix"
    errors: list[InputError] = []
    with pytest.raises(InputError, match="no query trace"):
        oi.load(path, errors)
    assert len(errors) == 2 and all("context.span_id missing" in e.one_line() and "reset_index" in e.one_line()
                                    for e in errors)
    pretty = tmp_path / "spans.json"  # an array, pretty-printed: detected by its keys, as the lines are
    pd.DataFrame(_phoenix_rows()).set_index("context.span_id").to_json(pretty, orient="records", indent=2)
    assert oi.detect(pretty) == "phoenix"
    with pytest.raises(InputError, match="reset_index"):
        oi.load(pretty)


def test_a_phoenix_parquet_indexed_by_span_id_is_read(tmp_path):
    """to_parquet keeps a DataFrame's index as its own column, read back as the index: its rows had no span id."""
    import pandas as pd

    path = tmp_path / "spans.parquet"
    pd.DataFrame(_phoenix_rows()).set_index("context.span_id").to_parquet(path)
    assert oi.detect(path) == "phoenix"
    (trace,), errors = oi.load(path)
    assert errors == [] and trace.sample_id == "a1" * 8 and [c.chunk_id for c in trace.contexts] == ["kv#0"]


# --- 9. epoch milliseconds ----------------------------------------------------------------------------------------

def test_integer_epoch_times_are_converted_exactly(tmp_path):
    """An integer epoch time in ms (as pandas writes a Phoenix time) was scaled as a float: 1717171717123 ms became
    1717171717123000064 ns. Microseconds, seconds and a
    decimal string are exact too."""
    rows = [{"name": "q", "span_kind": "CHAIN", "parent_id": None, "context.span_id": "a1" * 8,
             "context.trace_id": TRACE, "start_time": 1717171717123, "end_time": 1717171717123457, "status_code": "OK",
             "attributes.input.value": "Q?", "attributes.output.value": "A."},
            {"name": "r", "span_kind": "RETRIEVER", "parent_id": "a1" * 8, "context.span_id": "b2" * 8,
             "context.trace_id": TRACE, "start_time": 1717171717, "end_time": "1717171717999", "status_code": "OK"}]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    errors: list[InputError] = []
    root, child = read_spans(path, errors)
    assert errors == []
    assert (root.start_ns, root.end_ns) == (1717171717123000000, 1717171717123457000)
    assert (child.start_ns, child.end_ns) == (1717171717000000000, 1717171717999000000)
    (trace,), _ = oi.load(path)
    assert trace.latency_ms["total"] == 0.457
