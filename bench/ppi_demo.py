"""PPI on a run of the bundled question set: labels for N samples written by a rule from the planted ground truth (not
by a person: who = "planted-ground-truth"), then the judges' plain means against the PPI-corrected ones, with CIs.

    .venv/bin/python bench/ppi_demo.py runs/demo --n 40 [--out bench/results/ppi_demo.json]

The rule reads what the question set plants (its reference answer, whether it is answerable) and the trace:
  answer_correctness  unanswerable question: yes when the answer is a refusal; answerable: no for a refusal, else yes
                      when every key fact of the reference (its numbers and identifiers, eval/metrics/key_facts.py)
                      is in the answer; a reference without key facts gives no label
  groundedness        an answer stating key facts: yes when every one of them is in the retrieved contexts; a
                      refusal, or an answer without key facts, gives no label
Samples are taken in the Label page's order (eval/labelling.py: stratified by the preferred judge's groundedness),
the ones the rule cannot decide skipped, until N per metric are labelled. Labels already in the run by this labeller
are replaced (the latest label wins), others' are left alone. A rule is a crude labeller (it misses paraphrased
numbers, and counts a fact in the contexts as support whatever the sentence says): read the result as a worked
example of the machinery, not as the judges' true accuracy."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from corpora.bundled import bundled_questions  # noqa: E402
from corpora.labels import add_labels  # noqa: E402
from corpora.records import Label, Question, Trace  # noqa: E402
from corpora.run_folder import RunFolder  # noqa: E402
from eval.answerability import refused  # noqa: E402
from eval.calibration import for_run  # noqa: E402
from eval.judges.numbers import numbers  # noqa: E402
from eval.labelling import queue  # noqa: E402
from eval.metrics.key_facts import identifiers, missing_facts  # noqa: E402
from ragdoctor.cmd_labels import render_calibrated  # noqa: E402
from ragdoctor.dashboard.data import load_run  # noqa: E402
from ragdoctor.dashboard.label_data import scores_for  # noqa: E402

WHO = "planted-ground-truth"
METRICS = ("groundedness", "answer_correctness")


def has_facts(text: str) -> bool:
    return bool(numbers(text) or identifiers(text))


def correct(t: Trace, q: Question) -> float | None:
    if q.answerable is False or q.labelled_unanswerable:
        return float(refused(t))
    if refused(t) or t.outcome in ("error", "blocked"):
        return 0.0
    if not q.reference or not has_facts(q.reference):
        return None
    return float(not missing_facts(q.reference, t.answer, q.question))


def grounded(t: Trace) -> float | None:
    if refused(t) or t.outcome != "answered" or not has_facts(t.answer) or t.contexts is None:
        return None
    return float(not missing_facts(t.answer, " ".join(t.context_texts), t.question))


def planted_labels(run_dir: Path, n: int, seed: int = 0) -> list[Label]:
    """Up to ``n`` labels per metric, in the Label page's order, from the rule above."""
    run = load_run(run_dir)
    questions = {q.id: q for q in bundled_questions()}
    counts = dict.fromkeys(METRICS, 0)
    out: list[Label] = []
    for sid in queue(scores_for(run, "groundedness"), seed=seed):
        t, q = run.trace(sid), questions.get(sid)
        if t is None or q is None:
            continue
        for metric, value in (("groundedness", grounded(t)), ("answer_correctness", correct(t, q))):
            if value is not None and counts[metric] < n:
                out.append(Label(sample_id=sid, metric=metric, value=value, who=WHO, sample_hash=t.content_hash(),
                                 note="derived by bench/ppi_demo.py from the planted ground truth, not a person"))
                counts[metric] += 1
        if all(c >= n for c in counts.values()):
            break
    return out


def _ours(line: str) -> bool:
    """A labels.jsonl line this script wrote (who = WHO). Everything else, a person's labels (earlier ones too, which
    the log keeps as history) and lines that do not parse, is never touched."""
    try:
        row = json.loads(line)
    except ValueError:
        return False
    return isinstance(row, dict) and row.get("who") == WHO


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="an evaluated run folder of the bundled questions (e.g. from `ragdoctor demo`)")
    ap.add_argument("--n", type=int, default=40, help="labels per metric (default 40; PPI needs 30)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the calibrated rows as JSON here")
    args = ap.parse_args(argv)
    run_dir = Path(args.run)
    if not RunFolder(run_dir).summary():
        print(f"bench/ppi_demo.py: {run_dir}: no current summary.json (evaluate the run first)", file=sys.stderr)
        return 2
    labels = planted_labels(run_dir, args.n, args.seed)
    if not labels:
        print(f"bench/ppi_demo.py: {run_dir}: no sample of the bundled question set to label", file=sys.stderr)
        return 2
    folder = RunFolder(run_dir)
    if folder.file("labels.jsonl").exists():  # drop this script's earlier labels; every other line stays verbatim
        lines = folder.file("labels.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in lines if not _ours(line)]
        if len(kept) < len(lines):
            folder.write_text("labels.jsonl", "".join(kept))
    add_labels(run_dir, labels)
    rows = [r for r in for_run(run_dir) if r["metric"] in METRICS]
    per = {m: sum(lb.metric == m for lb in labels) for m in METRICS}
    yes = {m: sum(lb.value for lb in labels if lb.metric == m) for m in METRICS}
    print(f"labels written by rule from the planted ground truth (who={WHO}): "
          + ", ".join(f"{m} {per[m]} ({yes[m]:.0f} yes)" for m in METRICS))
    print(render_calibrated(rows))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"run": str(run_dir), "labels": per, "rows": rows}, indent=2),
                                  encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
