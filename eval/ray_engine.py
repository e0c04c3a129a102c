"""``--engine ray``: judge an evaluation's batches on Ray Data actors, on this machine or on a cluster.

Each row of the Ray dataset is one judge batch (the same ``batch_size`` traces, in the same order, that the local
engine judges: a judge whose scores depend on its batch gives the same verdicts on both). Each actor builds its judges
once (the NLI cross-encoder on the GPU when the actor was given one) and returns the batch's judgements serialized; the
driver streams them into the run folder's append-only results.jsonl as they arrive (eval/judging.py), so resume,
summary, CIs, gate and dashboard are those of a local run. A batch is appended as soon as it is judged, in the order
the batches finish: one batch per block, one call at a time per actor, no output ordering and no prefetching
(rag/ray_runtime.actor_map, dataset_options, worker_rows), so none waits behind a slower one and a Ctrl+C loses no
finished batch. Ray restarts a worker that died and retries its batch up to MAX_RESTARTS times (a batch that kills
every worker it meets would otherwise loop for ever); a batch that still failed (its worker died each time, or it
raised outside the judges) is dropped by Ray Data and the rest is judged; then its samples are judged again one at a
time on fresh workers, without retries, and only a sample that fails alone is unmeasured with the cause, as a judge
that raised makes them (judge_batch: "judge failed: ..."), so a rerun judges it again (without that pass, the samples
batched with it would fail with it on every rerun, which batches them together again). Past
failed_batches_allowed such batches, once an actor has died more than POOL_RESTARTS times, or when a worker cannot
build its judges, the run stops with one line naming the cause, what was delivered saved. A judgement delivered
twice is appended once (corpora/run_folder.Resume.collect).

Ray is imported only here, and only when an engine runs: the default ``--engine local`` never imports it."""
from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from corpora.errors import UsageError
from corpora.records import Judgement, Trace
from eval.judges.base import Judge
from eval.judging import judge_batch
from rag.fleet import merge_request_counts
from rag.ray_runtime import (
    MAX_RESTARTS,
    WorkerFailure,
    actor_map,
    check_address,
    dataset_options,
    dropped_blocks,
    ray_module,
    ray_session,
    worker_rows,
)

__all__ = ["JudgeWorker", "RayEngine", "failed_batches_allowed"]

JudgeBuilder = Callable[[], AbstractContextManager[Sequence[Judge]]]
# a block is what a worker hands back at once: one judge batch per block up to this many batches (past it, a block
# holds a few consecutive batches, which reach results.jsonl together: the price of fewer objects in Ray's store)
MAX_BLOCKS = 4096


# restarts of one actor where failed batches are dropped: a failed batch kills its actor MAX_RESTARTS + 1 times and
# leaves it restarting, so the pool loses no actor to four of them; an actor that dies more often than this stops the
# run (rag/ray_runtime.dropped_blocks), as one that died past MAX_RESTARTS did when no batch could fail
POOL_RESTARTS = 4 * (MAX_RESTARTS + 1) - 1


