"""The bundled corpus: original short notes on LLM systems engineering, with planted trouble, and its questions.

Planted trouble is labelled in metadata: documents carry ``conflict_group`` + ``version`` (outdated/current),
``planted: near_duplicate`` (+ ``near_duplicate_of``) or ``planted: prompt_injection``; questions carry
``kind`` (factoid, multi_doc, conflict, distractor, injection, unanswerable)."""
from __future__ import annotations

import hashlib
from pathlib import Path

from corpora.loaders import load_documents_jsonl, load_questions
from corpora.records import Document, Question

BUNDLED_DIR = Path(__file__).parent / "llmsys"


def bundled_documents() -> list[Document]:
    return [d for p in sorted(BUNDLED_DIR.glob("docs_*.jsonl")) for d in load_documents_jsonl(p)]


def bundled_questions() -> list[Question]:
    return [s for p in sorted(BUNDLED_DIR.glob("questions_*.jsonl")) for s in load_questions(p)]


# the demo's default set: every planted conflict, distractor and injection (the cases the diagnostics exist for), and
# a few of each other kind; ``ragdoctor demo --full`` answers all of them
DEMO_QUOTA = {"conflict": None, "distractor": None, "injection": None, "unanswerable": 4, "multi_doc": 3, "factoid": 6}


def demo_questions(questions: list[Question] | None = None, quota: dict[str, int | None] | None = None
                   ) -> list[Question]:
    """A stratified subset of the bundled questions: per ``metadata.kind`` at most ``quota[kind]`` questions (None: all
    of that kind), picked by a fixed hash of their ids (the same set on every machine, not the first ones written);
    kinds the quota does not name are left out. Returned in the question set's order."""
    questions = bundled_questions() if questions is None else questions
    quota = DEMO_QUOTA if quota is None else quota
    by_kind: dict[str, list[Question]] = {}
    for q in questions:
        by_kind.setdefault(str(q.metadata.get("kind", "factoid")), []).append(q)
    keep: set[str] = set()
    for kind, qs in by_kind.items():
        if kind not in quota:
            continue
        ranked = sorted(qs, key=lambda q: hashlib.sha256(q.id.encode("utf-8")).hexdigest())
        keep.update(q.id for q in ranked[: quota[kind]])
    return [q for q in questions if q.id in keep]


def planted(docs: list[Document]) -> dict[str, list[str]]:
    """Ids of planted-trouble documents by kind: outdated, current, near_duplicate, prompt_injection."""
    out: dict[str, list[str]] = {"outdated": [], "current": [], "near_duplicate": [], "prompt_injection": []}
    for d in docs:
        if d.metadata.get("version") in ("outdated", "current"):
            out[d.metadata["version"]].append(d.id)
        if d.metadata.get("planted") in out:
            out[d.metadata["planted"]].append(d.id)
    return out
