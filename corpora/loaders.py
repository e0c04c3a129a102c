"""Loaders for corpora and question sets: a BEIR folder, JSONL files, and a folder of .txt/.md files."""
from __future__ import annotations

import codecs
import csv
import difflib
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from corpora.errors import InputError, report_or_collect, warn
from corpora.jsonl import none_valid, parse_model, read_records
from corpora.records import Document, Question, relevant_docs, says_something

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
DOC_FIELDS = {"id", "text", "title", "metadata"}
JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
              bool: "true or false", type(None): "null"}


def _int_id(obj: dict) -> dict:
    """An integer id reads as its decimal string (ids are names; JSON exports often write numbers)."""
    rec_id = obj.get("id")
    return {**obj, "id": str(rec_id)} if isinstance(rec_id, int) and not isinstance(rec_id, bool) else obj


class UniqueIds:
    """A parse step that refuses a second record with an id already seen (the first one is kept); ``seen``: each id
    taken, and its line. ``field``: the field that gave the id (WiCE's ``meta.id`` stands in for one)."""

    def __init__(self, path: str | Path, kind: str):
        self.path, self.kind = path, kind
        self.seen: dict[str, int] = {}

    def __call__(self, rec_id: str, lineno: int, field: str = "id") -> None:
        if rec_id in self.seen:
            raise InputError(self.path, f"duplicate {self.kind} id '{rec_id}' (first on line {self.seen[rec_id]}; this "
                                        "one is skipped)", line=lineno, field=field)
        self.seen[rec_id] = lineno


def load_documents_jsonl(path: str | Path, *, skip_empty: bool = False, skipped: list[str] | None = None,
                         errors: list[InputError] | None = None) -> list[Document]:
    """JSONL with ``id`` (or BEIR's ``_id``), ``text``, optional ``title`` and ``metadata`` (an object). A bad line (an
    empty text too, one with no letter or digit, unless ``skip_empty``: then a titled document is kept with its title
    as text, an untitled one dropped, its id added to ``skipped`` or, without that list, counted in one warning) is
    reported and skipped; see corpora.jsonl.read_records. Other keys are kept in ``metadata`` (never over a key of
    metadata's own) and named in one warning per file: a typo such as ``tittle`` is not silently read as metadata."""
    unique = UniqueIds(path, "document")
    unknown: set[str] = set()
    lines_unknown = 0  # lines with an unknown key
    shadowed: set[str] = set()  # unknown keys metadata also has (its own value is kept)
    dropped: list[str] = []

    def parse(obj: dict, lineno: int) -> Document | None:
        nonlocal lines_unknown
        if "_id" in obj and "id" not in obj:  # BEIR's name for it; an integer reads as its decimal string (_int_id)
            obj = {"id": obj.pop("_id"), **obj}
        obj = _int_id(obj)
        title = obj.get("title")
        if skip_empty and obj.get("text") is None and isinstance(title, str) and says_something(title):
            obj = {**obj, "text": ""}  # BEIR: a title whose text is absent or null is read as "" is (the title as text)
        if obj.get("metadata", {}) is None:  # an export's "metadata": null is no metadata
            obj = {k: v for k, v in obj.items() if k != "metadata"}
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise InputError(path, f"must be a JSON object, got {JSON_TYPES.get(type(obj['metadata']), 'a value')}",
                             line=lineno, field="metadata")
        extra = {k: v for k, v in obj.items() if k not in DOC_FIELDS}
        obj = {k: v for k, v in obj.items() if k in DOC_FIELDS}
        if extra:  # BEIR and other exports carry extra keys: keep them as metadata (its own keys first) and say so
            own = obj.get("metadata", {})
            shadowed.update(k for k in extra if k in own)
            unknown.update(extra)
            lines_unknown += 1
            obj["metadata"] = {**extra, **own}
        doc = parse_model(Document, obj, path, lineno)
        if not says_something(doc.text):  # "", " ", "\u200b", "\u0000", "---": nothing a retriever or judge can read
            if not skip_empty:
                raise InputError(path, "empty text (no letter or digit)", line=lineno, field="text")
            if not says_something(doc.title):
                (skipped if skipped is not None else dropped).append(doc.id)
                return None
            doc.text = doc.title
        unique(doc.id, lineno)
        return doc

    docs = read_records(path, parse, what="documents", errors=errors)
    if unknown:
        names = ", ".join(f"'{k}'" + _did_you_mean(k) for k in sorted(unknown)[:10])
        names += f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        kept = f" (where metadata has the key too, its own value: {', '.join(sorted(shadowed))})" if shadowed else ""
        warn(f"{path}: unknown field(s) {names} on {lines_unknown} line(s) (a document has id, text, "
             f"title, metadata): kept in each document's metadata{kept}")
    if dropped:
        warn(f"{path}: {len(dropped)} document(s) with neither text nor title left out (first: {dropped[0]!r})")
    return docs


