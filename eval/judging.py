"""Judge traces with (metric, judge) pairs in batches into a run folder: each trace's Judgement is appended to
``results.jsonl`` as soon as its batch is done, then ``results.parquet`` and ``summary.json`` are written.

Kill it at any point and rerun: a trace already judged with the same metrics, judges and content is not judged again;
an edited trace, or a changed configuration, is (a judgement is keyed by the sample id, the evaluation's hash and the
trace's content hash; corpora/run_folder.py says how the log is read). So is a trace a judge could not judge last time
(its call failed, it raised or timed out: ``judge_failed``), as ``ragdoctor run`` asks a failed question again; an
honest unmeasured result (no claims, no contexts, an unparseable verdict) is kept."""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from corpora.errors import NOTICES, InputError
from corpora.labels import read_labels
from corpora.records import Judgement, MetricResult, Trace
from corpora.run_folder import RESULTS_TABLE, SUMMARY, WARNINGS, RunFolder
from eval.judges.base import Judge
from eval.metrics import get
from eval.summary import results_frame, summarize

__all__ = ["Engine", "EvalRun", "LocalEngine", "eval_hash", "evaluate", "judge_batch", "judge_failed", "precheck",
           "write_outputs"]

MAX_ANSWER_CHARS = 20_000
MAX_CONTEXT_CHARS = 200_000
# the reasons of a result left unmeasured because its judge failed (the call, or the judge itself), not because of the
# trace: judge_batch's "judge failed", the LLM judges' "judge call failed", the ragas judge's time-out and exceptions
JUDGE_FAILURES = ("judge failed:", "judge call failed:", "judge timed out", "ragas failed:")


@dataclass
class EvalRun:
    run: RunFolder
    judgements: list[Judgement]
    summary: dict
    new: int
    resumed: int
    input_errors: list[str]
    warnings: list[str] = field(default_factory=list)
    retried: int = 0  # of ``new``: judged again because a judge failed on them last time

    @property
    def run_dir(self) -> Path:
        return self.run.path


