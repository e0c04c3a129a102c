"""Loaders for corpora and question sets: a BEIR folder, JSONL files, and a folder of .txt/.md files."""
from __future__ import annotations

import csv
from pathlib import Path

from corpora.errors import InputError, report_skipped, warn
from corpora.jsonl import parse_model, read_records
from corpora.records import Document, Question, relevant_docs

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
DOC_FIELDS = {"id", "text", "title", "metadata"}


def _report(errors: list[InputError] | None, err: InputError) -> None:
    if errors is not None:
        errors.append(err)
    else:
        report_skipped(err)


def _int_id(obj: dict) -> dict:
    """An integer id reads as its decimal string (ids are names; JSON exports often write numbers)."""
    rec_id = obj.get("id")
    return {**obj, "id": str(rec_id)} if isinstance(rec_id, int) and not isinstance(rec_id, bool) else obj


def unique_ids(path: str | Path, kind: str):
    """A parse step that refuses a second record with an id already seen (the first one is kept)."""
    seen: dict[str, int] = {}

    def check(rec_id: str, lineno: int) -> None:
        if rec_id in seen:
            raise InputError(path, f"duplicate {kind} id '{rec_id}' (first on line {seen[rec_id]}; this one is "
                                   "skipped)", line=lineno, field="id")
        seen[rec_id] = lineno

    return check


def load_documents_jsonl(path: str | Path, *, skip_empty: bool = False, skipped: list[str] | None = None,
                         errors: list[InputError] | None = None) -> list[Document]:
    """JSONL with ``id`` (or BEIR's ``_id``), ``text``, optional ``title`` and ``metadata``. A bad line (an empty text
    too, unless ``skip_empty``: then a titled document is kept with its title as text, an untitled one dropped) is
    reported and skipped; see corpora.jsonl.read_records."""
    unique = unique_ids(path, "document")

    def parse(obj: dict, lineno: int) -> Document | None:
        if "_id" in obj and "id" not in obj:  # BEIR's name for it; an integer reads as its decimal string (_int_id)
            obj = {"id": obj.pop("_id"), **obj}
        obj = _int_id(obj)
        extra = {k: v for k, v in obj.items() if k not in DOC_FIELDS}
        obj = {k: v for k, v in obj.items() if k in DOC_FIELDS}
        if extra:  # BEIR and other exports carry extra keys: keep them as metadata rather than reject them
            obj["metadata"] = {**(obj.get("metadata") or {}), **extra}
        doc = parse_model(Document, obj, path, lineno)
        if not doc.text.strip():
            if not skip_empty:
                raise InputError(path, "empty text", line=lineno, field="text")
            if not doc.title.strip():
                if skipped is not None:
                    skipped.append(doc.id)
                return None
            doc.text = doc.title
        unique(doc.id, lineno)
        return doc

    return read_records(path, parse, what="documents", errors=errors)


def load_documents_folder(folder: str | Path, errors: list[InputError] | None = None) -> list[Document]:
    """Every .txt/.md file under ``folder``; the id is the path relative to it, the title its first heading or line.
    An unreadable or empty file is reported and skipped."""
    folder = Path(folder)
    docs: list[Document] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES):
        try:
            data = path.read_bytes()
            text = data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark (Windows editors) is no text
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            _report(errors, InputError(path, f"not valid UTF-8 (byte {exc.start})", line=line))
            continue
        except OSError as exc:
            _report(errors, InputError(path, exc.strerror or str(exc)))
            continue
        if not text.strip():
            _report(errors, InputError(path, "empty file", field="text"))
            continue
        doc_id = path.relative_to(folder).as_posix()
        try:
            doc_id.encode("utf-8")
        except UnicodeEncodeError:  # bytes the file system holds that are no UTF-8 name: no id can be made of them
            _report(errors, InputError(str(path).encode("utf-8", "backslashreplace").decode("ascii", "replace"),
                                       "the file name is not valid UTF-8 (rename the file)"))
            continue
        first = text.strip().splitlines()[0].lstrip("# ").strip()
        docs.append(Document(id=doc_id, title=first[:200], text=text, metadata={"path": str(path)}))
    if not docs:
        raise InputError(folder, f"no readable {'/'.join(TEXT_SUFFIXES)} files found")
    return docs


