"""Sentences of a text, deterministic and model-free: what claims are cut from (eval/claims.py) and what premise
windows are built from.

Blocks come first. A blank line ends a block; so does a list item, a markdown heading and a table row:
- a line starting with "-", "*" or "•" is a list item; a line starting with a number and "." or ")" ("2. ", "3) ")
  is one only where it looks like a list: at the start of a block, after a line that ends a sentence or introduces
  a list (. ! ? : ;), as the next number after an item ("1." ... "2."), or as a "1." that a "2." follows. A
  hard-wrapped line that goes on with a number ("founded in\\n1998. Its first director") continues its sentence,
  number kept. One line holding a numbered list ("three modes: 1. fast 2. slow 3. exact") is cut at its markers,
  its items read as one sentence when all are short;
- each row of a markdown table is a unit of its own, read with its header ("Model is Falcon, Parameters is 180B."), the
  ``|---|`` rule dropped; a table without outer pipes ("Model | Size" over "--- | ---") is one too, from its rule;
  a heading ("## Setup", a line in bold) is kind "heading" (no claim, but a premise);
- a fenced code block (between lines of ``` or ~~~) is one unit of kind "code", its lines joined, never split at
  full stops ("model.eval(). Then ..."): a command or snippet is one statement.

A block then splits after . ! ? (and closing quotes or brackets) before white space, except after an abbreviation or
a lone letter (rag/sentence_ends.py), and after the CJK ends 。！？ and the full-width ．, white space or not.

A sentence longer than ``max_words`` words (a CJK character counts as a word: each is about one model token) is cut
at a clause joint, the strongest first (";" or a dash, then a comma before a conjunction or relative pronoun, then
" and " / " but " before a subject ("and it ..."), then a comma that is not a list's, then " and " / " which "...),
the one nearest the middle that leaves each side a quarter;
only what has no joint left is cut into even pieces, never between "not" / "no" / "never" and the word it negates
(a fact that straddles a cut is whole in the premise window of the two pieces around it: eval/claims.py)."""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import regex

from rag.sentence_ends import NOT_AFTER_ABBREVIATION

MAX_SENTENCE_WORDS = 40  # a longer "sentence" (unpunctuated text, a list run together) is cut into pieces

_CLOSERS = "\"'\u201d\u2019)\\]\u300d\u300f\uff09"  # closing quotes and brackets that stay with their sentence
_SENT_END = re.compile(
    r"(?<=[.!?])" + NOT_AFTER_ABBREVIATION + rf"[{_CLOSERS}]*\s+(?=[\w\"'\u201c\u2018(\[])"
    rf"|[\u3002\uff01\uff1f]+[{_CLOSERS}]*\s*|\uff0e(?![0-9\uff10-\uff19])[{_CLOSERS}]*\s*")
_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}"  # scripts written without spaces: one word per character
_UNIT = regex.compile(rf"[{_UNSPACED}]\p{{M}}*|[^\s{_UNSPACED}]+")
_WORD = regex.compile(rf"[{_UNSPACED}]|[^\W{_UNSPACED}]+")

