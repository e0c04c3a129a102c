"""Assemble a judge folder from trained stages: the support and relevance cross-encoders, the IDF table, the
combiners fit on held-out slices of the pool (combine.py), the stages' recipes and data manifests, a model card.

  <out>/support/        the support stage's CrossEncoder (fp16 weights, tokenizer)
  <out>/relevance/      the relevance stage's CrossEncoder
  <out>/combiner.json   {"support": spec, "relevance": spec} (eval.judges.compact.Combiner)
  <out>/idf.json        word -> IDF over the training pool's evidence texts
  <out>/heldout_metrics.json   the combiners' reports: per source AUROC (leave-one-source-out and cross-validated),
                               each feature alone, every feature subset tried
  <out>/stages/<stage>/ training_config.json, data_manifest.json, heldout_metrics.json of each stage (and of the
                        stages they started from)
  <out>/MODEL_CARD.md
"""
from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from judge_train.combine import fit_relevance, fit_support, heldout_records
from judge_train.data import (RELEVANCE_CAPS, SUPPORT_CAPS, DataConfig, heldout, heldout_half, read_pool,
                                   read_relevance_pool)
from judge_train.sources import SHARE_ALIKE, SOURCES, read_nomiracl_sets
from eval.judges.features import idf_weights

Log = Callable[[str], None]
STAGE_RECORDS = ("training_config.json", "data_manifest.json", "heldout_metrics.json")
NOT_SHIPPED = ("heldout_examples.jsonl", "README.md")


def copy_model(stage: Path, dest: Path) -> None:
    """The CrossEncoder files of a stage folder (not its training records)."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in stage.iterdir():
        if f.is_file() and f.name not in STAGE_RECORDS + NOT_SHIPPED:
            shutil.copy2(f, dest / f.name)


def copy_stage_records(stage: Path, stages_dir: Path) -> list[str]:
    """The stage's recipe, manifest and held-out metrics, and those of the stage it started from (recursively)."""
    names = []
    while stage.is_dir() and (stage / "training_config.json").exists():
        cfg = json.loads((stage / "training_config.json").read_text())
        name = cfg["recipe"]["recipe"]
        dest = stages_dir / name
        dest.mkdir(parents=True, exist_ok=True)
        for f in STAGE_RECORDS:
            if (stage / f).exists():
                shutil.copy2(stage / f, dest / f)
        names.append(name)
        base = Path(cfg["recipe"]["base_model"])
        if base == stage or not base.is_dir():
            break
        stage = base
    return names


def build(support: Path, relevance: Path | None, out: Path, data_dir: str, *, per_label: int = 120,
          percent: int = 10, seed: int = 13, log: Log = print) -> dict:
    t0 = time.time()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    copy_model(support, out / "support")
    stages = copy_stage_records(support, out / "stages")
    if relevance is not None:
        copy_model(relevance, out / "relevance")
        stages += [s for s in copy_stage_records(relevance, out / "stages") if s not in stages]
    support_records, _ = read_pool(DataConfig(data_dir=data_dir, cap_per_label=dict(SUPPORT_CAPS),
                                              heldout_percent=percent))
    idf = idf_weights(r.evidence for r in support_records if not heldout(r.group, percent))
    (out / "idf.json").write_text(json.dumps(idf, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
    log(f"idf.json: {len(idf)} words")
    from eval.judges.compact import CompactJudgeScorer

    scorer = CompactJudgeScorer(out, combiner={})
    held = heldout_records(support_records, percent, per_label, seed)
    log(f"support combiner: {len(held)} held-out records")
    combiner, report = {}, {}
    combiner["support"], report["support"] = fit_support(scorer, held, log)
    if relevance is not None:
        rel_records, _ = read_relevance_pool(DataConfig(data_dir=data_dir, cap_per_label=dict(RELEVANCE_CAPS),
                                                        heldout_percent=percent), seed)
        rel_held = heldout_records(rel_records, percent, per_label, seed)
        pairs = [(r.text, r.evidence, r.label, r.source, r.group) for r in rel_held]
        sets = [s for s in read_nomiracl_sets(Path(data_dir) / SOURCES["nomiracl"].paths[0])
                if heldout(s.group, percent) and heldout_half(s.group) == "calibrate"]
        log(f"relevance combiner: {len(pairs)} held-out pairs, {len(sets)} held-out NoMIRACL sets")
        combiner["relevance"], report["relevance"] = fit_relevance(scorer, pairs, log, sets)
    (out / "combiner.json").write_text(json.dumps(combiner, indent=2) + "\n")
    (out / "heldout_metrics.json").write_text(json.dumps(report, indent=1) + "\n")
    summary = {"stages": stages, "seconds": round(time.time() - t0, 1), "per_label": per_label,
               "heldout_percent": percent, "seed": seed}
    (out / "package.json").write_text(json.dumps(summary, indent=1) + "\n")
    log(f"judge folder {out} in {summary['seconds'] / 60:.1f} min")
    return summary


def licence_lines(stages_dir: Path) -> list[str]:
    """One table row per training source of any stage, with its licence (ShareAlike called out)."""
    used: dict[str, set[str]] = {}
    for man_path in sorted(stages_dir.glob("*/data_manifest.json")):
        man = json.loads(man_path.read_text())
        for name in man.get("sources", {}):
            used.setdefault(name, set()).add(man_path.parent.name)
    rows = ["| source | kind | licence | labels | stages |", "|---|---|---|---|---|"]
    for name in sorted(used):
        s = SOURCES[name]
        lic = s.licence + (" — **ShareAlike**" if SHARE_ALIKE in s.licence or "Sharing" in s.licence else "")
        rows.append(f"| {s.origin} | {s.kind} | {lic} | {s.labels} | {', '.join(sorted(used[name]))} |")
    return rows