def _did_you_mean(key: str) -> str:
    close = difflib.get_close_matches(key, sorted(DOC_FIELDS), n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


ATX_HEADING = re.compile(r" {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")  # CommonMark: "# Title", "## Title ##"
FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")  # any indent: a fence in a nested list item is indented by 4 or more
HTML_COMMENT = re.compile(r" {0,3}<!--")  # CommonMark's HTML block of kind 2: up to the line holding "-->"
FRONT_TITLE = re.compile(r"title:[ \t]*(.*?)[ \t]*$")


def _front_matter_title(lines: list[str]) -> str | None:
    """``title:`` of YAML front matter's lines (a plain or quoted scalar), or None."""
    for line in lines:
        m = FRONT_TITLE.match(line)
        if m:
            value = m.group(1)
            if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            else:
                value = value.split(" #", 1)[0]  # a YAML comment
            return value.strip() if says_something(value) and value not in ("|", ">") else None
    return None


def _front_matter_end(lines: list[str]) -> int | None:
    """The index of the line that closes YAML front matter ("---" or "...") when the first line opens it ("---"),
    else None (no front matter: a "---" later in the file is a horizontal rule, an unclosed one is text)."""
    if not lines or lines[0].strip() != "---":
        return None
    return next((i for i, line in enumerate(lines[1:], start=1) if line.strip() in ("---", "...")), None)


FRONT_KEY = re.compile(r"([A-Za-z0-9_][\w.-]*):(?:[ \t]+(.*?))?[ \t]*$")


def _front_matter_fields(lines: list[str]) -> dict[str, str] | str:
    """Front matter's ``key: value`` lines as strings (a value quoted whole without its quotes, a ``# comment`` after
    a plain one left out; ``tags: [a, b]`` stays the string "[a, b]"); blank and comment lines skipped. Where any line
    is something else (a nested or multi-line value, a list item, an anchor, a key given twice), the block as it is
    written (no YAML parser: a string, never a guess)."""
    fields: dict[str, str] = {}
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = FRONT_KEY.match(line)
        value = (m.group(2) or "") if m else ""
        if not m or m.group(1) in fields or value[:1] in ("|", ">", "&", "*", "!"):
            return "\n".join(lines)
        if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif value[:1] in ("'", '"'):  # a quoted value that goes on to the next line
            return "\n".join(lines)
        else:
            value = value.split(" #", 1)[0].rstrip()
        fields[m.group(1)] = value
    return fields


def _front_matter(text: str) -> tuple[dict[str, str] | str | None, str]:
    """A Markdown file's YAML front matter (see _front_matter_fields; None without any) and its text after it."""
    lines = text.splitlines(keepends=True)
    end = _front_matter_end(lines)
    if end is None:
        return None, text
    return _front_matter_fields([line.rstrip("\n") for line in lines[1:end]]), "".join(lines[end + 1:])


def _fence_after(fence: str | None, line: str) -> str | None:
    """The code fence open after ``line`` (``fence``: the one open before it, None outside code): a fence line opens
    one (a backtick fence's info string holds no backtick: "```x```" is inline code), and closes the open one when it
    is of the same character, at least as long and with nothing after it."""
    m = FENCE.match(line)
    if not m:
        return fence
    mark = m.group(1)
    if fence is None:
        return None if mark[0] == "`" and "`" in line[m.end():] else mark
    return None if mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip().strip(mark[0]) else fence


COMMENT_OR_CODE = re.compile(r"<!--|`+")
BACKTICKS = re.compile(r"`+")
BLANK_LINE = re.compile(r"\n[ \t]*\n")  # a paragraph's end: no code span runs over it
REST_OF_LINE = re.compile(r"[ \t]*(?:\n|\Z)")  # nothing more on a line


def _line_end(text: str, pos: int) -> int:
    """Where the line holding ``pos`` ends (past its newline)."""
    i = text.find("\n", pos)
    return len(text) if i < 0 else i + 1


def _comment_end(text: str, start: int) -> int:
    """Where the comment whose ``<!--`` ends at ``start`` ends: past its ``-->`` (``<!-->`` and ``<!--->`` are whole,
    empty comments, as HTML and CommonMark read them), or the end of the text when it is never closed (a browser
    shows nothing after an unclosed one)."""
    if text.startswith(">", start):
        return start + 1
    if text.startswith("->", start):
        return start + 2
    close = text.find("-->", start)
    return len(text) if close < 0 else close + 3


def _code_span_end(text: str, opener: re.Match, unmatched: set[int]) -> int:
    """Where the code span opened by the backtick run ``opener`` ends: past the next run of as many backticks, in its
    paragraph; a run with none is literal backticks, and the scan goes on right after it. ``unmatched``: the run
    lengths found to have no run as long further on (each is looked for to the end of the text once: a 5 MB line of
    odd backticks is read once, not once a backtick)."""
    n = len(opener.group())
    if n not in unmatched:
        closer = next((m for m in BACKTICKS.finditer(text, opener.end()) if len(m.group()) == n), None)
        if closer is None:
            unmatched.add(n)
        elif not BLANK_LINE.search(text, opener.end(), closer.start()):
            return closer.end()
    return opener.end()


def _comment_spans(text: str) -> list[tuple[int, int]]:
    """Where a Markdown text's HTML comments are, as (start, end) offsets: ``<!--`` up to its ``-->`` (see
    _comment_end), single- or multi-line, outside fenced code blocks and code spans (a comment shown as code is
    content, as a renderer shows it)."""
    spans: list[tuple[int, int]] = []
    if "<!--" not in text:  # most files: no scan
        return spans
    fence: str | None = None
    unmatched: set[int] = set()
    pos = 0
    while pos < len(text):
        eol = _line_end(text, pos)
        after = _fence_after(fence, text[pos:eol])  # a fence opens or closes at a line's start only
        if fence is not None or after is not None:
            fence, pos = after, eol
            continue
        while m := COMMENT_OR_CODE.search(text, pos, eol):  # this line, and any a comment or code span runs onto
            pos = _code_span_end(text, m, unmatched) if m.group()[0] == "`" else _comment_end(text, m.end())
            if m.group()[0] == "<":
                spans.append((m.start(), pos))
            eol = eol if pos < eol else _line_end(text, pos)
        pos = eol
    return spans


def _strip_html_comments(text: str) -> str:
    """A Markdown text without its HTML comments (see _comment_spans): a renderer shows none, so no retriever or
    judge should read one. A comment alone on its line(s) goes with them (no blank line left where none was);
    one within a line leaves the rest of that line as it is written."""
    spans = _comment_spans(text)
    merged: list[tuple[int, int]] = []
    for start, end in spans:  # "<!-- a --> <!-- b -->" is one comment, alone on its line or not
        if merged and not text[merged[-1][1]:start].strip(" \t"):
            start = merged.pop()[0]
        merged.append((start, end))
    out, last = [], 0
    for start, end in merged:
        before = len(text[last:start].rstrip(" \t")) + last  # the spaces before it, back to the line's start?
        after = REST_OF_LINE.match(text, end)
        if after and (before == 0 or text[before - 1] == "\n"):
            start, end = before, after.end()
        out.append(text[last:start])
        last = end
    return "".join(out) + text[last:]


def _markdown_title(text: str) -> str | None:
    """The first ATX heading (``#`` to ``######`` and a space) outside front matter, code fences and HTML comments;
    else front matter's ``title:``; else None."""
    lines = text.splitlines()
    start = 0
    front: list[str] = []
    end = _front_matter_end(lines)  # YAML front matter: up to the next "---" or "..."
    if end is not None:
        start, front = end + 1, lines[1:end]
    fence = None
    comment = False
    for line in lines[start:]:
        if comment:
            comment = "-->" not in line
            continue
        after = _fence_after(fence, line)
        if fence is not None or after is not None:  # a fence's lines, its own included
            fence = after
            continue
        if HTML_COMMENT.match(line):
            comment = "-->" not in line.split("<!--", 1)[1]
            continue
        h = ATX_HEADING.match(line)
        if h and says_something(h.group(1)):
            return h.group(1).strip()
    return _front_matter_title(front)


def _title(path: Path, text: str) -> str:
    """A Markdown file's first heading, else its file name stem; a text file's first line (a heading's text, when it
    is one)."""
    if path.suffix.lower() != ".txt":
        return (_markdown_title(text) or path.stem)[:200]
    first = text.strip().splitlines()[0]
    h = ATX_HEADING.match(first)
    return (h.group(1) if h and says_something(h.group(1)) else first).strip()[:200]


def _file_text(path: Path, data: bytes) -> str:
    """A text file's bytes as text, line ends as "\\n" (CRLF and a lone CR too: one file reads the same from a Windows
    and a Linux checkout). UTF-8 (a byte-order mark is no text) or UTF-16 with its byte-order mark (Windows Notepad's
    "Unicode"); InputError for bytes that are not UTF-8 and for a NUL byte (a binary file, or UTF-16 without its mark,
    which is valid UTF-8 with a NUL after each letter)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise InputError(path, f"not valid UTF-16 (byte {exc.start})") from None
    else:
        try:
            text = data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark (Windows editors) is no text
        except UnicodeDecodeError as exc:
            raise InputError(path, f"not valid UTF-8 (byte {exc.start})",
                             line=data[: exc.start].count(b"\n") + 1) from None
    nul = text.find("\0")
    if nul >= 0 and says_something(text):  # a file of NULs alone is an empty one (reported as such)
        raise InputError(path, "holds NUL bytes: a binary file, or UTF-16 without a byte-order mark (save it as "
                               "UTF-8)", line=text[:nul].count("\n") + 1)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _shown(path: Path) -> str:
    """A path as a message can print it (bytes that are no UTF-8 name, escaped)."""
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def _text_files(folder: Path, errors: list[InputError] | None) -> list[Path]:
    """The .txt/.md files under ``folder``, sorted. Links are followed, a linked folder once and after the folder's own
    tree (no loops, nothing read twice: a link to a folder already read is reported and left, a file reached twice is
    read once under its own path); a broken link and an unreadable folder are reported; hidden files and folders
    (``.git/``, ``.venv/``, ``.notes.md``) are skipped, counted in one warning."""
    found: list[tuple[bool, Path]] = []  # (reached through a link, path)
    hidden: list[str] = []
    seen_dirs: set[Path] = set()
    links: list[Path] = []  # links to folders, read after every folder of the corpus's own

    def walk(d: Path, via_link: bool) -> None:
        seen_dirs.add(d.resolve())
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            report_or_collect(errors, InputError(_shown(d), f"unreadable folder ({exc.strerror or exc}): its files are "
                                                            "left out"))
            return
        for e in entries:
            path = Path(e.path)
            try:
                is_dir, is_file, is_link = e.is_dir(), e.is_file(), e.is_symlink()
            except OSError as exc:
                report_or_collect(errors, InputError(_shown(path), exc.strerror or str(exc)))
                continue
            if e.name.startswith("."):
                if is_dir or path.suffix.lower() in TEXT_SUFFIXES:
                    hidden.append(e.name + "/" * is_dir)
            elif is_link and not os.path.exists(path):
                report_or_collect(errors, InputError(_shown(path), f"broken link (to {os.readlink(path)}): left out"))
            elif is_dir and is_link:
                links.append(path)
            elif is_dir:
                walk(path, via_link)
            elif is_file and path.suffix.lower() in TEXT_SUFFIXES:
                found.append((via_link or is_link, path))

    walk(folder, False)
    while links:
        link = links.pop(0)
        if link.resolve() in seen_dirs:  # a folder of the corpus, one linked twice, or an ancestor (a loop)
            said = f"a link to a folder already read ({_shown(link.resolve())}): its files are indexed once"
            report_or_collect(errors, InputError(_shown(link), said))
        else:
            walk(link, True)
    if hidden:
        warn(f"{folder}: {len(hidden)} hidden path(s) skipped ({', '.join(hidden[:3])}{', ...' * (len(hidden) > 3)})")
    by_target: dict[Path, Path] = {}
    for _, path in sorted(found):  # a file's own path before a link's
        target = path.resolve()
        if target in by_target:
            report_or_collect(errors, InputError(_shown(path), f"the same file as {_shown(by_target[target])} "
                                                               "(a link): indexed once, under that name"))
            continue
        by_target[target] = path
    return sorted(by_target.values())


def _markdown_text(path: Path, text: str, metadata: dict[str, Any]) -> str:
    """A Markdown file's text as it is indexed: its YAML front matter is no text (its fields go to ``metadata`` as
    ``front_matter``, see _front_matter), nor are its HTML comments (see _strip_html_comments). InputError when no
    letter or digit is left."""
    front, body = _front_matter(text)
    if front is not None:
        if not says_something(body):
            raise InputError(path, "no text after its front matter (no letter or digit)", field="text")
        text, metadata["front_matter"] = body, front
    body = _strip_html_comments(text)
    if not says_something(body):
        raise InputError(path, "no text outside its HTML comments (no letter or digit)", field="text")
    return body


def load_documents_folder(folder: str | Path, errors: list[InputError] | None = None) -> list[Document]:
    """Every .txt/.md file under ``folder`` (see _text_files); the id is the path relative to it, the title its first
    heading (see _title). A Markdown file's YAML front matter is left out of its text and kept in its metadata as
    ``front_matter``, and its HTML comments are left out (see _markdown_text). An unreadable file (see _file_text),
    or one with no letter or digit (after its front matter and comments), is reported and skipped; files with the
    same text are each read and named in one warning."""
    folder = Path(folder)
    docs: list[Document] = []
    first_with_text: dict[bytes, str] = {}  # a text's digest: the first file that holds it
    same_text: list[tuple[str, str]] = []
    for path in _text_files(folder, errors):
        try:
            text = _file_text(path, path.read_bytes())
        except InputError as exc:
            report_or_collect(errors, exc)
            continue
        except OSError as exc:
            report_or_collect(errors, InputError(path, exc.strerror or str(exc)))
            continue
        if not says_something(text):
            report_or_collect(errors, InputError(path, "empty file (no letter or digit)", field="text"))
            continue
        metadata: dict[str, Any] = {"path": str(path)}
        title = _title(path, text)
        if path.suffix.lower() != ".txt":
            try:
                text = _markdown_text(path, text, metadata)
            except InputError as exc:
                report_or_collect(errors, exc)
                continue
        doc_id = path.relative_to(folder).as_posix()
        try:
            doc_id.encode("utf-8")
        except UnicodeEncodeError:  # bytes the file system holds that are no UTF-8 name: no id can be made of them
            shown = str(path).encode("utf-8", "backslashreplace").decode("ascii", "replace")
            report_or_collect(errors, InputError(shown, "the file name is not valid UTF-8 (rename the file)"))
            continue
        docs.append(Document(id=doc_id, title=title, text=text, metadata=metadata))
        first = first_with_text.setdefault(hashlib.sha256(text.strip().encode()).digest(), doc_id)
        if first != doc_id:
            same_text.append((doc_id, first))
    if not docs:
        raise InputError(folder, f"no readable {'/'.join(TEXT_SUFFIXES)} files found")
    if same_text:  # a copy (docs/v1/ and docs/latest/): both are indexed and may fill top-k twice; say so
        warn(f"{folder}: {len(same_text)} file(s) hold the same text as another (first: {same_text[0][0]!r} = "
             f"{same_text[0][1]!r}): each is indexed")
    return docs


def load_qrels(path: str | Path, errors: list[InputError] | None = None) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (``query-id``, ``corpus-id``, ``score``, header line) -> {query: {doc: grade}}. A bad row (not
    UTF-8, too few columns, a score that is no whole number) is reported and skipped, as a bad corpus line is; a file
    with rows but no valid one is an error. A row that judges a (query-id, corpus-id) pair again is read, the last
    row's grade winning (what BEIR's loader and ir_datasets' ``qrels_dict`` give, so the numbers are theirs; trec_eval
    and pytrec_eval's ``parse_qrel`` refuse such a file), and said in one warning per file: the first repeat's line,
    how many rows repeat a pair, and how many pairs were given different grades (with the first such pair's)."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    qrels: dict[str, dict[str, int]] = {}
    bad: list[InputError] = []
    first: dict[tuple[str, str], tuple[int, int]] = {}  # (query, doc) -> line and grade of its first valid row
    repeated: dict[tuple[str, str], list[tuple[int, int]]] = {}  # a pair judged again: (line, grade) of each row
    for lineno, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8").removeprefix("\ufeff") if lineno == 1 else raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append(InputError(path, f"not valid UTF-8 (byte {exc.start})", line=lineno))
            continue
        row = next(csv.reader([line], delimiter="\t"), [])
        if not row or not "".join(row).strip() or (lineno == 1 and row[0].strip().lower() in {"query-id", "query_id",
                                                                                            "qid"}):
            continue
        try:
            qid, doc_id, grade = _qrels_row(row, path, lineno)
        except InputError as exc:
            bad.append(exc)
            continue
        pair = (qid, doc_id)
        if pair in first:
            repeated.setdefault(pair, [first[pair]]).append((lineno, grade))
        else:
            first[pair] = (lineno, grade)
        qrels.setdefault(qid, {})[doc_id] = grade  # a repeat: the last row's grade wins
    if bad and not qrels:
        raise none_valid(path, "qrels rows", bad)
    for err in bad:
        report_or_collect(errors, err)
    if repeated:
        warn(_qrels_repeats(path, repeated))
    return qrels


def _qrels_repeats(path: Path, repeated: dict[tuple[str, str], list[tuple[int, int]]]) -> str:
    """The one warning for a qrels file's repeated (query-id, corpus-id) pairs (each pair's rows: line, grade), at the
    first repeat's line."""
    (qid, doc_id), rows = min(repeated.items(), key=lambda kv: kv[1][1][0])
    n_rows = sum(len(r) - 1 for r in repeated.values())
    what = (f"{n_rows} qrels row(s) judge a query-id and corpus-id pair that an earlier row judged (first: query-id "
            f"{qid!r} corpus-id {doc_id!r}, first judged on line {rows[0][0]})")
    conflicts = {p: r for p, r in repeated.items() if len({g for _, g in r}) > 1}
    if conflicts:
        (cq, cd), crows = min(conflicts.items(), key=lambda kv: kv[1][1][0])
        grades = ", ".join(f"{g} on line {n}" for n, g in crows)
        what += (f"; {len(conflicts)} pair(s) given conflicting grades (first: query-id {cq!r} corpus-id {cd!r}: "
                 f"{grades})")
    else:
        what += "; each repeat gives the same grade"
    what += ": the last row's grade is used for each pair, as BEIR's loader reads it"
    return InputError(path, what, line=rows[1][0], field="corpus-id").one_line()


