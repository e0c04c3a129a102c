"""Human labels of a run's samples: ``labels.jsonl`` in the run folder, append-only (one Label per line, flushed), the
latest label (by its ``when``; file order breaks ties; a line without one is as late as the latest line before it)
per (sample, metric, who) winning on read. A person edits this
file too, so every bad line is reported as ``file:line: field 'x': problem`` and skipped (the first line included),
never a reason to refuse the whole file.

A label carries the content hash of the sample it judged (``sample_hash``): once the sample's answer changes (the run
was rerun or re-imported) the label judged another answer and no longer counts; it is said (``stale``), and the
labelling queue offers the sample again. A label without the hash (written by hand) counts as before."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path

from corpora.errors import InputError, UsageError, report_or_collect
from corpora.jsonl import append_json_line, iter_json_lines, parse_model, repair_torn_tail
from corpora.paths import output_file
from corpora.records import Label
from corpora.run_folder import LABELS, RunFolder


def run_folder(run: str | Path | RunFolder) -> RunFolder:
    """``run`` as a RunFolder; a blank string (``""`` would be the current folder) is a UsageError, as the CLI refuses
    a blank RUN argument."""
    if isinstance(run, RunFolder):
        return run
    if isinstance(run, str) and not run.strip():
        raise UsageError("run: a blank value")
    return RunFolder(run)


def labels_path(run: str | Path | RunFolder) -> Path:
    return run_folder(run).file(LABELS)


def add_labels(run: str | Path | RunFolder, labels: Iterable[Label]) -> Path:
    """Append ``labels`` to the run's labels.jsonl (created when missing). A last line without its newline is ended,
    never dropped (people edit this file; a bad line is reported on read); a file in which no line is a label (a
    user's own file of that name, or one a symlink leads to) is refused, never appended to."""
    path = output_file(labels_path(run), what="labels log")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.stat().st_size and not _holds_a_label(path) and path.read_bytes().strip():
        raise InputError(path, "holds no label line: not a ragdoctor labels log (refusing to append to it)")
    repair_torn_tail(path, drop=False)
    for label in labels:
        append_json_line(path, label)
    return path


def _holds_a_label(path: Path) -> bool:
    """Whether some line of ``path`` is a label: read up to the first one (an append need not parse the whole log)."""
    for lineno, obj in iter_json_lines(path, on_error=lambda _e: None):
        try:
            parse_model(Label, obj, path, lineno)
            return True
        except InputError:
            continue
    return False


def make_label(sample_id: str, metric: str, value: float, who: str, *, note: str | None = None,
               when: str | None = None, sample_hash: str | None = None) -> Label:
    """One label, validated (an InputError from the source "label" naming the field when one is wrong); nothing read
    or written."""
    fields = {"sample_id": sample_id, "metric": metric, "value": value, "who": who, "note": note,
              "sample_hash": sample_hash}
    if when is not None:
        fields["when"] = when
    return parse_model(Label, fields, "label", None)


def add_label(run: str | Path | RunFolder, sample_id: str, metric: str, value: float, who: str, *,
              note: str | None = None, when: str | None = None, sample_hash: str | None = None) -> Label:
    """Validate one label and append it, as ``ragdoctor label`` does: a field that is wrong is an InputError naming it;
    a folder that is no run, or a sample the run does not have, is an InputError naming the run (a label of no sample
    would never count, nor ever be seen to go stale). The label records the sample's hash as it is now (see
    run_samples), so it stops counting once the sample's answer changes; ``sample_hash`` given: that one instead, the
    hash of the sample as the labeller saw it (the dashboard's Label page)."""
    label = make_label(sample_id, metric, value, who, note=note, when=when, sample_hash=sample_hash)
    now = checked_sample(run, label.sample_id)
    if sample_hash is None and now is not None:
        label = label.model_copy(update={"sample_hash": now})
    add_labels(run, [label])
    return label


def run_samples(run: str | Path | RunFolder) -> dict[str, str | None]:
    """Every sample of the run (config.json's, the judged ones, the traces log's), with the hash a label of it records
    now (current_hashes(); None where the run does not say). A folder that is no run is an InputError naming it."""
    folder = run_folder(run)
    if not folder.is_run(folder.path):
        raise InputError(folder.path, "not a run folder (no results.jsonl, results.parquet or traces.jsonl)")
    keys = folder.current_keys()
    traces = folder.latest_traces()
    hashes = keys[1] if keys is not None else {sid: t.content_hash() for sid, t in traces.items()}
    ids = set(hashes) | {j.sample_id for j in folder.judgements()} | set(traces)
    return {sid: hashes.get(sid) for sid in sorted(ids)}


def checked_sample(run: str | Path | RunFolder, sample_id: str, *, field: str = "sample_id") -> str | None:
    """The hash a label of ``sample_id`` records now (None when the run does not say); a sample the run does not have
    is an InputError naming the run and ``field`` (the CLI's option: ``sample``)."""
    folder = run_folder(run)
    keys = folder.current_keys() if folder.is_run(folder.path) else None
    if keys is not None and sample_id in keys[1]:  # an evaluated run's sample: no log need be read (the dashboard
        return keys[1][sample_id]  # labels one sample a click)
    samples = run_samples(folder)
    if sample_id not in samples:
        raise InputError(folder.path, f"no sample '{sample_id}' in this run", field=field)
    return samples[sample_id]


def current_hashes(run: str | Path | RunFolder) -> dict[str, str]:
    """{sample id: content hash} of the run's samples as they are now: config.json's ``samples`` (what the evaluation
    judged), or for a run not evaluated yet the latest trace's ``content_hash()``; empty when neither can be read (then
    no label can be told stale)."""
    folder = run_folder(run)
    keys = folder.current_keys()
    if keys is not None:
        return keys[1]
    try:
        return {sid: t.content_hash() for sid, t in folder.latest_traces().items()}
    except InputError:  # a damaged traces log is reported where it is read for itself, not here
        return {}


def sample_hash(run: str | Path | RunFolder, sample_id: str) -> str | None:
    """The hash a label of ``sample_id`` records now (None when the run does not say)."""
    return current_hashes(run).get(sample_id)


EPOCH = "1970-01-01T00:00:00+00:00"  # the time of a label line without one before any line that has one


def read_all_labels(run: str | Path | RunFolder, errors: list[InputError] | None = None) -> list[Label]:
    """Every valid label in file order. A bad line goes to ``errors`` when given, else is reported, and is skipped.
    A line without ``when`` (written by hand) counts as written when the latest line before it was (EPOCH when none
    is): in latest_labels it wins over those (the later line among equal times) and loses to any line written later;
    the time it was read would have made it win over every later label of its person, for ever."""
    path = labels_path(run)
    if not path.exists():
        return []
    bad: list[InputError] = []
    out: list[Label] = []
    latest = EPOCH
    for lineno, obj in iter_json_lines(path, on_error=bad.append):
        if isinstance(obj, dict) and "when" not in obj:  # written by hand: as late as the lines before it, no later
            obj = {**obj, "when": latest}
        try:
            label = parse_model(Label, obj, path, lineno)
        except InputError as exc:
            bad.append(exc)
            continue
        out.append(label)
        if label.moment > datetime.fromisoformat(latest):
            latest = label.when
    if bad:  # only the last line can be the one cut off: the file is read again for it alone
        bad[-1] = _torn(path, bad[-1])
    report_or_collect(errors, *bad)
    return out


def _torn(path: Path, err: InputError) -> InputError:
    """A last line without its newline that is not JSON was cut off mid-write (or mid-edit): say so, not only where
    the JSON parser gave up (its column says nothing to a person)."""
    if not err.message.startswith("malformed JSON"):
        return err
    data = path.read_bytes()
    if not data or data.endswith(b"\n") or err.line != data.count(b"\n") + 1:
        return err
    return InputError(path, f"incomplete last line (no newline at its end: cut off while being written?); "
                            f"{err.message}", line=err.line, field=err.field)


def latest_labels(labels: Iterable[Label]) -> list[Label]:
    """The latest label per (sample, metric, who): the latest ``when``, the later line among equal ones; in the file
    order of the winning lines."""
    order: dict[tuple[str, str, str], tuple[datetime, int, Label]] = {}
    for i, label in enumerate(labels):
        held = order.get(label.key)
        if held is None or (label.moment, i) >= held[:2]:
            order[label.key] = (label.moment, i, label)
    return [label for _, _, label in sorted(order.values(), key=lambda t: t[1])]


def is_stale(label: Label, hashes: Mapping[str, str]) -> bool:
    """The label judged an earlier answer of its sample: it records a hash, and the sample's hash now differs."""
    now = hashes.get(label.sample_id)
    return label.sample_hash is not None and now is not None and label.sample_hash != now


def read_labels(run: str | Path | RunFolder, errors: list[InputError] | None = None,
                stale: list[Label] | None = None) -> list[Label]:
    """The labels in force: labels of an earlier answer of their sample left out (into ``stale`` when given: the
    latest such label per key that has no current one), then the latest per (sample, metric, who)."""
    labels = read_all_labels(run, errors)
    hashes = current_hashes(run) if any(lb.sample_hash for lb in labels) else {}
    current = latest_labels(lb for lb in labels if not is_stale(lb, hashes))
    if stale is not None:
        counted = {lb.key for lb in current}
        stale.extend(lb for lb in latest_labels(lb for lb in labels if is_stale(lb, hashes)) if lb.key not in counted)
    return current


def labeller_values(labels: Iterable[Label]) -> dict[str, dict[str, list[float]]]:
    """metric -> {sample id: each labeller's value} (the latest label of each)."""
    acc: dict[str, dict[str, list[float]]] = {}
    for label in latest_labels(labels):
        acc.setdefault(label.metric, {}).setdefault(label.sample_id, []).append(label.value)
    return acc


def human_values(labels: Iterable[Label]) -> dict[str, dict[str, float]]:
    """metric -> {sample id: the mean of its labellers' values} (one labeller: that label)."""
    return {m: {sid: sum(v) / len(v) for sid, v in by.items()} for m, by in labeller_values(labels).items()}
