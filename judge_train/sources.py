"""The training pool's sources: what each file is, its licence, how its labels map to 0/1, and a reader for it.

Every file of ``shared/data/train`` (see its README and each folder's SOURCE.md) is read into ``PoolRecord``s: one
(evidence, text, 0/1 label) with the source's own label kept as ``detail``. Sources come in three kinds:

  claim      texts judged against evidence by people or by construction (answers, dialogue turns, claims, long answers)
  nli        general entailment pairs (premise, hypothesis): atomic already, short premises, used as they are
  relevance  (question, passage) -> does the passage bear on / answer the question (context relevance, reranking)

The dev files (ares, wice, halueval/qa_dev) are not sources: they are never trained on.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from corpora.errors import InputError

R = TypeVar("R")

SourceKind = Literal["claim", "nli", "relevance"]


@dataclass(frozen=True)
class SourceInfo:
    name: str
    paths: tuple[str, ...]  # relative to the data dir; folders are read whole
    licence: str
    origin: str
    labels: str  # how the source's labels map to supported / relevant (1) and not (0)
    kind: SourceKind = "claim"


@dataclass(frozen=True)
class PoolRecord:
    """One labelled (evidence, text) pair from a training file. For relevance sources ``evidence`` is the passage and
    ``text`` the question."""

    source: str
    group: str  # split key: records that share evidence or a claim share a group, so never straddle the split
    evidence: str
    text: str
    label: int  # 1 supported by (relevant to) the evidence, 0 not
    detail: str  # the source's own label
    question: str | None = None


SHARE_ALIKE = "CC BY-SA"
SOURCES: dict[str, SourceInfo] = {
    "halueval_qa": SourceInfo(
        "halueval_qa", ("halueval_qa_train.jsonl",), "MIT", "RUCAIBox/HaluEval (QA, rows not in the dev file)",
        "right_answer -> 1, hallucinated_answer -> 0 (by construction)"),
    "halueval_dialogue": SourceInfo(
        "halueval_dialogue", ("halueval_dialogue.jsonl",), "MIT", "RUCAIBox/HaluEval (dialogue)",
        "right_response -> 1, hallucinated_response -> 0 (by construction)"),
    "factcheck_gpt": SourceInfo(
        "factcheck_gpt", ("factcheck_gpt_stance.jsonl",), "Apache-2.0", "yuxiaw/Factcheck-GPT (claim-evidence stance)",
        "completely-support -> 1; refute, irrelevant -> 0; partially-support dropped (configurable)"),
    "begin": SourceInfo(
        "begin", ("begin",), "CC BY 4.0 (WoW, CMU-DoG), CDLA-Sharing-1.0 (TopicalChat)",
        "google/BEGIN-dataset (dev)", "Fully attributable -> 1; Not fully attributable -> 0; Generic dropped"),
    "faithdial": SourceInfo(
        "faithdial", ("faithdial_audit",), "MIT", "McGill-NLP/FaithDial (BEGIN-taxonomy audit)",
        "Entailment (also with Uncooperative) -> 1; Hallucination, Partial Hallucination, entailment+hallucination -> 0; "
        "Generic and Uncooperative-only dropped"),
    "dialfact": SourceInfo(
        "dialfact", ("dialfact_small.jsonl",), "BSD-3-Clause", "salesforce/DialFact (small)",
        "SUPPORTS -> 1; REFUTES, NOT ENOUGH INFO -> 0"),
    "attributionbench": SourceInfo(
        "attributionbench", ("attributionbench",), "Apache-2.0 (sub-sources MIT / Apache-2.0; evidence web text)",
        "OSU-NLP-Group/AttributionBench (HAGRID, Stanford-GenSearch, AttrScore-GenSearch)",
        "attributable -> 1; not attributable -> 0 (claim vs the joined references)"),
    "mnli": SourceInfo(
        "mnli", ("mnli_dev",), "OANC + CC BY 3.0 / CC BY-SA 3.0 (MultiNLI); carrier BSD-3-Clause (DocNLI)",
        "nyu-mll/multi_nli dev (matched 3-way, mismatched binary)", "entailment -> 1; neutral, contradiction, "
        "not_entailment -> 0", "nli"),
    "snli": SourceInfo(
        "snli", ("snli_dev",), "CC BY-SA 4.0", "stanfordnlp/snli dev", "entailment -> 1; neutral, contradiction -> 0",
        "nli"),
    "cad_snli": SourceInfo(
        "cad_snli", ("cad_snli",), "Apache-2.0 (text from SNLI, CC BY-SA 4.0)",
        "acmi-lab/counterfactually-augmented-data (SNLI, human-edited to flip the label)",
        "entailment -> 1; neutral, contradiction -> 0", "nli"),
    "scitail": SourceInfo(
        "scitail", ("scitail_test",), "Apache-2.0", "allenai/scitail (test)", "entails -> 1; neutral -> 0", "nli"),
    "qnli": SourceInfo(
        "qnli", ("qnli_dev",), "CC BY-SA 4.0 (from SQuAD)", "GLUE QNLI dev",
        "the sentence answers the question -> 1; not -> 0", "relevance"),
    "nomiracl": SourceInfo(
        "nomiracl", ("nomiracl_en",), "Apache-2.0 (passages Wikipedia, CC BY-SA)", "project-miracl/nomiracl (English test)",
        "human-judged non-relevant retrieved passages -> 0 (pairs); a set with an answer-bearing passage -> 1 "
        "(set level: which passage is not given, so sets are used only to measure, never as positive pairs)",
        "relevance"),
}
NLI_SOURCES = frozenset(n for n, s in SOURCES.items() if s.kind == "nli")
RELEVANCE_SOURCES = frozenset(n for n, s in SOURCES.items() if s.kind == "relevance")
CLAIM_SOURCES = frozenset(n for n, s in SOURCES.items() if s.kind == "claim")


def _h(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def norm_text(text: str) -> str:
    """Lower-cased words joined by one space: the key for duplicate and overlap checks."""
    return " ".join(re.findall(r"\w+", text.lower()))


_AT: ContextVar[tuple[Path, int | None] | None] = ContextVar("pool_position", default=None)  # the line being read


def _jsonl(path: Path) -> Iterator[dict]:
    """The objects of a JSON-lines pool file (``.gz`` too; a byte-order mark and CRLF line ends are read; bytes that are
    not UTF-8, NaN and bad JSON are an InputError naming the file and line, as for every other input file: corpora.jsonl);
    where each came from is kept for ``located``'s message."""
    from corpora.jsonl import iter_json_lines  # noqa: PLC0415 - corpora.jsonl imports pydantic

    for lineno, obj in iter_json_lines(path):
        _AT.set((path, lineno))
        yield obj


