"""The bundled corpus: original short notes on LLM systems engineering, with planted trouble, and its questions.

Planted trouble is labelled in metadata: documents carry ``conflict_group`` + ``version`` (outdated/current),
``planted: near_duplicate`` (+ ``near_duplicate_of``) or ``planted: prompt_injection``; questions carry
``kind`` (factoid, multi_doc, conflict, distractor, injection, unanswerable)."""
from __future__ import annotations

from pathlib import Path

from corpora.loaders import load_documents_jsonl, load_questions
from corpora.records import Document, Question

BUNDLED_DIR = Path(__file__).parent / "llmsys"


def bundled_documents() -> list[Document]:
    return [d for p in sorted(BUNDLED_DIR.glob("docs_*.jsonl")) for d in load_documents_jsonl(p)]


def bundled_questions() -> list[Question]:
    return [s for p in sorted(BUNDLED_DIR.glob("questions_*.jsonl")) for s in load_questions(p)]


def planted(docs: list[Document]) -> dict[str, list[str]]:
    """Ids of planted-trouble documents by kind: outdated, current, near_duplicate, prompt_injection."""
    out: dict[str, list[str]] = {"outdated": [], "current": [], "near_duplicate": [], "prompt_injection": []}
    for d in docs:
        if d.metadata.get("version") in ("outdated", "current"):
            out[d.metadata["version"]].append(d.id)
        if d.metadata.get("planted") in out:
            out[d.metadata["planted"]].append(d.id)
    return out
