"""Human labels in a run folder (corpora/labels.py): round trip, the latest label per (sample, metric, who) wins, a
bad line is reported with file:line:field and skipped (the rest is read), a torn last line never glues onto the next;
add_label, the Python form of `ragdoctor label`, labels only a sample of the run and records its hash."""
from __future__ import annotations

import json

import pytest

from corpora.errors import InputError
from corpora.labels import add_label, add_labels, human_values, read_all_labels, read_labels
from corpora.records import Label

SAMPLES = {f"s{i}": f"h{i}" for i in range(1, 6)}


def _run_with(tmp_path, samples: dict[str, str] = SAMPLES):
    """A run folder whose config.json names ``samples`` (an evaluation that judged none yet: results.jsonl empty)."""
    from corpora.run_folder import RunFolder

    RunFolder(tmp_path).write_config({"eval_hash": "e1"}, samples)
    (tmp_path / "results.jsonl").touch()
    return tmp_path


def test_round_trip_and_latest_wins(tmp_path):
    _run_with(tmp_path)
    add_label(tmp_path, "s1", "groundedness", 1, "ann", note="clear")
    add_label(tmp_path, "s1", "groundedness", 0, "bob")
    add_label(tmp_path, "s2", "answer_correctness", 0.5, "ann", when="2026-01-02T03:04:05+00:00")
    add_label(tmp_path, "s1", "groundedness", 0, "ann")  # ann changes her mind
    everything = read_all_labels(tmp_path)
    assert len(everything) == 4 and everything[0].note == "clear"
    now = read_labels(tmp_path)
    assert [(lb.sample_id, lb.who, lb.value) for lb in now] == [("s1", "bob", 0.0), ("s2", "ann", 0.5),
                                                                 ("s1", "ann", 0.0)]
    assert now[1].when == "2026-01-02T03:04:05+00:00" and now[0].when.endswith("+00:00")
    assert human_values(now) == {"groundedness": {"s1": 0.0}, "answer_correctness": {"s2": 0.5}}
    add_label(tmp_path, "s1", "groundedness", 1, "ann")
    assert human_values(read_labels(tmp_path))["groundedness"]["s1"] == 0.5  # two people: the mean of their values


@pytest.mark.parametrize("fields, field, message", [
    ({"metric": "faithfulness"}, "metric", "Input should be"),
    ({"value": 1.5}, "value", "less than or equal to 1"),
    ({"value": True}, "value", "must be a number"),
    ({"value": "yes"}, "value", "must be a number"),
    ({"who": "  "}, "who", "is blank"),
    ({"who": "ann\nbob"}, "who", "control character"),
    ({"who": "ann\t"}, "who", "control character"),
    ({"when": "2026-01-02T03:04:05"}, "when", "has no time zone"),
    ({"when": "yesterday"}, "when", "not an ISO 8601 time"),
    ({"sample_id": ""}, "sample_id", "at least 1 character"),
])
def test_bad_labels_are_refused_naming_the_field(tmp_path, fields, field, message):
    args = {"sample_id": "s1", "metric": "groundedness", "value": 1, "who": "ann", **fields}
    with pytest.raises(InputError) as exc:
        add_label(tmp_path, **args)
    assert exc.value.field == field and message in exc.value.message
    assert not (tmp_path / "labels.jsonl").exists()


def test_bad_lines_are_reported_with_file_line_and_field_and_skipped(tmp_path):
    good = Label(sample_id="s1", metric="groundedness", value=1, who="ann").model_dump_json()
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join([
        '{"sample_id": "s0", "metric": "groundedness", "value": 2, "who": "ann", "when": "2026-01-01T00:00:00Z"}',
        good, "not json", json.dumps({"sample_id": "s2", "metric": "groundedness", "value": 0, "who": "ann",
                                       "extra": 1}), good.replace('"s1"', '"s3"')]) + "\n", encoding="utf-8")
    errors: list[InputError] = []
    labels = read_labels(tmp_path, errors)
    assert [lb.sample_id for lb in labels] == ["s1", "s3"]
    assert [(e.line, e.field) for e in errors] == [(1, "value"), (3, None), (4, "extra")]
    assert all(e.one_line().startswith(f"{path}:{e.line}: ") for e in errors)
    assert "malformed JSON" in errors[1].message and errors[2].message == "unknown field"