def _bad(problem: str, field: str) -> InputError:
    """A pool line whose ``field`` is wrong, at the line being read (a user's own file must not lose rows in silence)."""
    at_path, line = _AT.get() or (Path("?"), None)
    return InputError(at_path, problem, line=line, field=field)


def _label(r: dict, labels: dict[str, int]) -> int:
    """``label_binary`` of a row of the general formats (NLI, relevance, attribution), as 1 / 0; any other value is
    refused, naming the values it may take."""
    value = r.get("label_binary")
    if not isinstance(value, str) or value not in labels:
        raise _bad(f"must be {' or '.join(repr(k) for k in labels)}, got {json.dumps(value)}", "label_binary")
    return labels[value]


def _text(r: dict, key: str) -> str:
    """A required text field, stripped; missing, not a string or blank is refused."""
    value = r.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _bad("missing, not a string or blank" if not isinstance(value, str) else "blank", key)
    return value.strip()


def located(read: Callable[[], Iterable[R]], path: Path) -> list[R]:
    """Every record ``read`` yields; a damaged pool line (a field missing or of the wrong type, bad JSON, a file
    that cannot be read) is an InputError naming the file and line, never an internal error without a place."""
    _AT.set((path, None))
    try:
        return list(read())
    except InputError:
        raise
    except KeyError as exc:
        at_path, line = _AT.get() or (path, None)
        raise InputError(at_path, "missing required field", line=line, field=str(exc.args[0]) if exc.args else None
                         ) from None
    except (TypeError, AttributeError, ValueError, UnicodeDecodeError, OSError) as exc:
        at_path, line = _AT.get() or (path, None)
        raise InputError(at_path, f"a field is missing or of the wrong type ({type(exc).__name__}: "
                                  f"{' '.join(str(exc).split())})", line=line) from None


def _files(folder: Path, pattern: str = "*.jsonl") -> list[Path]:
    """The files of a source folder matching ``pattern`` (gzipped ones too); a folder with none is refused (a source
    that gives no record would train on nothing from it, in silence)."""
    if not folder.is_dir():
        return [folder]
    found = sorted({*folder.glob(pattern), *folder.glob(pattern + ".gz")})
    if not found:
        raise InputError(folder, f"no {pattern} (or {pattern}.gz) file in this source folder")
    return found