# Bump when what a metric means changes (claim splitting, premises, rules): older results are then judged again
# instead of being resumed.
METRICS_VERSION = 28  # 4: Unicode tokens, unmeasured without contexts, [] relevant ids are not "unanswerable";
# 5: claim premises are bounded windows (40-word sentence pieces, 70-word windows, the joined best 2-3 sentences);
# 6: answer correctness checks numbers, identifiers and a leading yes/no exactly (eval/metrics/key_facts.py);
# 7: groundedness and context recall read a bare yes/no claim after the question, and check its polarity;
# 8: answer correctness is the reference's claim recall (claims the reference does not state are not wrong)
# 9: a record whose retrieved contexts are all blank is unmeasured by the context metrics (was a measured 0)
# 10: a reference without a letter or digit is none; an answer without one is unmeasured by answer relevance
# 11: a chunk is relevant to context precision when it supports some claim of the reference (was: the whole reference);
#     refusals with any apostrophe, and hedges ("I don't know, but X") judged as answers; contexts in rank order;
#     a question blocked before retrieval is not applicable to the context metrics; a long answer blocks only the
#     metrics that read it
# 12: a citation bracket of several ids ("[a#0, b#1]") is stripped from the answer's claims;
#     a record without contexts is not applicable (not unmeasured) to a metric that could not apply to it anyway
#     (retrieval metrics without labels, context recall without a reference)
# 13: numbers compare on every digit (1,048,580 is not 1,048,576); groundedness, context recall, context precision,
#     noise sensitivity and context utilisation check a claim's digits and identifiers against the passages exactly;
#     retrieval metrics rank the candidates past the cut, read qrels grades, and match relevant ids naming chunks;
#     noise sensitivity and context utilisation without a reference are not applicable with or without contexts
# 14: the llm judge reads a reply's verdict by whole words, JSON keys and negation (a refusal or two verdicts are
#     undecided), and quotes at most 3,000 characters per ask; the lexical judge leaves unmeasured what rests on a
#     claim or question without content words (was a measured 0)
# 15: claims and premise windows: citation marks of any common form dropped, hard-wrapped numbers kept, more
#     abbreviations, CJK sentence ends, table rows read with their header, greetings and headings no claims, long
#     sentences cut at clause joints with overlapping premise windows; dotted versions and addresses compared whole
# 16: "Source:" lines and the list under a "Sources" label are no claims; a fenced code block is one unit (one claim,
#     with its "Run:" intro); tables without outer pipes are rows; one "(Name, 2024)" in round brackets is kept (a place
#     or date as often as a citation); the llm judge reads "no doubt", "absolutely not" and a bare foreign yes or no
# 17: numbers grouped by dots (two or more groups), apostrophes and underscores are one number; a data size or duration
#     is compared as a quantity (64 MB is not 64 KB, 2 GB is 2048 MB, 1.5 hours is 90 minutes); two-digit years in
#     dates and '23 are read; "[PR#45]" and other issue references are no citation marks; emoji are no content words;
#     context precision leaves blank chunks out of the ranking (named in its evidence); the llm judge's prompts put
#     each user text inside its own tags (a tag inside the text cannot close its block)
# 18: a magnitude after a space counts a noun or money ('128 K tokens' is 128K, '$1.5 M'; not 'grade 7 B', 'option 3 B
#     or 4 C'); a European decimal after dot thousands ('1.234,56') is 1234.56; a spaced or comma number with a unit
#     ('2 048 MB', '1,5 h') and 'Mbytes', 'GBs', '90 Min', '1.5 HRS' are quantities; '23-05-01' is also 2023-05-01
# 19: a duration in parts is one quantity ('1 h 30 min' = '1h30' = '1:30 h' = 90 minutes; it states neither '1 h'
#     nor a bare 30); '64 Megs', '2 gigs' and French octets ('64 Mo', '2 Go', '1 To') are data sizes; a magnitude
#     letter after a space needs a count noun or money ('128 K tokens', '1.5 M USD'; not '77 K under vacuum'); a
#     duration glued in parts ('1h30') is no identifier answer correctness must find written the same way
# 20: retrieval metrics on traces decide chunk or document matching from labels graded above 0 only (a grade-0
#     document label no longer turns chunk labels into document matching); all-zero labels say so in their reason
# 21: a blocked record with an empty contexts list is not applicable to the context and retrieval metrics (was a
#     measured recall 0), unless its guardrails record names a rail that runs after retrieval
# 22: a clock time after at/um/à ('at 10:30 h', 'à 10h30') is a time of day, not a duration; 'gigs'/'megs' are sizes
#     only about data ('played 2 gigs' is 2); '1 hour, 30 minutes' and number words with a unit ('two hours' = 120
#     min) are one quantity; milli/micro/nanoseconds are units; K after a temperature word is kelvin ('cooled to 77K')
# 23: the llm judge withholds sentences aimed at a model from premises, passages and questions and judges a claim
#     carrying one (an order to the judge: "reply SUPPORTED") unsupported without asking; the ragas judge withholds them
#     from chunks; "as an assistant" inside a sentence is no order ("employed as an assistant to the chemist")
# 24: answer relevance decides a bare answer (<= 4 words, no auxiliary) by rules for every judge: 1.0 when it gives
#     the yes/no, number or date its question asks for or names one of the alternatives offered, 0.0 when it gives
#     another kind, unmeasured when the fragment cannot tell (eval/metrics/answer_types.py)
# 25: the ragas judge withholds sentences aimed at a model from the reference and attack sentences from the question
#     too, and leaves the metrics that send it an answer carrying one unmeasured (ragas splits an answer itself);
#     orders to a judge are found in German, French, Spanish, Italian, Portuguese, Chinese and Japanese as well; a
#     claim repeating its evidence with one word turned to its opposite ("disabled" for "enabled", a "not" more or
#     less) is not supported by it, for every judge and every metric that reads claims (eval/metrics/flips.py)
# 26: a negation about a statement the text reports ("It is not widely known that X", "This does not mean that X")
#     is not read as X's opposite by the flip rule, nor is "may or may not", nor a negation of a word the other side
#     does not say (a bare "The bridge" against "The bridge was never completed"); "not true that X" still is
# 27: answer correctness reads an answer (or a reference) that states words of its own without a yes/no question before
#     it: the question's words are the statement a claim may repeat ("Is it exact?" before "It is approximate."); and
#     every metric that checks claims reads one, after a yes/no question, without the yes or no it opens with ("Yes, it
#     is exact." as "It is exact."; eval/yes_no.py)
# 28: a "no" that affirms ("No doubt, it is.", "Without a doubt.") is a yes, one that answers nothing ("No more than 8
#     GPUs.", "No matter the size") and a mixed one ("Yes and no.") no yes/no; "Of course." and "Sure." answer yes,
#     "Never." and "No way." no; a count said "a single" or "a dozen" is the number (1, 12) where number words are read
#     (answer correctness, against a short reference), as are 'halves' (0.5), 'doubles' (2) and 'a quarter' (0.25); a
#     percentage is also its fraction ('50%' is stated by 'half') and '3x' a number, no identifier a reference must
#     spell the same way; '4K' is also 4,096 (and '128K' 131,072), 'a 7-billion-parameter model' 7e9, 'v2' and 'version
#     2' state each other, an ordinal word states its number ('first' states '1st'), a half of a unit in words is the
#     quantity ('an hour and a half' is 90 minutes, 'half a dozen' 6), scientific notation is one number ('3e-4' is
#     0.0003), 'GiB' is a unit (no identifier) and Hz and FLOPS compare across prefixes, a month of a year is a date
#     ('March 2023' = '2023-03', stated by a day of it) and a decade one ('the 1990s' = 'the 90s'); the flip rule reads
#     a claim's opening "No" as its negation unless an answer word ("No, ..."), and a verb that denies the next ("fails
#     to", "refused to", "unable to") as a negation


