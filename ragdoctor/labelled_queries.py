"""The labelled queries a lab command measures with: ``--questions FILE``, else the bundled questions (bundled corpus,
pipeline index), else a BEIR folder's qrels split. Shared by ``index-lab`` and ``retrieval-lab``."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from corpora.errors import UsageError, warn
from corpora.records import relevant_docs


@dataclass
class LabelledQueries:
    questions: list[str]
    ids: list[str]
    qrels: dict[str, dict[str, int]]
    source: str

    def warn_unknown(self, corpus_ids: set[str]) -> None:
        """Relevant ids that name neither a document nor a chunk of the index (``corpus_ids`` holds both): each such
        query can never score full marks; say so, once."""
        warn_unknown_labels(self.source, (d for r in self.qrels.values() for d in relevant_docs(r)), corpus_ids)


def labelled_queries(corpus: str, questions: str | None, split: str | None, own_index: bool, *,
                     labelled_only: bool = True) -> LabelledQueries | None:
    """None when the corpus has no labelled queries of its own and none were given. A ``--questions`` file asking one
    text under two ids is warned about once, as ``ragdoctor run`` warns (rag.session.warn_repeated_texts). ``split``
    (default "train") names a BEIR folder's qrels file; given where no BEIR qrels are read, or naming a file that is
    not there, it is a usage error rather than a silent fallback to other queries. ``labelled_only``: only the
    questions that name a relevant document (a usage error when none does); else every question (the index lab times
    them all)."""
    from corpora.bundled import bundled_questions  # noqa: PLC0415 - lazy: the corpus modules load the question sets
    from corpora.loaders import load_beir, load_question_set  # noqa: PLC0415
    from rag.session import warn_repeated_texts  # noqa: PLC0415 - the warning `ragdoctor run` gives

    folder = Path(corpus)
    beir = folder.is_dir() and (folder / "qrels").is_dir()
    if split is not None and (questions or not beir):
        why = "--questions is given" if questions else f"{corpus} is not a BEIR folder (no qrels/)"
        raise UsageError(f"--split: only a BEIR corpus's own queries read it, and {why}")
    split = split or "train"
    if questions:
        qs, source = load_question_set(questions), questions
        warn_repeated_texts(source, qs)  # a text under two ids weighs twice in every mean, as in `ragdoctor run`
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
    qrels = {q.id: q.relevance_grades for q in qs}
    # a query without a relevant document (no labels, or every grade 0) has no nDCG to measure: left out, and said
    # (questions labelled unanswerable have none by design: left out without a word)
    labelled = [q for q in qs if relevant_docs(qrels[q.id]) or not labelled_only]
    if not labelled:
        raise UsageError(f"{source}: no question names a relevant document (relevant_doc_ids, or a qrels grade above "
                         "0): nothing to measure retrieval against")
    kept = {q.id for q in labelled}
    unlabelled = [q for q in qs if q.id not in kept and not q.labelled_unanswerable]
    if unlabelled:
        warn(f"{source}: {len(unlabelled)} of {len(qs)} questions name no relevant document (no labels, or every "
             f"grade 0; first: {unlabelled[0].id!r}): left out of the measurement")
    return LabelledQueries([q.question for q in labelled], [q.id for q in labelled],
                           {q.id: qrels[q.id] for q in labelled}, source)


def warn_unknown_labels(source: str, relevant: Iterable[str], corpus_ids: set[str]) -> None:
    """Relevance labels naming documents the corpus does not hold can never be retrieved: say so, once."""
    unknown = sorted({d for d in relevant if d not in corpus_ids})
    if unknown:
        shown = ", ".join(repr(d) for d in unknown[:3]) + (", ..." if len(unknown) > 3 else "")
        warn(f"{source}: {len(unknown)} relevant id(s) name no document or chunk of the corpus ({shown}): retrieval "
             "can never find them, so their questions' recall is 0 until the labels or the corpus are fixed")