# ------------------------------------------------------------------------------------------------ claim sources


def read_halueval_qa(path: Path) -> Iterator[PoolRecord]:
    for r in _jsonl(path):
        g = f"hqa:{_h(r['knowledge'])}"
        yield PoolRecord("halueval_qa", g, r["knowledge"].strip(), r["right_answer"], 1, "right", r["question"])
        yield PoolRecord("halueval_qa", g, r["knowledge"].strip(), r["hallucinated_answer"], 0, "hallucinated", r["question"])


def read_halueval_dialogue(path: Path) -> Iterator[PoolRecord]:
    for r in _jsonl(path):
        g = f"hdl:{_h(r['knowledge'])}"
        yield PoolRecord("halueval_dialogue", g, r["knowledge"].strip(), r["right_response"], 1, "right")
        yield PoolRecord("halueval_dialogue", g, r["knowledge"].strip(), r["hallucinated_response"], 0, "hallucinated")


FACTCHECK_LABELS = {"completely-support": 1, "refute": 0, "irrelevant": 0, "partially-support": None}


def read_factcheck(path: Path, *, partial_as: int | None = None) -> Iterator[PoolRecord]:
    for r in _jsonl(path):
        stance = r["stance"]
        label = FACTCHECK_LABELS.get(stance, None)
        if stance == "partially-support":
            label = partial_as
        if label is None or not r["evidence"].strip():
            continue
        yield PoolRecord("factcheck_gpt", f"fc:{_h(norm_text(r['claim']))}", r["evidence"].strip(), r["claim"], label,
                         stance)


BEGIN_LABELS = {"fully attributable": 1, "not fully attributable": 0}


def read_begin(folder: Path) -> Iterator[PoolRecord]:
    import pandas as pd

    for path in sorted(folder.glob("*.tsv")):
        df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
        for r in df.itertuples(index=False):
            label = BEGIN_LABELS.get(str(r.begin_label).strip().lower())
            if label is None or not r.knowledge.strip() or not r.response.strip():
                continue
            yield PoolRecord("begin", f"begin:{_h(norm_text(r.knowledge))}", r.knowledge.strip(), r.response.strip(),
                             label, f"{r.begin_label} ({r.model_name}/{r.data_source})")


def faithdial_label(raw: str) -> int | None:
    """Map FaithDial's BEGIN-taxonomy label text (gold and model audit spellings) to 1 / 0 / None (dropped)."""
    tags = {t.strip() for t in re.split(r"[,.]", raw.lower().replace("entailmentt", "entailment")) if t.strip()}
    tags = {"hallucination" if t in ("hallucinated", "partial hallucination") else t for t in tags}
    if "hallucination" in tags:
        return 0
    if "entailment" in tags:
        return 1
    return None  # generic, uncooperative alone, empty


def read_faithdial(folder: Path) -> Iterator[PoolRecord]:
    import pandas as pd

    for path in sorted(folder.glob("*/*.csv")):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        cols = list(df.columns)
        if "BEGIN" in cols:  # gold: evidence, history, response, BEGIN, VRM
            ev_col, resp_col, lab_col = "evidence", "response", "BEGIN"
        else:  # model audit: knowledge, history, <model>, begin_label, vrm_label
            ev_col, resp_col, lab_col = "knowledge", cols[2], "begin_label"
        for r in df.to_dict("records"):
            label = faithdial_label(r[lab_col])
            ev, resp = r[ev_col].strip(), r[resp_col].strip()
            if label is None or not ev or not resp:
                continue
            yield PoolRecord("faithdial", f"fd:{_h(norm_text(ev)[:300])}", ev, resp, label,
                             f"{r[lab_col]} ({path.parent.name}/{path.stem})")


DIALFACT_LABELS = {"SUPPORTS": 1, "REFUTES": 0, "NOT ENOUGH INFO": 0}


def _dialfact_evidence(text: str) -> str:
    return re.sub(r"\s*title:\s*(.*?)\s*content:\s*", lambda m: f" {m.group(1)}: ", text).strip()


def read_dialfact(path: Path) -> Iterator[PoolRecord]:
    for r in _jsonl(path):
        label = DIALFACT_LABELS.get(r.get("response_label", ""))
        ev = _dialfact_evidence(r.get("evidence_touse") or " ".join(e[2] for e in r.get("evidence_list", [])))
        if label is None or not ev or not r["response"].strip():
            continue
        yield PoolRecord("dialfact", f"df:{r.get('context_id') or _h(ev)}", ev, r["response"].strip(), label,
                         r["response_label"])