def _first_line(exc: Exception) -> str:
    """What went wrong, in one line: pydantic's first line says only "1 validation error for MetricResult", so a
    validation error is its model, first field and message ("MetricResult: value: a result with status ok needs a
    value")."""
    if isinstance(exc, ValidationError) and exc.errors():
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        return f"{exc.title}: {where + ': ' if where else ''}{msg}".replace("\n", " ")
    return str(exc).splitlines()[0] if str(exc) else ""


def eval_hash(metrics: Sequence[str], judges: Sequence[Judge]) -> str:
    key = {"metrics": sorted(metrics), "judges": sorted(j.config_id for j in judges), "version": METRICS_VERSION}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def judge_failed(j: Judgement) -> str | None:
    """The reason of the first result of ``j`` that its judge failed to make (a call that failed, a judge that raised
    or timed out: judging again may succeed), or None."""
    return next((r.reason for r in j.results
                 if r.status == "unmeasured" and r.reason and r.reason.startswith(JUDGE_FAILURES)), None)


def precheck(t: Trace, metric: str, judge_name: str) -> MetricResult | None:
    """Inputs no judge should be asked about: failed generations and oversized texts become unmeasured here."""
    if (missing := get(metric).missing(t, judge_name)) is not None:
        return missing
    if t.outcome == "error":
        return MetricResult.unmeasured(metric, judge_name, f"pipeline error: {t.error or 'unknown'}")
    needs = get(metric).needs
    if "answer" in needs and len(t.answer) > MAX_ANSWER_CHARS:  # only the metrics that read the answer
        return MetricResult.unmeasured(metric, judge_name,
                                       f"answer too long to judge ({len(t.answer):,} > {MAX_ANSWER_CHARS:,} chars)")
    if "contexts" in needs and sum(len(c.text) for c in t.chunks) > MAX_CONTEXT_CHARS:
        return MetricResult.unmeasured(metric, judge_name,
                                       f"contexts too long to judge (> {MAX_CONTEXT_CHARS:,} chars)")
    return None


