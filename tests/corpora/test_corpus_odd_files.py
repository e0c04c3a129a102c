"""A user's own corpus as files really come: encodings, line ends, binaries named .txt, front matter, HTML comments,
copies, a BEIR title without its text, a single file given as the corpus."""
import codecs
import logging

import pytest

from corpora.errors import InputError
from corpora.loaders import load_beir, load_corpus, load_documents_folder


def _docs(folder):
    errors: list[InputError] = []
    docs = load_documents_folder(folder, errors)
    return {d.id: d for d in docs}, errors


@pytest.mark.parametrize("data", [
    codecs.BOM_UTF16_LE + "Notepad unicode\r\nsecond line\r\n".encode("utf-16-le"),
    codecs.BOM_UTF16_BE + "Notepad unicode\r\nsecond line\r\n".encode("utf-16-be"),
    "Notepad unicode\r\nsecond line\r\n".encode("utf-16"),  # the platform's order, with its mark
])
def test_utf16_with_its_byte_order_mark_is_read(tmp_path, data):
    (tmp_path / "u16.txt").write_bytes(data)
    docs, errors = _docs(tmp_path)
    assert errors == [] and docs["u16.txt"].text == "Notepad unicode\nsecond line\n"
    assert docs["u16.txt"].title == "Notepad unicode"


@pytest.mark.parametrize("data, line", [
    ("Hello\r\nfrom notepad\r\n".encode("utf-16-le"), 1),  # no mark: valid UTF-8 with a NUL after each letter
    (b"first line\nsecond \x00 line\n", 2),
])
def test_nul_bytes_are_reported_and_the_file_skipped_never_indexed_as_text(tmp_path, data, line):
    (tmp_path / "bad.txt").write_bytes(data)
    (tmp_path / "ok.txt").write_text("Good words.", encoding="utf-8")
    docs, errors = _docs(tmp_path)
    assert list(docs) == ["ok.txt"] and len(errors) == 1
    assert str(errors[0]) == (f"{tmp_path / 'bad.txt'}:{line}: holds NUL bytes: a binary file, or UTF-16 without a "
                              "byte-order mark (save it as UTF-8)")


def test_binary_and_latin1_files_named_txt_are_reported_with_their_line(tmp_path):
    (tmp_path / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "latin1.txt").write_bytes(b"first\nHe said \x93hello\x94\n")
    (tmp_path / "ok.txt").write_text("Good words.", encoding="utf-8")
    docs, errors = _docs(tmp_path)
    assert list(docs) == ["ok.txt"]
    assert [str(e) for e in errors] == [f"{tmp_path / 'image.txt'}:1: not valid UTF-8 (byte 0)",
                                        f"{tmp_path / 'latin1.txt'}:2: not valid UTF-8 (byte 14)"]


def test_crlf_and_lone_cr_read_as_the_same_text_as_lf(tmp_path):
    for name, end in (("lf.md", "\n"), ("crlf.md", "\r\n"), ("cr.md", "\r")):
        (tmp_path / name).write_bytes(end.join(["# Title", "", "Body line.", "Second."]).encode() + end.encode())
    docs, errors = _docs(tmp_path)
    assert errors == []
    assert {d.text for d in docs.values()} == {"# Title\n\nBody line.\nSecond.\n"}
    assert {d.title for d in docs.values()} == {"Title"}


@pytest.mark.parametrize("text, title", [
    ("---\ntitle: Front Title\ntags: [a, b]\n---\n\nBody text without a heading.\n", "Front Title"),
    ("---\nlayout: post\ntitle: \"Quoted: yes\"\n---\nBody.\n", "Quoted: yes"),
    ("\ufeff---\ntitle: 'Single'\n---\nBody.\n", "Single"),
    ("---\ntitle: Front\n---\n# Heading wins\n", "Heading wins"),  # as before: the first heading first
    ("---\ntitle:\n---\nBody.\n", "notes"),
    ("---\ntitle: >\n  folded\n---\nBody.\n", "notes"),
    ("---\ntitle: Commented  # a YAML comment\n---\nBody.\n", "Commented"),
])
def test_front_matter_title_is_the_title_of_a_markdown_file_without_a_heading(tmp_path, text, title):
    (tmp_path / "notes.md").write_text(text, encoding="utf-8")
    assert load_documents_folder(tmp_path)[0].title == title