_BULLET = re.compile(r"^\s*[-*\u2022]\s+(?=\S)")
_NUMBERED = re.compile(r"^\s*(\d{1,2})([.)])\s+(?=\S)")
_ENDS_SENTENCE = re.compile(rf"[.!?:;\u3002\uff01\uff1f][{_CLOSERS}*_]*$")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(.*?)[\s#]*|(?:\*\*|__)([^*_\n]{1,80}?)(?:\*\*|__)\s*:?)$")
_RULE = re.compile(r"^\|?(?:\s*:?-+:?\s*\|)+(?:\s*:?-+:?\s*)?$")  # GitHub's tables accept one dash per cell
_FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})[\w+.#-]*\s*(?:\{[^}]*\})?$")  # "```", "```python", "~~~ {.sh}"
_EMPHASIS = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_INLINE_MARKER = re.compile(r"(?<![^\s:;,(])(\d{1,2})[.)]\s+(?=\S)")

# clause joints, strongest first; each match ends where the second part starts
_SUBJECT = r"(?:it|they|he|she|we|you|i|this|these|those|there)\b"  # a pronoun: "and the lack" is no clause
_JOINTS = (
    re.compile(r"[;\uff1b]\s*|\s[\u2014\u2013]\s*"),  # not " - ": a minus as often as a dash
    re.compile(r",\s+(?=(?:and|but|or|nor|yet|so|while|whereas|which|who|where|although|though|because|since|"
               r"unless|however|then)\b)", re.IGNORECASE),
    re.compile(rf"\s(?=(?:and|but|so|yet|while|whereas)\s+{_SUBJECT})", re.IGNORECASE),  # "... and it ships ..."
    # a comma, but not one inside a list ("Windows, macOS or FreeBSD"): no "and"/"or" within the next three words
    re.compile(r"(?:,(?!\s*(?:\S+\s+){0,2}(?:and|or)\s)|[:\uff0c\u3001])\s*", re.IGNORECASE),
    re.compile(r"\s(?=(?:and|but|or|which|while|whereas|because|although|though|that|so)\s)", re.IGNORECASE),
)
_NEGATORS = frozenset("not no never cannot nor neither without".split())


@dataclass(frozen=True)
class Block:
    """A paragraph, list item, table row, code block or heading, as its sentences. ``kind``: text | item | row | code
    | heading."""

    kind: str
    sentences: list[str]


def unit_spans(text: str) -> list[tuple[int, int]]:
    """Where the words of ``text`` are: white-space separated runs, and each CJK character on its own."""
    if text.isascii():
        return [m.span() for m in re.finditer(r"\S+", text)]
    return [m.span() for m in _UNIT.finditer(text)]


def word_count(text: str) -> int:
    """Words of ``text`` counted for length limits (see unit_spans)."""
    return len(text.split()) if text.isascii() else len(_UNIT.findall(text))


def words(text: str) -> int:
    """Runs of word characters (a CJK character is one): how much a fragment says ("Prof." is one word)."""
    return len(re.findall(r"\w+", text)) if text.isascii() else len(_WORD.findall(text))


def split_sentences(text: str, max_words: int = MAX_SENTENCE_WORDS) -> list[str]:
    """Sentences of ``text`` in order (see the module docstring); a run of more than ``max_words`` words is cut
    into pieces of at most ``max_words`` words, so no window hides most of its text past a model's maximum length."""
    return [s for b in sentence_blocks(text, max_words) for s in b.sentences]


def sentence_blocks(text: str, max_words: int = MAX_SENTENCE_WORDS) -> list[Block]:
    """The blocks of ``text`` in order, each as its sentences (split_sentences keeps only the sentences)."""
    out = []
    for kind, body in _blocks(text):
        units = [body] if kind in ("row", "heading", "code") else _inline_list(body)
        sents = [p for u in units for s in ([u] if kind == "code" else _sentences(u)) for p in cut(s, max_words)]
        if sents:
            out.append(Block(kind, sents))
    return out


def _sentences(block: str) -> list[str]:
    out, start = [], 0
    for m in _SENT_END.finditer(block):  # cut after the end and its closing quotes, at the white space
        out.append(block[start : m.end()].strip())
        start = m.end()
    out.append(block[start:].strip())
    return [s for s in out if s]


def _cells(line: str, bare: bool = False) -> list[str] | None:
    """The cells of a table line: one with outer pipes; with ``bare``, also one without them ("a | b")."""
    s = line.strip()
    if len(s) >= 3 and s.startswith("|") and s.endswith("|"):
        return [c.strip() for c in s[1:-1].split("|")]
    if bare and "|" in s:
        return [c.strip() for c in s.strip("|").split("|")]
    return None


def _is_rule(line: str) -> bool:
    return bool(_RULE.match(line.replace(" ", "")))


def _row(header: list[str] | None, cells: list[str]) -> str:
    """A table row read with its header as a sentence: "Model is Falcon, Parameters is 180B." (a judge reads this
    better than "Model: Falcon" or the pipes); cells past the header stay bare."""
    named = [f"{h} is {c}" if h and c else c for h, c in zip(header or [], cells)]
    text = ", ".join(x for x in named + cells[len(named) :] if x)
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _item_start(number: int, prev: str | None, last_item: int, two_follows: bool) -> bool:
    """A line starting "<number>. " (or ")") starts a list item, not a wrapped sentence (see the module docstring)."""
    return (prev is None or bool(_ENDS_SENTENCE.search(prev)) or bool(last_item and number == last_item + 1)
            or (number == 1 and two_follows))


def _two_follows(lines: list[str]) -> list[bool]:
    """Per line: a later line of its paragraph starts "2. " or "2) "."""
    out, seen = [False] * len(lines), False
    for k in range(len(lines) - 1, -1, -1):
        out[k] = seen
        seen = False if not lines[k].strip() else seen or bool(re.match(r"\s*2[.)]\s+\S", lines[k]))
    return out


def _blocks(text: str) -> list[tuple[str, str]]:
    """(kind, text) of each block, list markers and emphasis removed, lines joined with spaces."""
    lines = text.splitlines()
    two = _two_follows(lines)
    out: list[tuple[str, str]] = []
    cur: list[str] = []
    kind, last_item = "text", 0
    header: list[str] | None = None
    header_read = False

    def flush() -> None:
        nonlocal cur
        if cur:
            out.append((kind, " ".join(cur) if kind == "code" else _EMPHASIS.sub(r"\1", " ".join(cur))))
        cur = []

    def end_table() -> None:
        nonlocal header, header_read
        if header is not None and not header_read:
            out.append(("row", _row(None, header)))
        header, header_read = None, False

    fence: str | None = None  # the fence of the code block being read ("```" or "~~~"), if any
    for k, raw in enumerate(lines):
        line = raw.strip()
        if fence is not None:  # inside a fenced code block: every line is code until its closing fence
            if line.startswith(fence) and not line[len(fence):].strip(fence[0]).strip():
                flush()
                fence, kind = None, "text"
            elif line:
                cur.append(line)
            continue
        opens = _FENCE_OPEN.match(line)
        if opens:
            end_table()
            flush()
            fence, kind = opens.group(1), "code"
            continue
        # a table row: a line with outer pipes, a line of a table whose rule was read, or a header over its rule
        bare = header is not None or (k + 1 < len(lines) and "|" in line and _is_rule(lines[k + 1].strip()))
        cells = _cells(line, bare)
        if cells is not None:
            flush()
            if _is_rule(line):
                continue
            if header is None:
                header = cells
            else:
                out.append(("row", _row(header, cells)))
                header_read = True
            continue
        end_table()
        if not line:
            flush()
            kind, last_item = "text", 0
            continue
        heading = _HEADING.match(line)
        numbered = _NUMBERED.match(line)
        if heading:
            flush()
            out.append(("heading", (heading.group(1) or heading.group(2) or "").strip()))
            kind = "text"
        elif _BULLET.match(line):
            flush()
            kind, cur = "item", [_BULLET.sub("", line)]
        elif numbered and _item_start(int(numbered.group(1)), cur[-1] if cur else None, last_item, two[k]):
            flush()
            kind, last_item, cur = "item", int(numbered.group(1)), [line[numbered.end() :]]
        else:
            cur.append(line)
    flush()
    end_table()
    return [(k, t) for k, t in out if t.strip()]


def _inline_list(block: str) -> list[str]:
    """A block holding a numbered list on one line ("modes: 1. fast 2. slow") as its intro and items; a list of
    short items (under three words each) as one sentence ("modes: fast, slow."); any other block as it is."""
    marks, want = [], 1
    for m in _INLINE_MARKER.finditer(block):
        if int(m.group(1)) == want:
            marks.append(m)
            want += 1
    if len(marks) < 2:
        return [block]
    intro = block[: marks[0].start()].strip()
    items = [block[m.end() : (marks[i + 1].start() if i + 1 < len(marks) else len(block))].strip()
             for i, m in enumerate(marks)]
    if all(words(i) < 3 for i in items):
        listed = ", ".join(i.rstrip(" .,;") for i in items)
        return [f"{intro} {listed}.".strip()]
    return [x for x in [intro, *items] if x]


def cut(sentence: str, max_words: int = MAX_SENTENCE_WORDS) -> list[str]:
    """``sentence`` as pieces of at most ``max_words`` words, cut at clause joints first (see the module docstring)."""
    spans = unit_spans(sentence)
    if len(spans) <= max_words:
        return [sentence] if spans else []
    starts = {s: k for k, (s, _) in enumerate(spans)}
    joints = []
    for pattern in _JOINTS:
        found = set()
        for m in pattern.finditer(sentence):
            k = next((starts[p] for p in range(m.end(), len(sentence) + 1) if p in starts), None)
            if k is not None:
                found.add(k)
        joints.append(sorted(found))
    ranges = _split(0, len(spans), max_words, joints, [sentence[a:b] for a, b in spans])
    return [sentence[spans[i][0] : spans[j - 1][1]] for i, j in ranges]


def _split(i: int, j: int, limit: int, joints: list[list[int]], units: list[str]) -> list[tuple[int, int]]:
    if j - i <= limit:
        return [(i, j)]
    least = max(1, min((j - i) // 4, limit // 4))
    for level in joints:  # the joint nearest the middle that leaves each side ``least`` words
        lo, hi = bisect_left(level, i + least), bisect_right(level, j - least)
        if lo < hi:
            at = bisect_left(level, (i + j) / 2, lo, hi)
            k = min(level[max(lo, at - 1) : min(hi, at + 1)], key=lambda k: abs(2 * k - i - j))
            return _split(i, k, limit, joints, units) + _split(k, j, limit, joints, units)
    pieces = -(-(j - i) // limit)
    while True:  # even pieces; one more when keeping a negation with its word overfills one
        bounds = _even_bounds(i, j, -(-(j - i) // pieces), limit, units)
        if all(b - a <= limit for a, b in zip(bounds, bounds[1:])):
            return list(zip(bounds, bounds[1:]))
        pieces += 1


def _even_bounds(i: int, j: int, size: int, limit: int, units: list[str]) -> list[int]:
    bounds = [i]
    for b in range(i + size, j, size):
        b = max(b, bounds[-1] + 1)
        if size < limit and b < j and _negates(units[b - 1]):
            b += 1  # "does not | support": the negation goes with the word it negates
        while b - 1 > bounds[-1] and _negates(units[b - 1]):
            b -= 1  # ... into the next piece when this one is full
        if b < j:
            bounds.append(b)
    return [*bounds, j]


def _negates(word: str) -> bool:
    w = word.lower().strip(",.;:!?\"'()")
    return w in _NEGATORS or w.endswith("n't")