def test_a_last_line_without_its_newline_is_ended_never_dropped_or_glued(tmp_path):
    _run_with(tmp_path)
    add_label(tmp_path, "s1", "groundedness", 1, "ann")
    path = tmp_path / "labels.jsonl"
    path.write_text(path.read_text() + '{"sample_id": "s2", "met', encoding="utf-8")  # killed mid-write, or an edit
    add_labels(tmp_path, [Label(sample_id="s3", metric="context_precision", value=0, who="ann")])
    errors: list[InputError] = []
    assert [lb.sample_id for lb in read_labels(tmp_path, errors)] == ["s1", "s3"]
    assert [e.line for e in errors] == [2] and "malformed JSON" in errors[0].message  # kept, reported, not glued
    whole = '{"sample_id": "s4", "metric": "groundedness", "value": 1.0, "who": "bob"}'  # a hand-written last label
    path.write_text(path.read_text() + whole, encoding="utf-8")
    add_label(tmp_path, "s5", "groundedness", 0, "bob")
    assert [lb.sample_id for lb in read_labels(tmp_path, [])] == ["s1", "s3", "s4", "s5"]


def test_a_file_with_no_label_line_is_refused_never_appended_to(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("line one\nimportant last line", encoding="utf-8")
    _run_with(tmp_path / "run")
    (tmp_path / "run" / "labels.jsonl").symlink_to(notes)
    with pytest.raises(InputError, match="holds no label line: not a ragdoctor labels log"):
        add_label(tmp_path / "run", "s1", "groundedness", 1, "ann")
    assert notes.read_text(encoding="utf-8") == "line one\nimportant last line"


def test_a_label_of_an_earlier_answer_no_longer_counts_and_is_said(tmp_path):
    """A label records the hash of the sample it judged: once the sample's answer changes (config.json's hash differs)
    the label is left out and handed to ``stale``; a hand-written label without a hash counts as before."""
    from corpora.labels import sample_hash

    run = _run_with(tmp_path, {"s1": "h1", "s2": "h2-old"})
    assert sample_hash(run, "s2") == "h2-old" and sample_hash(run, "nope") is None
    add_label(run, "s1", "groundedness", 1, "ann", sample_hash="h1")
    add_label(run, "s2", "groundedness", 1, "ann", sample_hash="h2-old")
    add_labels(run, [Label(sample_id="s2", metric="groundedness", value=0, who="bob")])  # hand-written: no hash
    _run_with(tmp_path, {"s1": "h1", "s2": "h2-new"})  # s2 re-answered and re-evaluated
    stale: list[Label] = []
    now = read_labels(run, stale=stale)
    assert [(lb.sample_id, lb.who) for lb in now] == [("s1", "ann"), ("s2", "bob")]
    assert [(lb.sample_id, lb.who) for lb in stale] == [("s2", "ann")]
    add_label(run, "s2", "groundedness", 0, "ann", sample_hash="h2-new")  # labelled again: counts, nothing stale
    stale = []
    assert human_values(read_labels(run, stale=stale)) == {"groundedness": {"s1": 1.0, "s2": 0.0}} and stale == []
    add_label(run, "s2", "groundedness", 1, "ann", sample_hash="h2-old", when="2099-01-01T00:00:00+00:00")
    assert human_values(read_labels(run))["groundedness"]["s2"] == 0.0  # a stale line never wins, however late


def test_the_latest_label_is_the_latest_by_when_and_who_is_one_person_whatever_the_case_and_spaces(tmp_path):
    _run_with(tmp_path)
    path = tmp_path / "labels.jsonl"
    line = '{{"sample_id": "s1", "metric": "groundedness", "value": {v}, "who": "{who}", "when": "{when}"}}\n'
    path.write_text(line.format(v=1, who="Alice", when="2026-03-02T00:00:00+00:00")
                    + line.format(v=0, who=" alice", when="2026-03-01T00:00:00+00:00")  # older, written later
                    + line.format(v=0, who="bob ", when="2026-03-02T01:30:00+02:00")  # 23:30 UTC the day before
                    + line.format(v=1, who="bob", when="2026-03-01T23:00:00Z"), encoding="utf-8")
    now = read_labels(tmp_path)
    assert [(lb.who, lb.value) for lb in now] == [("Alice", 1.0), ("bob", 0.0)]
    assert {lb.who for lb in read_all_labels(tmp_path)} == {"Alice", "alice", "bob"}  # stripped on validation
    add_label(tmp_path, "s1", "groundedness", 0, "ALICE ", when="2026-03-02T00:00:00+00:00")  # a tie: the later line
    assert [(lb.who, lb.value) for lb in read_labels(tmp_path)] == [("bob", 0.0), ("ALICE", 0.0)]


def test_a_torn_last_line_is_said_to_be_incomplete(tmp_path):
    _run_with(tmp_path)
    add_label(tmp_path, "s1", "groundedness", 1, "ann")
    path = tmp_path / "labels.jsonl"
    path.write_text(path.read_text() + '{"sample_id": "s2", "met', encoding="utf-8")
    errors: list[InputError] = []
    assert [lb.sample_id for lb in read_labels(tmp_path, errors)] == ["s1"]
    assert errors[0].line == 2 and errors[0].message.startswith("incomplete last line")
    path.write_text(path.read_text() + "\n", encoding="utf-8")  # ended: a malformed line like any other
    errors = []
    read_labels(tmp_path, errors)
    assert errors[0].message.startswith("malformed JSON")


def test_add_label_labels_only_a_sample_of_the_run_and_records_its_hash(tmp_path):
    """add_label is `ragdoctor label` in Python: a sample id the run does not have is refused (its label would never
    count nor go stale), as is a folder that is no run; the label records the sample's hash as it is now, from
    config.json or, before any evaluation, the latest trace; a hash given (the dashboard's) is kept."""
    from corpora.labels import checked_sample, run_samples
    from corpora.records import Trace

    with pytest.raises(InputError, match="not a run folder") as exc:
        add_label(tmp_path, "s1", "groundedness", 1, "ann")
    assert "\n" not in str(exc.value)
    run = _run_with(tmp_path / "evaluated", {"s1": "h1", "s2": "h2"})
    with pytest.raises(InputError, match=r"evaluated: field 'sample_id': no sample 'nope' in this run"):
        add_label(run, "nope", "groundedness", 1, "ann")
    with pytest.raises(InputError, match="field 'sample_id': no sample 'S1' in this run"):  # ids are exact
        add_label(run, "S1", "groundedness", 1, "ann")
    assert not (run / "labels.jsonl").exists()
    assert add_label(run, "s1", "groundedness", 1, "ann").sample_hash == "h1"
    assert add_label(run, "s2", "groundedness", 1, "ann", sample_hash="seen").sample_hash == "seen"
    assert [lb.sample_hash for lb in read_all_labels(run)] == ["h1", "seen"]
    answered = tmp_path / "answered"  # a pipeline run, not evaluated yet: the trace's own hash
    answered.mkdir()
    trace = Trace(sample_id="q1", question="What does the KV cache store?", answer="Keys and values.")
    (answered / "traces.jsonl").write_text(trace.model_dump_json() + "\n", encoding="utf-8")
    assert add_label(answered, "q1", "answer_correctness", 0.5, "ann").sample_hash == trace.content_hash()
    assert run_samples(answered) == {"q1": trace.content_hash()} and checked_sample(answered, "q1") == \
        trace.content_hash()
    with pytest.raises(InputError, match="field 'sample': no sample 'q2'"):  # the CLI names its option
        checked_sample(answered, "q2", field="sample")
    for blank in ("", "  "):  # never the current folder
        with pytest.raises(InputError, match="^run: a blank value$"):
            add_label(blank, "q1", "groundedness", 1, "ann")


def test_a_line_without_when_is_as_late_as_the_lines_before_it_never_later_than_the_ones_after(tmp_path):
    """A hand-written line without ``when`` took the time it was read: it beat every later label of its person,
    a correction from the dashboard included, for ever (and a reread moved its time). It now counts as written when
    the latest line before it was (the start of time when none is): the later line among equal times, as in the
    file's order, and never after a line written later."""
    _run_with(tmp_path)
    path = tmp_path / "labels.jsonl"
    hand = '{"sample_id": "s1", "metric": "groundedness", "value": 1, "who": "ann"}\n'
    later = ('{"sample_id": "s1", "metric": "groundedness", "value": 0, "who": "ann", '
             '"when": "2025-06-01T00:00:00+00:00"}\n')
    path.write_text(hand + later, encoding="utf-8")
    assert [lb.value for lb in read_labels(tmp_path)] == [0.0]
    assert read_all_labels(tmp_path)[0].when == read_all_labels(tmp_path)[0].when  # no read-time clock in it
    path.write_text(later + hand, encoding="utf-8")  # appended by hand after the dashboard's label: it wins
    assert [lb.value for lb in read_labels(tmp_path)] == [1.0]
    path.write_text(hand + hand.replace('"value": 1', '"value": 0'), encoding="utf-8")  # no times at all: file order
    assert [lb.value for lb in read_labels(tmp_path)] == [0.0]