@pytest.mark.parametrize("text, body, front", [
    ("---\ntitle: Front Title\ntags: [a, b]\ndate: 2024-05-01\n---\n\nBody text.\n", "\nBody text.\n",
     {"title": "Front Title", "tags": "[a, b]", "date": "2024-05-01"}),
    ("\ufeff---\ntitle: 'Single'\n# a comment line\n\nlayout: post  # a comment\n...\nBody.\n", "Body.\n",
     {"title": "Single", "layout": "post"}),  # after a byte-order mark, closed by "..."
    ("---\r\ntitle: \"Quoted: yes\"\r\nempty:\r\n---\r\n# Heading\r\n", "# Heading\n", {"title": "Quoted: yes", "empty": ""}),
    ("---\n---\nNo fields.\n", "No fields.\n", {}),
    # anything no simple key: value line keeps the block as written (no YAML parser to guess with)
    ("---\ntitle: x\ntags:\n  - a\n  - b\n---\nBody.\n", "Body.\n", "title: x\ntags:\n  - a\n  - b"),
    ("---\nsummary: >\n  folded\n---\nBody.\n", "Body.\n", "summary: >\n  folded"),
    ("---\ntitle: a\ntitle: b\n---\nBody.\n", "Body.\n", "title: a\ntitle: b"),
])
def test_front_matter_is_no_text_and_its_fields_are_metadata(tmp_path, text, body, front):
    """'title: x', 'tags: [a, b]' were indexed and quoted as context; now the text starts after the block, and its
    simple key: value lines are strings in metadata['front_matter'] (else the block itself)."""
    (tmp_path / "notes.md").write_text(text, encoding="utf-8", newline="")
    docs, errors = _docs(tmp_path)
    assert errors == []
    assert docs["notes.md"].text == body
    assert docs["notes.md"].metadata == {"path": str(tmp_path / "notes.md"), "front_matter": front}


@pytest.mark.parametrize("name, text", [
    ("rule.md", "Intro.\n\n---\ntitle: not front matter\n---\n\nMore.\n"),  # a horizontal rule later on
    ("unclosed.md", "---\ntitle: x\n\nNever closed, so all text.\n"),
    ("indented.md", "Text first\n---\nkey: v\n---\n"),
    ("notes.txt", "---\ntitle: x\n---\nA text file keeps every line.\n"),
])
def test_dashes_not_opening_a_markdown_file_are_text(tmp_path, name, text):
    (tmp_path / name).write_text(text, encoding="utf-8")
    docs, errors = _docs(tmp_path)
    assert errors == []
    assert docs[name].text == text and "front_matter" not in docs[name].metadata


def test_a_file_of_front_matter_alone_is_reported_as_empty(tmp_path):
    (tmp_path / "only.md").write_text("---\ntitle: Just metadata\n---\n\n", encoding="utf-8")
    (tmp_path / "ok.md").write_text("Words.", encoding="utf-8")
    docs, errors = _docs(tmp_path)
    assert list(docs) == ["ok.md"]
    assert [e.message for e in errors] == ["no text after its front matter (no letter or digit)"]


@pytest.mark.parametrize("text, title", [
    ("<!--\n# Draft title\n-->\n# Real Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "Real Title"),
    ("<!-- note --> # not a heading\n## Real\n", "Real"),
    ("```\n<!--\n```\n# After the fence\n", "After the fence"),  # a comment mark inside code is code
])
def test_a_heading_inside_an_html_comment_is_no_title(tmp_path, text, title):
    (tmp_path / "notes.md").write_text(text, encoding="utf-8")
    assert load_documents_folder(tmp_path)[0].title == title


@pytest.mark.parametrize("text, body", [
    ("Intro.\n<!-- draft note -->\nMore.\n", "Intro.\nMore.\n"),  # alone on its line: the line goes
    ("Intro <!-- aside --> more.\n", "Intro  more.\n"),  # within a line: the rest of the line stays
    ("A.\n<!--\nsecret plan\n-->\nB.\n<!-- one --> <!-- two -->\nC.", "A.\nB.\nC."),  # multi-line, several
    ("Body.\n<!-- unclosed\nsecret to the end\n", "Body.\n"),  # unclosed: to the end of the file, as a browser
    ("Body. <!-- unclosed secret", "Body. "),
    ("Empty <!--> and <!---> comments.\n", "Empty  and  comments.\n"),
    ("<!-- a -->Kept<!-- b -->\n", "Kept\n"),
    ("---\ntitle: T\n---\n<!-- after front matter -->\nBody.\n", "Body.\n"),
])
def test_html_comments_are_no_text_and_the_text_around_them_stays(tmp_path, text, body):
    """'<!-- TODO: remove before publishing -->' was indexed and quoted as context: a renderer shows no comment."""
    (tmp_path / "notes.md").write_text(text, encoding="utf-8")
    docs, errors = _docs(tmp_path)
    assert errors == [] and docs["notes.md"].text == body


@pytest.mark.parametrize("text", [
    "```html\n<!-- shown as code -->\n```\n",
    "~~~\n<!-- an unclosed mark in code\n~~~\nafter\n",
    "- step\n\n    ```html\n    <!-- in a nested list's fence -->\n    ```\n",
    "Write `<!-- like this -->` to hide text.\n",
    "Code ``a ` <!-- in a double-backtick span --> `` here.\n",
])
def test_a_comment_in_a_code_block_or_code_span_is_content(tmp_path, text):
    (tmp_path / "notes.md").write_text(text + "<!-- gone -->\nEnd.\n", encoding="utf-8")
    docs, errors = _docs(tmp_path)
    assert errors == [] and docs["notes.md"].text == text + "End.\n"


def test_a_text_file_keeps_its_comments_and_a_file_of_comments_alone_is_reported(tmp_path):
    (tmp_path / "plain.txt").write_text("Kept <!-- as written -->\n", encoding="utf-8")
    (tmp_path / "only.md").write_text("<!-- nothing but a comment -->\n\n<!-- and another\n", encoding="utf-8")
    docs, errors = _docs(tmp_path)
    assert list(docs) == ["plain.txt"] and docs["plain.txt"].text == "Kept <!-- as written -->\n"
    assert [e.message for e in errors] == ["no text outside its HTML comments (no letter or digit)"]


def test_html_comments_never_reach_the_index(tmp_path):
    from rag.config import ChunkingConfig, IndexConfig
    from rag.embeddings import FakeEmbedder
    from rag.store import build_index

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nPaged attention splits the KV cache.\n<!-- zanzibar "
                                                "draft -->\nIt avoids fragmentation. <!-- zanzibar aside -->\n",
                                                encoding="utf-8")
    store = build_index(load_documents_folder(tmp_path / "docs"), tmp_path / "idx", FakeEmbedder(),
                        chunking=ChunkingConfig(chunk_size=16, chunk_overlap=2), index_cfg=IndexConfig())
    text = " ".join(n.text for n in store.nodes)
    assert "zanzibar" not in text and "<!--" not in text
    assert "Paged attention" in text and "fragmentation" in text
    assert store.bm25 is not None and store.bm25.search("zanzibar", 5) == []


