"""Human-labelled judge test sets: loaders for their files, and the meta-evaluation tasks each set defines.

A *task* is one metric measured on one set. Its items are either labelled pairs ``(left, right, label)``, scored by
one signal of a Scorer (``support``: evidence vs the judged text; ``relevance``: question vs passage), or contrast
items ``(evidence, good, bad)`` where the judge must score ``good`` above ``bad`` (HaluEval).

Formats (one JSON object a line; other fields are not read, and said in one warning per file: every field of a jsonl
row, and in the public formats a field such as ``task`` or ``metric`` that looks meant to select something):
  ares      question, context (or document), answer, and 0/1 context_relevant, faithful, answer_relevant
  wice      claim, evidence (list of sentences), label supported / partially_supported / not_supported
  halueval  knowledge, question, right_answer, hallucinated_answer
  jsonl     evidence (text or list of sentences), text, label (0/1, or a grade in [0, 1]); optional id, and group
            (rows that share a source document: the bootstrap resamples whole groups, and the dev/test split keeps
            each group on one side; a string or an integer, compared as text: 1 and "1" are one group)

A row without an id gets ``<dataset>:<line>`` (WiCE: its ``meta.id``), never one another row gives explicitly (then
``<dataset>:<line>#2``).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, StrictInt, StrictStr

from corpora.errors import InputError, warn
from corpora.jsonl import parse_model, read_records
from corpora.loaders import UniqueIds
from corpora.records import not_blank

DATASETS = ("ares", "wice", "halueval", "jsonl")
TASK_METRICS = ("groundedness", "context_relevance", "answer_relevance")  # what a Task can calibrate
DEFAULT_FILES = {"ares": "ares/dev.jsonl", "wice": "wice/dev.jsonl", "halueval": "halueval/qa_dev.jsonl"}
WICE_GRADES = {"not_supported": 0.0, "partially_supported": 0.5, "supported": 1.0}

# strict: a label is a number as written, never a bool or a string that happens to convert ("1", true)
Binary = Annotated[int, Field(ge=0, le=1, strict=True)]
Grade = Annotated[float, Field(ge=0.0, le=1.0, strict=True)]
Text = Annotated[str, Field(strict=True), AfterValidator(not_blank)]  # a text to judge: something in it
Signal = Literal["support", "relevance"]
Kind = Literal["binary", "graded", "pairwise"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    id: StrictStr | StrictInt | None = None  # strict: true is no id 1


def _some_sentence(v: list[str]) -> list[str]:
    if not any(s.strip() for s in v):
        raise ValueError("has no sentence with text in it")
    return v


Sentences = Annotated[list[Annotated[str, Field(strict=True)]], AfterValidator(_some_sentence)]  # blank ones dropped


class AresRecord(_Record):
    question: Text
    context: Text = Field(validation_alias=AliasChoices("context", "document"))
    answer: Text
    context_relevant: Binary
    faithful: Binary
    answer_relevant: Binary


class WiceRecord(_Record):
    claim: Text
    evidence: Sentences
    label: Literal["supported", "partially_supported", "not_supported"]
    meta: dict = Field(default_factory=dict)


class HaluEvalRecord(_Record):
    knowledge: Text
    question: Text
    right_answer: Text
    hallucinated_answer: Text


class JsonlRecord(_Record):
    evidence: Text | Sentences
    text: Text
    label: Grade
    group: StrictStr | StrictInt | None = None  # rows sharing a source document (e.g. ten summaries of one article)


RECORD_TYPES: dict[str, type[_Record]] = {"ares": AresRecord, "wice": WiceRecord, "halueval": HaluEvalRecord,
                                          "jsonl": JsonlRecord}


@dataclass(frozen=True)
class LabelledItem:
    id: str
    left: str  # evidence (support) or question (relevance)
    right: str  # the judged text: answer, claim or passage
    label: float  # 0/1, or a grade in [0, 1]
    question: str = ""  # where the set has one: whole-metric judges (ragas) score (question, context, answer) samples
    answer: str = ""  # the answer that came with a context (ARES context relevance)
    # rows sharing a source document resample together and stay on one side of the dev/test split ("" = the row
    # alone); as the file gave it (an integer stays one in scores.jsonl), compared as text (meta_eval.group_key)
    group: str | int = ""


@dataclass(frozen=True)
class ContrastItem:
    id: str
    evidence: str
    good: str
    bad: str
    question: str = ""
    group: str | int = ""


@dataclass
class Task:
    dataset: str
    metric: str  # the project metric being calibrated: groundedness, context_relevance, answer_relevance
    label: str  # the human label it is measured against
    signal: Signal
    kind: Kind
    items: list = field(default_factory=list)  # LabelledItem, or ContrastItem when kind == "pairwise"


def default_path(dataset: str, data_root: str | Path) -> Path | None:
    """Where a public set lives under the shared data folder (None for the generic jsonl format)."""
    rel = DEFAULT_FILES.get(dataset)
    return Path(data_root) / rel if rel else None


# fields that name a task, metric or judge: a row carrying one looks meant to pick something, which no row does
SELECTOR_FIELDS = frozenset({"task", "metric", "metrics", "judge", "judges", "dataset", "kind", "signal", "split"})


def read_fields(model: type[_Record]) -> set[str]:
    """The top-level fields a record type reads (its aliases included: ARES's ``document``)."""
    out: set[str] = set()
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        out.update(alias.choices if isinstance(alias, AliasChoices) else [name])
    return {str(f) for f in out}


def load_records(dataset: str, path: str | Path, errors: list[InputError] | None = None) -> list[_Record]:
    """Every valid record of ``path``. A bad line is reported (``file:line: field 'x': problem``, into ``errors`` when
    given) and skipped, as eval does; a file with no valid record raises InputError. Ids are unique (an item's scores
    and group are kept by its id); a row without one gets a default id no other row gives (``_default_ids``). Fields
    the format does not read are named in one warning (``_say_unread``)."""
    if dataset not in RECORD_TYPES:
        raise InputError(path, f"unknown dataset '{dataset}' (choose from {', '.join(DATASETS)})", field="dataset")
    model = RECORD_TYPES[dataset]
    known = read_fields(model)
    unique = UniqueIds(path, "record")  # explicit ids (and WiCE's meta.id standing in for one)
    unread: dict[str, int] = {}  # a field no record type reads -> on how many lines

    def parse(obj: dict, lineno: int) -> tuple[int, _Record]:
        rec = parse_model(model, obj, path, lineno)
        for key in obj.keys() - known:
            unread[key] = unread.get(key, 0) + 1
        given, where = (rec.id, "id") if rec.id is not None else (_meta_id(dataset, rec), "meta.id")
        if given is not None:
            unique(str(given), lineno, field=where)
            rec = rec if rec.id is not None else rec.model_copy(update={"id": str(given)})
        return lineno, rec

    found = read_records(path, parse, what="records", errors=errors)
    _say_unread(dataset, path, unread, sorted(known))
    return _default_ids(dataset, found, set(unique.seen))


def _meta_id(dataset: str, rec: _Record) -> str | None:
    meta_id = getattr(rec, "meta", {}).get("id") if dataset == "wice" else None
    return str(meta_id) if meta_id else None


def _default_ids(dataset: str, found: list[tuple[int, _Record]], taken: set[str]) -> list[_Record]:
    """The records, each without an id given ``<dataset>:<line>``, or, where another row gives that id explicitly
    (anywhere in the file), ``<dataset>:<line>#2`` (#3, ...): a default id never collides, so no row is refused as a
    duplicate of an id it does not have."""
    out = []
    for lineno, rec in found:
        if rec.id is None:
            rec_id, k = f"{dataset}:{lineno}", 2
            while rec_id in taken:
                rec_id, k = f"{dataset}:{lineno}#{k}", k + 1
            taken.add(rec_id)
            rec = rec.model_copy(update={"id": rec_id})
        out.append(rec)
    return out


def _say_unread(dataset: str, path: str | Path, unread: dict[str, int], known: list[str]) -> None:
    """One warning naming the fields of ``path`` the format does not read: all of them for the generic jsonl format
    (the user's own file: a misspelt ``lable`` or a ``task`` column must not pass in silence), and in the public
    formats those that look meant to select a task, metric or judge (their other extra columns are the set's own)."""
    shown = sorted(k for k in unread if dataset == "jsonl" or k.lower() in SELECTOR_FIELDS)
    if not shown:
        return
    names = ", ".join(f"'{k}' ({unread[k]} line{'s' * (unread[k] != 1)})" for k in shown[:10])
    names += f" and {len(shown) - 10} more" if len(shown) > 10 else ""
    picks = [k for k in shown if k.lower() in SELECTOR_FIELDS]
    why = (f"; rows are not selected by {', '.join(repr(k) for k in picks)}: every row is measured as each of the "
           "set's tasks (--metric picks tasks, --judge judges)") if picks else ""
    warn(f"{path}: field(s) {names} not read by --dataset {dataset} (it reads {', '.join(known)}): ignored{why}")


def subsample(records: Sequence, n: int | None, seed: int = 0) -> list:
    """A seeded random subset of ``n`` records, in file order (all of them when ``n`` is None or too large)."""
    if n is None or n >= len(records):
        return list(records)
    keep = np.sort(np.random.default_rng(seed).choice(len(records), size=max(n, 0), replace=False))
    return [records[i] for i in keep]


def evidence_text(evidence: str | Sequence[str]) -> str:
    """Evidence sentences as one passage: each sentence its own paragraph, so sentence splitting keeps them apart."""
    if isinstance(evidence, str):
        return evidence
    return "\n\n".join(s.strip() for s in evidence if s.strip())


def build_tasks(dataset: str, records: Sequence[_Record]) -> list[Task]:
    builder = {"ares": _ares_tasks, "wice": _wice_tasks, "halueval": _halueval_tasks, "jsonl": _jsonl_tasks}[dataset]
    return builder(list(records))


def _doc_key(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def _ares_tasks(records: list[AresRecord]) -> list[Task]:
    def items(left, right, label) -> list[LabelledItem]:  # rows that share a document resample together
        return [LabelledItem(str(r.id), left(r), right(r), float(label(r)), r.question, r.answer,
                             _doc_key(r.context)) for r in records]

    return [
        Task("ares", "context_relevance", "context_relevant", "relevance", "binary",
             items(lambda r: r.question, lambda r: r.context, lambda r: r.context_relevant)),
        Task("ares", "groundedness", "faithful", "support", "binary",
             items(lambda r: r.context, lambda r: r.answer, lambda r: r.faithful)),
        Task("ares", "answer_relevance", "answer_relevant", "relevance", "binary",
             items(lambda r: r.question, lambda r: r.answer, lambda r: r.answer_relevant)),
    ]


def _wice_tasks(records: list[WiceRecord]) -> list[Task]:
    items = [LabelledItem(str(r.id), evidence_text(r.evidence), r.claim, WICE_GRADES[r.label],
                          group=str(r.meta.get("claim_title") or "")) for r in records]  # one article, one group
    return [Task("wice", "groundedness", "label", "support", "graded", items)]


def _halueval_tasks(records: list[HaluEvalRecord]) -> list[Task]:
    items = [ContrastItem(str(r.id), r.knowledge, r.right_answer, r.hallucinated_answer, r.question,
                          _doc_key(r.knowledge)) for r in records]
    return [Task("halueval", "groundedness", "right_answer > hallucinated_answer", "support", "pairwise", items)]


def _jsonl_tasks(records: list[JsonlRecord]) -> list[Task]:
    items = [LabelledItem(str(r.id), evidence_text(r.evidence), r.text, float(r.label),
                          group="" if r.group is None else r.group) for r in records]  # as given: 1 stays 1
    graded = any(i.label not in (0.0, 1.0) for i in items)
    return [Task("jsonl", "groundedness", "label", "support", "graded" if graded else "binary", items)]


def load_tasks(dataset: str, path: str | Path, *, limit: int | None = None, seed: int = 0,
               records: list[_Record] | None = None) -> tuple[list[Task], int]:
    """The tasks of ``path`` on a seeded subsample of ``limit`` records, and how many records the file holds
    (``records``: the file already read, e.g. a pipe that cannot be read twice)."""
    records = load_records(dataset, path) if records is None else records
    return build_tasks(dataset, subsample(records, limit, seed)), len(records)