def _failure(metric: str, judge: Judge, exc: Exception) -> MetricResult:
    return MetricResult.unmeasured(metric, judge.name, f"judge failed: {type(exc).__name__}: {_first_line(exc)}"[:300])


def _judge_once(judge: Judge, metric: str, traces: list[Trace]) -> list[MetricResult]:
    got = judge.judge(metric, traces) if traces else []
    if len(got) != len(traces):
        raise RuntimeError(f"judge returned {len(got)} results for {len(traces)} samples")
    return got


# after this many samples judged alone in a row fail as the whole batch did, the judge is failing, not a sample: the
# rest of the batch takes the same reason without being asked (a judge that cannot load is not asked 16 times)
ALONE_FAILURES_BEFORE_GIVING_UP = 2


def _judged(judge: Judge, metric: str, traces: list[Trace]) -> list[MetricResult]:
    """``judge``'s results for ``traces``, one call for the batch. A judge that raises on the batch is asked again
    for each sample alone, so a sample that makes it fail is unmeasured with the reason and the others of its batch
    are still measured; when the samples fail alone as the batch did, the rest take that reason."""
    try:
        return _judge_once(judge, metric, traces)
    except Exception as exc:  # a judge failure is data, not a crash of the run
        batch_failure = _failure(metric, judge, exc)
    if len(traces) == 1:
        return [batch_failure]
    out: list[MetricResult] = []
    same_in_a_row = 0
    for t in traces:
        if same_in_a_row >= ALONE_FAILURES_BEFORE_GIVING_UP:
            out.append(batch_failure)
            continue
        try:
            out.extend(_judge_once(judge, metric, [t]))
            same_in_a_row = 0
        except Exception as exc:
            failed = _failure(metric, judge, exc)
            same_in_a_row = same_in_a_row + 1 if failed.reason == batch_failure.reason else 0
            out.append(failed)
    return out


def judge_batch(traces: list[Trace], metrics: Sequence[str], judges: Sequence[Judge]) -> list[Judgement]:
    """One Judgement per trace: every metric by every judge that measures it. A judge that fails makes its results
    unmeasured with the reason (a failure is data, not a crash of the run): only the samples it fails on, when it
    can judge the others of the batch alone."""
    per_trace: list[list[MetricResult]] = [[] for _ in traces]
    for judge in judges:
        for metric in metrics:
            if not judge.supports(metric):
                continue
            pre = [precheck(t, metric, judge.name) for t in traces]
            idx = [i for i, p in enumerate(pre) if p is None]
            t0 = time.perf_counter()
            got = _judged(judge, metric, [traces[i] for i in idx])
            per_item = (time.perf_counter() - t0) / max(1, len(idx))
            for i, result in zip(idx, got):
                pre[i] = result.model_copy(update={"seconds": round(per_item, 4)})
            for i, done in enumerate(pre):
                per_trace[i].append(done)  # type: ignore[arg-type]  # every slot is filled by now
    return [Judgement(sample_id=t.sample_id, results=r, trace=t) for t, r in zip(traces, per_trace)]


class Engine(Protocol):
    """Where the batches are judged: ``judge`` yields each batch's judgements (one per trace, any batch order) as they
    are made. ``judges`` are the driver's: they name the evaluation (its hash); an engine that judges elsewhere builds
    its own and must give the same ``config_id``s."""

    name: str

    def judge(self, batches: list[list[Trace]], metrics: Sequence[str],
              judges: Sequence[Judge]) -> Iterator[list[Judgement]]: ...


class LocalEngine:
    """In this process, one batch after another (the default: no extra import, nothing started)."""

    name = "local"

    def judge(self, batches: list[list[Trace]], metrics: Sequence[str],
              judges: Sequence[Judge]) -> Iterator[list[Judgement]]:
        for batch in batches:
            yield judge_batch(batch, metrics, judges)