def failed_batches_allowed(n_blocks: int) -> int:
    """Blocks whose task fails for good (a worker died on it MAX_RESTARTS + 1 times, or it raised outside the judges)
    that a run goes on past, their results unmeasured: 3, or 1% of a large run. Past that the failure is the
    workers', not a batch's (every batch kills them): the run stops instead of killing four workers per batch to the
    end."""
    return max(3, n_blocks // 100)


class _Unjudged:
    """Stands in for one of the driver's judges on a batch no Ray worker could judge: each result it would make is
    unmeasured with ``why``, as judge_batch makes a judge's that raised."""

    def __init__(self, judge: Judge, why: str):
        self.inner, self.why = judge, why
        self.name, self.family = judge.name, judge.family

    @property
    def config_id(self) -> str:
        return self.inner.config_id

    def supports(self, metric: str) -> bool:
        return self.inner.supports(metric)

    def judge(self, metric: str, traces: list[Trace]) -> list:
        raise WorkerFailure(self.why)


class JudgeWorker:
    """A Ray Data actor: builds its judges once, then judges one batch per row (``traces``: the batch's traces as a
    JSON list of Trace JSON) into ``judgements`` (a JSON list of Judgement JSON) and the ``judges`` that made them
    (their config ids, so the driver can check every worker ran the judges it named)."""

    def __init__(self, build: JudgeBuilder, metrics: Sequence[str]):
        self.stats: list = []  # the request counters of this worker's LLM judges (rag.fleet.RequestStats)
        takes = "request_stats" in inspect.signature(build).parameters
        self._scope: AbstractContextManager[Sequence[Judge]] | None = (
            build(request_stats=self.stats) if takes else build())  # type: ignore[call-arg]
        self.judges = list(self._scope.__enter__())  # type: ignore[union-attr]  # set just above
        self.metrics = list(metrics)
        self.config_ids = json.dumps([j.config_id for j in self.judges])
        self.worker = uuid.uuid4().hex  # the driver keeps each worker's latest (cumulative) request counts

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = []
        for payload in batch["traces"]:
            traces = [Trace.model_validate_json(t) for t in json.loads(payload)]
            out.append(json.dumps([j.model_dump_json() for j in judge_batch(traces, self.metrics, self.judges)]))
        sent = json.dumps({"worker": self.worker, "counts": [s.as_dict() for s in self.stats]})
        return {"judgements": np.array(out, dtype=object),
                "judges": np.array([self.config_ids] * len(out), dtype=object),
                "requests": np.array([sent] * len(out), dtype=object)}

    def __del__(self) -> None:
        scope = getattr(self, "_scope", None)
        if scope is not None:
            self._scope = None
            scope.__exit__(None, None, None)


@dataclass
class RayEngine:
    """Judge batches on ``num_workers`` Ray Data actors (``gpus_per_worker`` GPUs each), built by ``build`` (a
    picklable callable returning a context manager that yields the judges: ragdoctor.flow.built_judges with the run's
    selection). ``address``: see ``connect``; ``init`` goes to ``ray.init`` when this engine starts Ray."""

    build: JudgeBuilder
    address: str | None = None
    num_workers: int = 1
    gpus_per_worker: float = 0.0
    init: dict[str, Any] = field(default_factory=dict)
    name: str = "ray"
    # what the workers' LLM judges sent, added up over workers (None until a run; {} when no worker's judge sent)
    request_counts: dict[str, Any] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.num_workers < 1:
            raise UsageError(f"--num-workers must be at least 1, got {self.num_workers}")
        if self.gpus_per_worker < 0:
            raise UsageError(f"--gpus-per-worker must be 0 or more, got {self.gpus_per_worker:g}")
        ray_module()  # Ray missing: say how to install it before anything is loaded
        check_address(self.address)

    def judge(self, batches: list[list[Trace]], metrics: Sequence[str],
              judges: Sequence[Judge]) -> Iterator[list[Judgement]]:
        if not batches:
            return
        with ray_session(self.address, self.init, self.gpus_per_worker) as ray:
            yield from self._stream(ray, batches, metrics, judges)

    def _stream(self, ray: Any, batches: list[list[Trace]], metrics: Sequence[str], judges: Sequence[Judge],
                latest: dict[str, list] | None = None, *, alone: bool = False) -> Iterator[list[Judgement]]:
        """``alone``: the second pass over the samples of the batches the first dropped, one sample per batch: each
        may fail (no run stop for it), once (no retry: its batch already killed workers MAX_RESTARTS + 1 times)."""
        expected = [j.config_id for j in judges]
        rows = [{"traces": json.dumps([t.model_dump_json() for t in batch])} for batch in batches]
        blocks = min(len(rows), MAX_BLOCKS)
        # one batch per block (a block's batches come back together), handed on in the order they finish: a batch
        # done is appended while a slower one is still being judged (resume does not need the input order)
        ds = dataset_options(ray.data.from_items(rows, override_num_blocks=blocks), preserve_order=False,
                             droppable=blocks if alone else failed_batches_allowed(blocks))
        ds = actor_map(ds, JudgeWorker, num_workers=min(self.num_workers, len(rows)),
                       gpus_per_worker=self.gpus_per_worker,
                       max_restarts=POOL_RESTARTS + len(rows) if alone else POOL_RESTARTS,
                       task_retries=0 if alone else MAX_RESTARTS, fn_constructor_args=(self.build, list(metrics)))
        own = latest is None
        latest = {} if latest is None else latest  # each worker's cumulative counts, as its latest batch reported them
        delivered: set[str] = set()
        try:
            with dropped_blocks() as causes:
                for row in worker_rows(ds, "a Ray worker could not judge (the judgements made so far are saved; a "
                                           "rerun resumes)"):
                    sent = json.loads(row["requests"])
                    latest[sent["worker"]] = sent["counts"]
                    ran = json.loads(row["judges"])
                    if ran != expected:
                        raise UsageError(f"a Ray worker built other judges than the driver ({', '.join(ran)} instead "
                                         f"of {', '.join(expected)}): every node needs the same judge models and "
                                         "ragdoctor version")
                    judged = [Judgement.model_validate_json(j) for j in json.loads(row["judgements"])]
                    delivered.update(j.sample_id for j in judged)
                    yield judged
            missing = [[t for t in batch if t.sample_id not in delivered] for batch in batches] if causes else []
            if not alone and any(len(batch) > 1 for batch in missing):  # judged again a sample at a time
                yield from self._stream(ray, [[t] for batch in missing for t in batch], metrics, judges, latest,
                                        alone=True)
            elif causes:  # the batches Ray Data dropped: unmeasured with the cause, as a judge that raised leaves them
                yield from self._unjudged(batches, delivered, causes, metrics, judges)
        finally:  # added up once, however the stream ended
            if own:
                counts = [c for worker in latest.values() for c in worker]
                self.request_counts = merge_request_counts(counts) if counts else {}

    @staticmethod
    def _unjudged(batches: list[list[Trace]], delivered: set[str], causes: list[str], metrics: Sequence[str],
                  judges: Sequence[Judge]) -> Iterator[list[Judgement]]:
        """The judgements of the batches that never came back, every result a judge would have made unmeasured with
        why (which cause was whose is not known where several batches failed differently: each names them all)."""
        missing = [[t for t in batch if t.sample_id not in delivered] for batch in batches]
        missing = [batch for batch in missing if batch]
        distinct = list(dict.fromkeys(causes))
        why = (f"a Ray worker failed on this batch: {distinct[0]}" if len(distinct) == 1 else
               f"{len(missing)} batches failed on Ray workers, for: {' | '.join(distinct)}")
        stand_ins = [_Unjudged(j, why) for j in judges]
        for batch in missing:
            yield judge_batch(batch, metrics, stand_ins)
