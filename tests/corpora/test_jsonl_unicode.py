"""corpora/jsonl.py: a record whose text UTF-8 cannot write (a lone surrogate) is skipped with one line naming its file,
line and field, nested fields and keys included; the other records are read."""
import json

from corpora.jsonl import parse_records


def _read(rows):
    errors = []
    out = parse_records("rows.jsonl", enumerate(rows, 1), lambda obj, line: obj, errors=errors)
    return out, [str(e) for e in errors]


def test_the_field_holding_a_lone_surrogate_is_named():
    rows = [json.loads('{"question": "q", "contexts": ["ok", {"text": "bad \\ud800"}]}'),
            json.loads('{"question": "q", "metadata": {"\\udc80key": 1}}'),
            json.loads('{"question": "bad \\ud83d"}'),
            {"question": "fine"}]
    out, errors = _read(rows)
    assert out == [{"question": "fine"}]
    assert errors == [
        "rows.jsonl:1: field 'contexts[1].text': holds a lone surrogate ('\\ud800'): not valid Unicode text",
        "rows.jsonl:2: field 'metadata.\\udc80key': holds a lone surrogate ('\\udc80'): not valid Unicode text",
        "rows.jsonl:3: field 'question': holds a lone surrogate ('\\ud83d'): not valid Unicode text"]
