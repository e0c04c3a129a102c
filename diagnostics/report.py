"""Diagnose a run: classify every judged sample and analyse disagreements (the run folder writes them as
``diagnoses.jsonl`` and ``diagnosis.json``: corpora.run_folder.RunFolder.write_diagnoses)."""
from __future__ import annotations

from collections import Counter

from corpora.records import Diagnosis, Judgement
from diagnostics.classify import Thresholds, classify
from diagnostics.disagreement import judge_disagreements, metric_disagreements
from diagnostics.taxonomy import DEFINITIONS


def category_table(diagnoses: list[Diagnosis], top: int = 3) -> list[dict]:
    counts = Counter(d.category for d in diagnoses)
    n = len(diagnoses) or 1
    return [{"category": cat, "count": k, "share": k / n,
             "examples": [d.sample_id for d in diagnoses if d.category == cat][:top],
             "definition": DEFINITIONS[cat]} for cat, k in counts.most_common()]


def diagnose(judgements: list[Judgement], th: Thresholds | None = None) -> tuple[list[Diagnosis], dict]:
    diagnoses = [classify(j, th) for j in judgements]
    report = {"n_samples": len(diagnoses), "categories": category_table(diagnoses),
              "secondary": dict(Counter(c for d in diagnoses for c in d.secondary).most_common()),
              "metric_disagreements": metric_disagreements(judgements, th),
              "judge_disagreements": judge_disagreements(judgements)}
    return diagnoses, report

