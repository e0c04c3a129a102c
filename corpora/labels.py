"""Human labels of a run's samples: ``labels.jsonl`` in the run folder, append-only (one Label per line, flushed), the
latest label per (sample, metric, who) winning on read. A person edits this file too, so every bad line is reported as
``file:line: field 'x': problem`` and skipped (the first line included), never a reason to refuse the whole file."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from corpora.errors import InputError, report_skipped
from corpora.jsonl import append_json_line, iter_json_lines, parse_model, repair_torn_tail
from corpora.paths import output_file
from corpora.records import Label
from corpora.run_folder import LABELS, RunFolder


def labels_path(run: str | Path | RunFolder) -> Path:
    folder = run if isinstance(run, RunFolder) else RunFolder(run)
    return folder.file(LABELS)


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


def add_label(run: str | Path | RunFolder, sample_id: str, metric: str, value: float, who: str, *,
              note: str | None = None, when: str | None = None) -> Label:
    """Validate one label (InputError naming the field when it is wrong) and append it."""
    fields = {"sample_id": sample_id, "metric": metric, "value": value, "who": who, "note": note}
    if when is not None:
        fields["when"] = when
    label = parse_model(Label, fields, "label", None)
    add_labels(run, [label])
    return label


def read_all_labels(run: str | Path | RunFolder, errors: list[InputError] | None = None) -> list[Label]:
    """Every valid label in file order. A bad line goes to ``errors`` when given, else is reported, and is skipped."""
    path = labels_path(run)
    if not path.exists():
        return []
    bad: list[InputError] = []
    out: list[Label] = []
    for lineno, obj in iter_json_lines(path, on_error=bad.append):
        try:
            out.append(parse_model(Label, obj, path, lineno))
        except InputError as exc:
            bad.append(exc)
    if errors is not None:
        errors.extend(bad)
    else:
        for e in bad:
            report_skipped(e)
    return out


def latest_labels(labels: Iterable[Label]) -> list[Label]:
    """The latest label per (sample, metric, who), in the order of each key's last line."""
    out: dict[tuple[str, str, str], Label] = {}
    for label in labels:
        out.pop(label.key, None)
        out[label.key] = label
    return list(out.values())


def read_labels(run: str | Path | RunFolder, errors: list[InputError] | None = None) -> list[Label]:
    """The labels in force: the latest per (sample, metric, who)."""
    return latest_labels(read_all_labels(run, errors))


def human_values(labels: Iterable[Label]) -> dict[str, dict[str, float]]:
    """metric -> {sample id: the mean of its labellers' values} (one labeller: that label)."""
    acc: dict[str, dict[str, list[float]]] = {}
    for label in latest_labels(labels):
        acc.setdefault(label.metric, {}).setdefault(label.sample_id, []).append(label.value)
    return {m: {sid: sum(v) / len(v) for sid, v in by.items()} for m, by in acc.items()}