def load_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (``query-id``, ``corpus-id``, ``score``, header line) -> {query: {doc: grade}}."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8-sig", newline="") as fh:  # -sig: a byte-order mark is not part of the header
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or (lineno == 1 and row[0].strip().lower() in {"query-id", "query_id", "qid"}):
                continue
            if len(row) < 3:
                raise InputError(path, f"expected 3 tab-separated columns, got {len(row)}", line=lineno)
            try:
                score = float(row[2])
            except ValueError:
                raise InputError(path, f"score '{row[2]}' is not a number", line=lineno, field="score") from None
            if not score.is_integer():  # a grade: 0.5 would read as 0 (not relevant), inf or nan as nothing
                raise InputError(path, f"score '{row[2]}' is not a whole-number relevance grade", line=lineno,
                                 field="score")
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = int(score)
    return qrels


def load_beir(folder: str | Path, split: str = "test", skipped: list[str] | None = None
              ) -> tuple[list[Document], list[Question]]:
    """A BEIR folder: corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv. Queries without qrels are dropped;
    documents with neither text nor title are dropped too (their ids go to ``skipped`` when given)."""
    folder = Path(folder)
    corpus = next((folder / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (folder / n).exists()), None)
    if corpus is None:
        raise InputError(folder, "not a BEIR folder: corpus.jsonl(.gz) not found")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        found = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").exists() else []
        raise InputError(qrels_path, f"qrels split '{split}' not found (available: {', '.join(found) or 'none'})")
    docs = load_documents_jsonl(corpus, skip_empty=True, skipped=skipped)  # public BEIR sets hold a few empty ones
    qrels = load_qrels(qrels_path)
    qpath = folder / "queries.jsonl"
    unique = unique_ids(qpath, "query")

    def parse(obj: dict, lineno: int) -> Question | None:
        qid = _int_id({"id": obj.get("_id", obj.get("id"))})["id"]
        if not isinstance(qid, str) or not qid.strip():
            raise InputError(qpath, "missing required field" if qid is None else f"must be a non-blank string or an "
                             f"integer, got {qid!r}", line=lineno, field="_id")
        unique(qid, lineno)  # a second query with one id would overwrite the first's ranking and count twice
        if qid not in qrels:
            return None
        relevant = relevant_docs(qrels[qid])
        return parse_model(Question, {"id": qid, "question": obj.get("text", ""), "relevant_doc_ids": relevant,
                                    "metadata": {"qrels": qrels[qid]}}, qpath, lineno)

    queries = read_records(qpath, parse, what="queries with qrels")
    missing = sorted(set(qrels) - {q.id for q in queries})
    if missing:  # labels for queries the file does not hold (or whose line was bad, reported above)
        warn(f"{qrels_path}: {len(missing)} query id(s) with qrels are not among the queries read from {qpath.name} "
             f"(first: {missing[0]!r}): left out")
    return docs, queries


def load_questions(path: str | Path, errors: list[InputError] | None = None) -> list[Question]:
    """A question set as JSONL of :class:`~corpora.records.Question` (id, question, reference, relevant_doc_ids). A bad
    line, or a second question with an id already used, is reported and skipped."""
    unique = unique_ids(path, "question")

    def parse(obj: dict, lineno: int) -> Question:
        s = parse_model(Question, _int_id(obj), path, lineno)
        unique(s.id, lineno)
        return s

    return read_records(path, parse, what="questions", errors=errors)


def load_corpus(source: str | Path, errors: list[InputError] | None = None) -> list[Document]:
    """Dispatch on what ``source`` is: a BEIR folder, a folder of text files, or a JSONL file."""
    source = Path(source)
    if source.is_dir():
        corpus = next((source / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (source / n).exists()), None)
        if corpus is None and (source / "qrels").is_dir():  # a BEIR folder's queries and qrels without its corpus
            raise InputError(source, "a BEIR folder (qrels/) without corpus.jsonl or corpus.jsonl.gz: its documents "
                                     "are missing (a folder of .txt/.md files has no qrels/)")
        return load_documents_jsonl(corpus, errors=errors) if corpus else load_documents_folder(source, errors)
    return load_documents_jsonl(source, errors=errors)
