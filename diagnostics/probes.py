"""Counterfactual probes: regenerate a failed answer with the context changed, and see which change fixes it.

Variants (each only when it changes the context): ``no_conflict`` (the outdated/near-duplicate document removed),
``no_distractors`` (only retrieved chunks from relevant documents kept), ``relevant_first`` (relevant chunks moved to
the top), ``relevant_only`` (exactly the chunks of the relevant documents, fetched from the index). The first variant
that fixes the answer names the root cause: conflicting context, noise, ranking, retrieval; none: generation."""
from __future__ import annotations

from collections.abc import Callable

from tqdm import tqdm

from corpora.records import Chunk, Diagnosis, Trace
from eval.answerability import refused, unanswerable

PROBED = {"grounded_yet_hallucinated", "ungrounded_hallucination", "context_ignored", "retrieval_miss", "ranked_out",
          "noisy_context", "incomplete", "off_topic", "wrong_refusal"}
ROOT_CAUSE = {"no_conflict": "conflicting context", "no_distractors": "noise", "relevant_first": "ranking",
              "relevant_only": "retrieval"}

Generate = Callable[[str, list[tuple[str, str]]], str]  # (question, [(chunk_id, text)]) -> answer
Correctness = Callable[[Trace], float | None]  # answer correctness in [0, 1], None when unmeasured
ChunksOf = Callable[[list[str]], list[Chunk]]  # document ids -> all their chunks, from the index


def variants(s: Trace, chunks_of: ChunksOf) -> dict[str, list[Chunk]]:
    rel = set(s.relevant_doc_ids or [])
    ctx = sorted(s.chunks, key=lambda c: c.rank)
    bad = s.conflicting_doc_ids
    out: dict[str, list[Chunk]] = {}
    if bad and any(c.doc_id in bad for c in ctx):
        out["no_conflict"] = [c for c in ctx if c.doc_id not in bad]
    kept = [c for c in ctx if c.doc_id in rel]
    if kept and len(kept) < len(ctx):
        out["no_distractors"] = kept
    reordered = kept + [c for c in ctx if c.doc_id not in rel]
    if kept and reordered != ctx:
        out["relevant_first"] = reordered
    only = chunks_of(sorted(rel))
    if only and [c.chunk_id for c in only] != [c.chunk_id for c in ctx]:
        out["relevant_only"] = only
    return out


def probe(s: Trace, generate: Generate, correctness: Correctness, chunks_of: ChunksOf,
          threshold: float = 0.5) -> dict:
    """Run every variant for one sample; return answers, scores, what fixed it and the root cause. A sample whose
    original answer already passes the test a variant must pass to count as a fix (a refusal of an unanswerable
    question; else correctness at or above ``threshold``, by the same judge, and no refusal) is skipped: every variant
    would "fix" what was not broken, and the first would be named a root cause."""
    if not s.relevant_doc_ids:
        return {"skipped": "no relevance labels: probes need to know which documents are relevant"}

    def passes(t: Trace) -> tuple[bool, float | None]:
        score = correctness(t)
        ok = refused(t) if unanswerable(t) else score is not None and score >= threshold and not refused(t)
        return bool(ok), score

    if s.outcome in ("answered", "refused"):  # a blocked or failed original has no answer that could pass
        ok, before = passes(s)
        if ok:
            why = ("a refusal of an unanswerable question" if unanswerable(s) else
                   f"correctness {before:.2f} >= {threshold}" if before is not None else "")
            return {"skipped": f"the original answer already passes ({why}): there is no failure of the answer to "
                               "trace", "correctness": before}
    results = {}
    for name, ctx in variants(s, chunks_of).items():
        try:
            answer = generate(s.question, [(c.chunk_id, c.text) for c in ctx])
        except Exception as exc:  # a failed regeneration is recorded, not raised
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:200], "fixed": False}
            continue
        new = s.model_copy(update={"answer": answer, "contexts": ctx, "outcome": "answered"})
        new = new.model_copy(update={"outcome": "refused" if refused(new) else "answered"})
        fixed, score = passes(new)
        results[name] = {"answer": answer, "correctness": score, "fixed": fixed,
                         "contexts": [c.chunk_id for c in ctx]}
    cause = next((ROOT_CAUSE[n] for n in ROOT_CAUSE if results.get(n, {}).get("fixed")), None)
    answered = any("error" not in r for r in results.values())
    return {"variants": results, "root_cause": cause or ("generation" if answered else "undetermined"),
            "fixed_by": [n for n, r in results.items() if r.get("fixed")]}


def probe_run(diagnoses: list[Diagnosis], samples: dict[str, Trace], generate: Generate,
              correctness: Correctness, chunks_of: ChunksOf, limit: int | None = None, progress: bool = True) -> int:
    """Attach probe results to the failed diagnoses (in place). Returns how many samples were probed."""
    todo = [d for d in diagnoses if d.category in PROBED and d.sample_id in samples][: limit or None]
    bar = None
    if progress and todo:
        bar = tqdm(total=len(todo), desc="probing", unit="sample", leave=False, disable=None)
    for d in todo:
        d.probe = probe(samples[d.sample_id], generate, correctness, chunks_of)
        if bar:
            bar.update(1)
    if bar:
        bar.close()
    return len(todo)
