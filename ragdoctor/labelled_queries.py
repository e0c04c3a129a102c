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


def labelled_queries(corpus: str, questions: str | None, split: str | None, own_index: bool,
                     ) -> LabelledQueries | None:
    """None when the corpus has no labelled queries of its own and none were given. ``split`` (default "train") names
    a BEIR folder's qrels file; given where no BEIR qrels are read, or naming a file that is not there, it is a usage
    error rather than a silent fallback to other queries."""
    from corpora.bundled import bundled_questions  # noqa: PLC0415 - lazy: the corpus modules load the question sets
    from corpora.loaders import load_beir, load_questions  # noqa: PLC0415

    folder = Path(corpus)
    beir = folder.is_dir() and (folder / "qrels").is_dir()
    if split is not None and (questions or not beir):
        why = "--questions is given" if questions else f"{corpus} is not a BEIR folder (no qrels/)"
        raise UsageError(f"--split: only a BEIR corpus's own queries read it, and {why}")
    split = split or "train"
    if questions:
        qs, source = load_questions(questions), questions
    elif own_index and corpus == "bundled":
        qs, source = bundled_questions(), "bundled questions"
    elif beir:
        if not (folder / "qrels" / f"{split}.tsv").is_file():
            have = ", ".join(sorted(f.stem for f in (folder / "qrels").glob("*.tsv"))) or "none"
            raise UsageError(f"{folder / 'qrels' / (split + '.tsv')}: file not found (splits there: {have})")
        qs, source = load_beir(folder, split)[1], f"{folder} {split} queries"
    else:
        return None
    if not qs:
        raise UsageError(f"{source} holds no questions")
    qrels = {q.id: (q.metadata.get("qrels") or {d: 1 for d in (q.relevant_doc_ids or [])}) for q in qs}
    return LabelledQueries([q.question for q in qs], [q.id for q in qs], qrels, source)
