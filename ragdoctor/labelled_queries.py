"""The labelled queries a lab command measures with: ``--questions FILE``, else the bundled questions (bundled corpus,
pipeline index), else a BEIR folder's qrels split. Shared by ``index-lab`` and ``retrieval-lab``."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from corpora.errors import UsageError


@dataclass
class LabelledQueries:
    questions: list[str]
    ids: list[str]
    qrels: dict[str, dict[str, int]]
    source: str


def labelled_queries(corpus: str, questions: str | None, split: str, own_index: bool) -> LabelledQueries | None:
    """None when the corpus has no labelled queries of its own and none were given."""
    from corpora.bundled import bundled_questions  # noqa: PLC0415 - lazy: the corpus modules load the question sets
    from corpora.loaders import load_beir, load_questions  # noqa: PLC0415

    folder = Path(corpus)
    if questions:
        qs, source = load_questions(questions), questions
    elif own_index and corpus == "bundled":
        qs, source = bundled_questions(), "bundled questions"
    elif folder.is_dir() and (folder / "qrels" / f"{split}.tsv").exists():
        qs, source = load_beir(folder, split)[1], f"{folder} {split} queries"
    else:
        return None
    if not qs:
        raise UsageError(f"{source} holds no questions")
    qrels = {q.id: (q.metadata.get("qrels") or {d: 1 for d in (q.relevant_doc_ids or [])}) for q in qs}
    return LabelledQueries([q.question for q in qs], [q.id for q in qs], qrels, source)
