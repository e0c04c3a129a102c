"""Diagnose a whole run folder: classify every judged sample, analyse disagreements, write
``diagnoses.jsonl`` and ``diagnosis.json`` into the run folder."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from diagnostics.classify import Thresholds, classify
from diagnostics.disagreement import judge_disagreements, metric_disagreements
from diagnostics.taxonomy import DEFINITIONS, Diagnosis
from eval.records import Judgement


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
              "metric_disagreements": metric_disagreements(judgements),
              "judge_disagreements": judge_disagreements(judgements)}
    return diagnoses, report


def write_diagnosis(run_dir: str | Path, diagnoses: list[Diagnosis], report: dict) -> None:
    run_dir = Path(run_dir)
    with open(run_dir / "diagnoses.jsonl", "w", encoding="utf-8") as fh:
        for d in diagnoses:
            fh.write(d.model_dump_json() + "\n")
    (run_dir / "diagnosis.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")


def read_diagnoses(run_dir: str | Path) -> list[Diagnosis]:
    path = Path(run_dir) / "diagnoses.jsonl"
    if not path.exists():
        return []
    return [Diagnosis.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