def _qrels_row(row: list[str], path: Path, lineno: int) -> tuple[str, str, int]:
    if len(row) < 3:
        raise InputError(path, f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(row)}",
                         line=lineno)
    qid, doc_id = row[0].strip(), row[1].strip()
    for name, value in (("query-id", qid), ("corpus-id", doc_id)):
        if not value:
            raise InputError(path, "is blank", line=lineno, field=name)
    try:
        score = float(row[2])
    except ValueError:
        raise InputError(path, f"score '{row[2]}' is not a number", line=lineno, field="score") from None
    if not score.is_integer():  # a grade: 0.5 would read as 0 (not relevant), inf or nan as nothing
        raise InputError(path, f"score '{row[2]}' is not a whole-number relevance grade", line=lineno, field="score")
    return qid, doc_id, int(score)


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
    unique = UniqueIds(qpath, "query")

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
    unique = UniqueIds(path, "question")

    def parse(obj: dict, lineno: int) -> Question:
        s = parse_model(Question, _int_id(obj), path, lineno)
        unique(s.id, lineno)
        return s

    return read_records(path, parse, what="questions", errors=errors)


NOT_AN_OBJECT = ("malformed JSON", "expected a JSON object")  # corpora.jsonl's words for a line that is no record


def load_question_set(path: str | Path, errors: list[InputError] | None = None) -> list[Question]:
    """:func:`load_questions`, but a file none of whose lines is a JSON object (plain text, CSV, a JSON array) is
    refused saying what a question set is (rather than 'no valid questions ... malformed JSON')."""
    bad: list[InputError] = []
    try:
        questions = load_questions(path, bad)
    except InputError:
        if bad and all(e.message.startswith(NOT_AN_OBJECT) for e in bad):
            raise InputError(path, f"not a question set: expected JSONL, one JSON object a line such as "
                                   f'{{"id": "q1", "question": "What is ZeRO?"}} (plain text, CSV and a JSON '
                                   f"array are not read; line {bad[0].line}: {bad[0].message})") from None
        raise
    report_or_collect(errors, *bad)
    return questions


