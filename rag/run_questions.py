"""Answer a question set through the pipeline into a run folder's traces log, one Trace per line as it completes.

A killed run resumes: a question already traced with the same pipeline configuration, the same index content and
the same question record (question, reference, labels, metadata) is not asked again; an edited question, a changed
config or a changed corpus is. The later trace of a sample supersedes the earlier (readers take the latest).

With ``concurrency`` N > 1, N questions are answered at once on threads; each trace is appended by this thread as it
completes (so the log's order may differ from the question order, but every question is there exactly once)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from corpora.errors import NOTICES, InputError
from corpora.records import Question, Trace
from corpora.run_folder import RunFolder, latest


@dataclass
class RunResult:
    traces: list[Trace]
    new: int
    resumed: int
    path: Path
    requests: dict | None = None  # what this invocation sent to the model server (rag.fleet.RequestStats), if any


def _legacy_match(t: Trace, q: Question) -> bool:
    """A trace written before traces carried ``input_hash``: reused when it records the same question record."""
    return not t.input_hash and (t.question, t.reference, t.relevant_doc_ids, t.metadata) == \
        (q.question, q.reference, q.relevant_doc_ids, q.metadata)


def run_questions(answer: Callable[[Question], Trace], questions: Iterable[Question], run: RunFolder | str | Path, *,
                  config_hash: str, progress: bool = True, salt: str = "", concurrency: int = 1,
                  reuses: Callable[[Trace], bool] | None = None) -> RunResult:
    """Answer every question not already answered in ``run``'s traces log (a RunFolder, or the log's path); ``salt``
    is the index's corpus checksum; ``concurrency`` questions at a time (``answer`` must then be thread-safe);
    ``reuses``: a further test a stored trace must pass to be reused (Pipeline.reuses: the reranker's precision)."""
    run = run if isinstance(run, RunFolder) else RunFolder.of_traces(run)
    run.check_traces_writable()
    questions = list(questions)
    seen: dict[str, int] = {}
    for n, q in enumerate(questions, 1):
        if seen.setdefault(q.id, n) != n:  # the questions given, not the log, are at fault
            raise InputError("questions", f"the id {q.id!r} is also question {seen[q.id]}'s: every question needs its "
                                          f"own id", line=n, field="id")
    run.traces.path.parent.mkdir(parents=True, exist_ok=True)
    keys = {q.id: q.content_hash(salt) for q in questions}
    by_id = {q.id: q for q in questions}

    def reusable(lines: list[Trace]) -> dict[str, Trace]:
        # only a sample's latest trace may be reused: it is the one every reader of the log takes
        return {sid: t for sid, t in latest(lines).items() if sid in by_id and t.config_hash == config_hash
                and t.outcome != "error" and (t.input_hash == keys[sid] or _legacy_match(t, by_id[sid]))
                and (reuses is None or reuses(t))}

    def make(batch: list[Question]) -> list[Trace]:
        traces = [answer(q) for q in batch]
        for q, t in zip(batch, traces):
            t.input_hash = keys[q.id]
        return traces

    resume = run.traces.resume(questions, item_id=lambda q: q.id, reusable=reusable)
    if concurrency <= 1:
        traces = resume.run(make, desc="answering", unit="q", progress=progress)
    else:
        traces = resume.collect(_concurrently(make, resume.batches(1), concurrency), desc="answering", unit="q",
                                progress=progress)
    return RunResult(traces, len(resume.made), len(resume.done), run.traces.path)


def _concurrently(make: Callable[[list[Question]], list[Trace]], batches: list[list[tuple[Question, str]]],
                  workers: int) -> Iterator[list[tuple[str, Trace]]]:
    """Each batch made on a pool of ``workers`` threads, yielded as it completes (the caller appends it)."""
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="answer") as pool:
        futures = {pool.submit(make, [q for q, _ in batch]): [i for _, i in batch] for batch in batches}
        given: set = set()
        try:
            for future in as_completed(futures):
                given.add(future)
                yield list(zip(futures[future], future.result()))
        except KeyboardInterrupt:  # the requests in flight finish anyway (threads are joined): keep their answers
            for future in futures:
                future.cancel()
            running = [f for f in futures if f not in given and not f.cancelled()]
            if running:
                NOTICES.warning("interrupted: saving the %d answer(s) in flight (Ctrl+C again drops them)",
                                len(running))
            for future in as_completed(running):
                if future.exception() is None:
                    yield list(zip(futures[future], future.result()))
            raise
        finally:
            for future in futures:  # killed or failed: do not start the questions still queued
                future.cancel()