def evaluate(traces: list[Trace], *, metrics: Sequence[str], judges: Sequence[Judge], run: RunFolder | str | Path,
             batch_size: int = 16, input_errors: list[InputError] | None = None, source: str | None = None,
             progress: bool = True, warnings: list[str] | None = None, engine: Engine | None = None) -> EvalRun:
    """Judge every trace not already judged in ``run`` with this configuration and content (on ``engine``, default
    in this process); write the outputs. Every engine writes the same run folder: the judgements stream into
    results.jsonl as their batches arrive."""
    engine = engine or LocalEngine()
    run = run if isinstance(run, RunFolder) else RunFolder(run)
    if batch_size < 1:
        raise InputError(None, f"batch size must be at least 1, got {batch_size}", field="batch_size")
    seen: set[str] = set()
    for t in traces:
        if t.sample_id in seen:
            raise InputError(None, f"duplicate sample id '{t.sample_id}': every sample needs its own id", field="id")
        seen.add(t.sample_id)
    run.check_eval_writable()
    run.path.mkdir(parents=True, exist_ok=True)
    h = eval_hash(metrics, judges)
    hashes = {t.sample_id: t.content_hash() for t in traces}

    failed: dict[str, str] = {}  # sample id -> why its judge failed last time: judged again

    def reusable(lines: list[Judgement]) -> dict[str, Judgement]:
        index = {(j.sample_id, j.eval_hash, j.sample_hash): j for j in lines}  # the latest line of a key wins
        found = {sid: index[(sid, h, sh)] for sid, sh in hashes.items() if (sid, h, sh) in index}
        failed.update({sid: why for sid, j in found.items() if (why := judge_failed(j))})
        return {sid: j for sid, j in found.items() if sid not in failed}

    def stamped(judged: list[Judgement]) -> list[tuple[str, Judgement]]:
        for j in judged:
            j.eval_hash, j.sample_hash = h, hashes[j.sample_id]
        return [(j.sample_id, j) for j in judged]

    # reading the log comes first: a foreign results.jsonl is refused before anything is written
    resume = run.results.resume(traces, item_id=lambda t: t.sample_id, reusable=reusable)
    if failed:
        NOTICES.warning("judging again %d sample(s) a judge failed on last time (first: %s)", len(failed),
                        next(iter(failed.values()))[:160])
    config = {"metrics": list(metrics), "judges": [j.config_id for j in judges], "eval_hash": h, "source": source,
              "n_samples": len(traces), "batch_size": batch_size, "engine": engine.name,
              "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
    key = run.write_config(config, hashes)
    errors = [str(e) for e in (input_errors or [])]
    notes = list(dict.fromkeys(warnings or []))
    run.record_input_errors("eval", errors)
    run.write_lines(WARNINGS, notes)
    batches = [[t for t, _ in batch] for batch in resume.batches(batch_size)]
    made = (stamped(judged) for judged in engine.judge(batches, metrics, judges))
    judgements = resume.collect(made, desc="judging", unit="sample", progress=progress)
    summary = write_outputs(run, judgements, errors, notes, run_key=key)
    return EvalRun(run, judgements, summary, len(resume.made), len(resume.done), errors, notes, len(failed))


def write_outputs(run: RunFolder, judgements: list[Judgement], input_errors: list[str],
                  warnings: list[str] | None = None, run_key: str | None = None) -> dict:
    """results.parquet and summary.json (with the run key, which the gate checks against config.json's)."""
    results_frame(judgements).to_parquet(run.file(RESULTS_TABLE), index=False)
    summary = summarize(judgements, labels=read_labels(run))  # labels.jsonl: the PPI-calibrated means
    if run_key:
        summary["run_key"] = run_key
    summary["input_errors"] = input_errors
    summary["warnings"] = list(warnings or [])
    run.write_json(SUMMARY, summary)
    return summary