def _looks_like_jsonl(path: Path) -> bool:
    """Whether a file's first text is a JSON object's "{" (a JSONL corpus named .txt is read as one)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return True  # the JSONL reader reports why it cannot be read
    return head.removeprefix(codecs.BOM_UTF8).lstrip().startswith(b"{")


def load_corpus(source: str | Path, errors: list[InputError] | None = None) -> list[Document]:
    """Dispatch on what ``source`` is: a BEIR folder, a folder of text files, or a JSONL file."""
    source = Path(source)
    if source.is_file() and source.suffix.lower() in TEXT_SUFFIXES and not _looks_like_jsonl(source):
        raise InputError(source, f"a {source.suffix} file is no corpus: give the folder that holds it (a folder of "
                                 ".txt/.md files), a JSONL file or a BEIR folder")
    if source.is_dir():
        corpus = next((source / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (source / n).exists()), None)
        if corpus is None and (source / "qrels").is_dir():  # a BEIR folder's queries and qrels without its corpus
            raise InputError(source, "a BEIR folder (qrels/) without corpus.jsonl or corpus.jsonl.gz: its documents "
                                     "are missing (a folder of .txt/.md files has no qrels/)")
        if corpus is None:
            return load_documents_folder(source, errors)
        return load_documents_jsonl(corpus, skip_empty=True, errors=errors)  # as load_beir reads it: one behaviour
    return load_documents_jsonl(source, errors=errors)