def _references(raw) -> list[str]:
    """AttributionBench's ``references``: a list, or a list written as a Python literal string."""
    if isinstance(raw, list):
        return [str(x) for x in raw]
    if isinstance(raw, str):
        try:
            value = ast.literal_eval(raw)
            return [str(x) for x in value] if isinstance(value, list) else [raw]
        except (ValueError, SyntaxError):
            return [raw]
    return []


def read_attributionbench(folder: Path) -> Iterator[PoolRecord]:
    for path in _files(folder):
        for r in _jsonl(path):
            refs = [s.strip() for s in _references(r.get("references")) if s and s.strip()]
            label = _label(r, {"supported": 1, "not_supported": 0})
            if label is None or not refs or not r.get("claim", "").strip():
                continue
            yield PoolRecord("attributionbench", f"ab:{_h(norm_text(r['claim']))}", "\n\n".join(refs),
                             r["claim"].strip(), label, f"{r['label']} ({r['source'].split('/')[-1]})",
                             r.get("question"))


# -------------------------------------------------------------------------------------------------- NLI sources


def read_nli(name: str, folder: Path) -> Iterator[PoolRecord]:
    for path in _files(folder):
        for r in _jsonl(path):
            label = _label(r, {"supported": 1, "not_supported": 0})
            premise, hyp = _text(r, "premise"), _text(r, "hypothesis")
            yield PoolRecord(name, f"{name}:{_h(norm_text(premise))}", premise, hyp, label,
                             str(r.get("label", r["label_binary"])))


# -------------------------------------------------------------------------------------------- relevance sources


def read_qnli(folder: Path) -> Iterator[PoolRecord]:
    for path in _files(folder):
        for r in _jsonl(path):
            label = _label(r, {"relevant": 1, "not_relevant": 0})
            q, passage = _text(r, "question"), _text(r, "passage")
            yield PoolRecord("qnli", f"qnli:{_h(norm_text(q))}", passage, q, label,
                             str(r.get("label", r["label_binary"])), q)


def read_nomiracl_pairs(folder: Path) -> Iterator[PoolRecord]:
    """The human-judged non-relevant (question, passage) pairs: hard negatives, retrieved and then judged."""
    for path in _files(folder, "*nonrelevant_pairs.jsonl"):
        for r in _jsonl(path):
            q = r["question"].strip()
            yield PoolRecord("nomiracl", f"nomiracl:{_h(norm_text(q))}", r["passage"].strip(), q, 0, r["label"], q)


@dataclass(frozen=True)
class PassageSet:
    """A question with retrieved passages and a set-level label (1: some passage answers it)."""

    source: str
    group: str
    question: str
    passages: tuple[str, ...]
    label: int


def read_nomiracl_sets(folder: Path) -> list[PassageSet]:
    def read() -> Iterator[PassageSet]:
        for path in _files(folder, "*sets.jsonl"):
            for r in _jsonl(path):
                q = r["question"].strip()
                yield PassageSet("nomiracl", f"nomiracl:{_h(norm_text(q))}", q,
                                 tuple(p["text"] for p in r["passages"] if p.get("text", "").strip()),
                                 1 if r["label"] == "answer_present" else 0)
    return located(read, folder)


# ---------------------------------------------------------------------------------------------------- dispatch


def read_source(name: str, data_dir: Path, *, partial_as: int | None = None) -> list[PoolRecord]:
    if name not in SOURCES:
        raise ValueError(f"unknown training source '{name}' (known: {', '.join(SOURCES)})")
    path = data_dir / SOURCES[name].paths[0]
    readers = {
        "halueval_qa": lambda: read_halueval_qa(path), "halueval_dialogue": lambda: read_halueval_dialogue(path),
        "factcheck_gpt": lambda: read_factcheck(path, partial_as=partial_as), "begin": lambda: read_begin(path),
        "faithdial": lambda: read_faithdial(path), "dialfact": lambda: read_dialfact(path),
        "attributionbench": lambda: read_attributionbench(path), "qnli": lambda: read_qnli(path),
        "nomiracl": lambda: read_nomiracl_pairs(path),
    }
    reader = readers.get(name) or (lambda: read_nli(name, path))
    return located(reader, path)


def source_files(name: str, data_dir: Path) -> list[Path]:
    out: list[Path] = []
    for rel in SOURCES[name].paths:
        p = data_dir / rel
        out.extend(sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p])
    return out