def test_copies_are_indexed_under_their_own_unique_ids_and_warned_about(tmp_path, caplog):
    for sub in ("v1", "latest"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "guide.md").write_text("# Guide\n\nSame words.\n", encoding="utf-8")
    (tmp_path / "latest" / "guide.txt").write_text("Other words.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ragdoctor.notices"):
        docs = load_documents_folder(tmp_path)
    ids = [d.id for d in docs]
    assert ids == ["latest/guide.md", "latest/guide.txt", "v1/guide.md"] == [d.id for d in load_documents_folder(tmp_path)]
    assert (f"warning: {tmp_path}: 1 file(s) hold the same text as another (first: 'v1/guide.md' = "
            "'latest/guide.md'): each is indexed") in caplog.text


def test_non_ascii_names_hidden_files_and_a_huge_single_line_file(tmp_path, caplog):
    (tmp_path / "café ü.md").write_text("Ünïcode words.", encoding="utf-8")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD.txt").write_text("ref: refs/heads/main")
    (tmp_path / "huge.txt").write_text("word " * 1_000_000, encoding="utf-8")  # 5 MB, no newline
    docs, errors = _docs(tmp_path)
    assert errors == [] and sorted(docs) == ["café ü.md", "huge.txt"]
    assert len(docs["huge.txt"].title) == 200 and len(docs["huge.txt"].text) == 5_000_000
    assert "1 hidden path(s) skipped (.git/)" in caplog.text


def _beir(tmp_path, lines):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "what?"}\n', encoding="utf-8")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    return tmp_path


def test_a_beir_title_without_its_text_key_is_read_as_its_title_as_an_empty_text_is(tmp_path, caplog):
    folder = _beir(tmp_path, ['{"_id": "d1", "title": "T", "text": "one"}',
                              '{"_id": "d2", "title": "Absent text"}',
                              '{"_id": "d3", "title": "Null text", "text": null}',
                              '{"_id": 4, "title": "", "text": "numeric id"}',
                              '{"_id": "d5"}',
                              '{"_id": "d1", "text": "again"}',
                              '{"_id": "d6", "text": "broken'])
    for docs in (load_corpus(folder, errors := []), load_beir(folder)[0]):
        assert [(d.id, d.text) for d in docs] == [("d1", "one"), ("d2", "Absent text"), ("d3", "Null text"),
                                                  ("4", "numeric id")]
    assert [(e.line, e.field) for e in errors] == [(5, "text"), (6, "id"), (7, None)]
    assert "corpus.jsonl:6: field 'id': duplicate document id 'd1'" in caplog.text


def test_a_plain_jsonl_corpus_still_needs_its_text(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a", "title": "Only a title"}\n{"id": "b", "text": "words"}\n', encoding="utf-8")
    errors: list[InputError] = []
    assert [d.id for d in load_corpus(p, errors)] == ["b"]
    assert str(errors[0]) == f"{p}:1: field 'text': missing required field"


@pytest.mark.parametrize("name", ["notes.md", "notes.txt"])
def test_a_single_text_file_given_as_the_corpus_is_refused_in_one_line_saying_what_to_give(tmp_path, name):
    p = tmp_path / name
    p.write_text("# Notes\n\nSome words.\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(p)
    assert str(err.value) == (f"{p}: a {p.suffix} file is no corpus: give the folder that holds it (a folder of "
                              ".txt/.md files), a JSONL file or a BEIR folder")


def test_a_jsonl_corpus_named_txt_is_still_read_as_jsonl(tmp_path):
    p = tmp_path / "docs.txt"
    p.write_bytes(b'\xef\xbb\xbf\n{"id": "a", "text": "words"}\n')
    assert [d.id for d in load_corpus(p)] == ["a"]
