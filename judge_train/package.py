"""Assemble a judge folder from trained stages: the support and relevance cross-encoders, the IDF table, the
combiners fit on held-out slices of the pool (combine.py), the stages' recipes and data manifests, a model card.

  <out>/support/        the support stage's CrossEncoder (fp16 weights, tokenizer)
  <out>/relevance/      the relevance stage's CrossEncoder
  <out>/nli/            (optional) the general-NLI stage's CrossEncoder, a second opinion on support (nli_max)
  <out>/combiner.json   {"support": spec, "relevance": spec} (eval.judges.nli.Combiner); with "unmeasured":
                        {"relevance": why} instead of a relevance spec when the pool's calibration slice cannot fit
                        one (the bare relevance cross-encoder's probability is used)
  <out>/idf.json        word -> IDF over the training pool's evidence texts
  <out>/heldout_metrics.json   the combiners' reports: per source AUROC (leave-one-source-out and cross-validated),
                               each feature alone, every feature subset tried; each report's "unmeasured" gives the
                               reason of every None in it
  <out>/stages/<stage>/ training_config.json, data_manifest.json, heldout_metrics.json of each stage (and of the
                        stages they started from)
  <out>/MODEL_CARD.md

The calibration slice takes ``percent`` (10) of each source's groups, or less: no more than the smallest held-out share
(training_config.json's recipe.data.heldout_percent) of any stage whose model the combiners score, or of a stage it
started from (heldout() is one hash against a threshold, so the groups held out at a smaller share are held out at
every larger one: the slice is unseen by them all); the share used is in package.json ("heldout_percent"). A stage
that records none, or 0 (nothing held out), is refused before the folder at ``--out`` is touched (UsageError: exit 2);
a model folder with no records (a CrossEncoder from elsewhere) is warned of, its share unknown.

A pool whose calibration slice cannot fit the support combiner (no records, or one label only) is refused before the
folder at ``--out`` is touched (UsageError: exit 2); one that cannot fit the relevance combiner gives a folder without
it, said in combiner.json, heldout_metrics.json, package.json and the card; too few records per source to choose
the features by gives a combiner over the cross-encoder alone, said the same way.
"""
from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from corpora.errors import UsageError, warn
from corpora.jsonl import read_json_object
from judge_train.combine import (MIN_PER_LABEL, RELEVANCE_LABELS, fit_problem, fit_relevance, fit_support,
                                 heldout_records)
from judge_train.crossfit import cross_fitted_rows, fmt, stage_chain, trained_sources
from judge_train.out_folder import finished, fresh, replaceable_out
from judge_train.data import (RELEVANCE_CAPS, SUPPORT_CAPS, DataConfig, PoolRecord, heldout, heldout_half,
                              read_pool, long_evidence_records, read_relevance_pool,
                              swap_records)
from judge_train.sources import SHARE_ALIKE, SOURCES, read_nomiracl_sets
from judge_train.stage_files import heldout_shares
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


def copy_stage_records(stage: Path, stages_dir: Path, keep_existing: bool = False) -> list[str]:
    """The stage's recipe, manifest and held-out metrics, and those of the stage it started from (recursively).
    ``keep_existing``: a stage already recorded under that name keeps its records (a fold model's base chain must not
    replace the records of the stage the judge's own models came from)."""
    names = []
    for folder, recipe in stage_chain(stage):
        dest = stages_dir / recipe["recipe"]
        if not (keep_existing and dest.is_dir()):
            dest.mkdir(parents=True, exist_ok=True)
            for f in STAGE_RECORDS:
                if (folder / f).exists():
                    shutil.copy2(folder / f, dest / f)
        names.append(recipe["recipe"])
    return names


def calibration_share(stages: Sequence[Path], percent: int) -> tuple[int, str]:
    """The share of each source's groups the calibration slice takes: ``percent`` at most, and no more than the
    smallest held-out share of the ``stages`` (heldout_shares: each with the stages its weights come from), whose
    held-out groups are then all unseen by every one of them; and the log line saying it. UsageError (one line) when a
    stage records none or 0, before any folder is written; a model folder without records is warned of, and the
    others' shares are used."""
    shares: dict[str, int] = {}
    unknown: list[str] = []
    for stage in stages:
        found, blind = heldout_shares(stage)
        shares |= found
        unknown += [u for u in blind if u not in unknown]
    for folder in unknown:
        warn(f"{folder} has no training record (training_config.json): its held-out share is unknown (the calibration "
             "slice may hold records it trained on); the slice follows the other stages' shares")
    share = min([percent, *shares.values()])
    said = ", ".join(f"{Path(f).name} {v}%" for f, v in shares.items())
    return share, (f"calibration slice: {share}% of each source's groups" +
                   (f" (stages' held-out shares: {said})" if said else " (no stage records its held-out share)"))


def report_share(models: Sequence[str | Path], percent: int) -> int:
    """The held-out share a report on the pool's held-out slice may sample for judges reading ``models`` (judge folders
    or stage folders): ``percent`` at most, no more than any of their stages held out (calibration_share; a judge
    folder's stages are those its package.json lists), so that no judge is scored on records its model trained on."""
    from eval.judges.nli import is_judge_folder

    stages: list[Path] = []
    for m in map(Path, models):
        stages += judge_stages(m) if is_judge_folder(m) and (m / "package.json").is_file() else [m]
    return calibration_share(stages, percent)[0] if stages else percent


def calibration_slice(percent: int, data_dir: str | Path) -> str:
    return f"the calibration half of the pool's held-out slice ({percent}% of each source's groups) in {data_dir}"


def support_calibration(support_records: Sequence[PoolRecord], data_dir: str | Path, *, percent: int, per_label: int,
                        seed: int) -> list[PoolRecord]:
    """The records the support combiner is fit on: the calibration half of the held-out slice, with the swapped and
    buried-evidence sources made from it. UsageError (one line) when they cannot fit one: read from the pool alone,
    before any folder is written or model loaded."""
    held = heldout_records(support_records, percent, per_label, seed)
    held += swap_records(held, per_label, seed)  # changed numbers, names, polarity: a source of its own
    held += long_evidence_records(held, per_label, seed)  # the same claims, evidence buried in a long page
    problem = fit_problem([r.label for r in held], "support record")
    if problem:
        raise UsageError(f"the support combiner cannot be fit: {calibration_slice(percent, data_dir)} holds {problem}; "
                         "it needs held-out records of both labels: give a bigger pool (--data-dir)")
    return held


def relevance_problem(pairs: Sequence[tuple], percent: int, data_dir: str | Path) -> str | None:
    """Why the relevance combiner cannot be fit on these pairs (None: it can): the folder is then written without it
    and the bare relevance cross-encoder's probability is used."""
    problem = fit_problem([p[2] for p in pairs], "(question, passage) pair", RELEVANCE_LABELS)
    return None if problem is None else (
        f"{calibration_slice(percent, data_dir)} holds {problem} (a combiner needs both labels): the bare relevance "
        "cross-encoder's probability is used; a bigger pool gives one")


def _say_unchosen(what: str, report: dict, per_label: int, unmeasured: dict) -> None:
    """A combiner whose features could not be chosen (too few records per source; choose_features logged it): said as
    a warning, and kept in ``unmeasured`` (package.json)."""
    why = report.get("unmeasured", {}).get("features_chosen")
    if why:
        fix = (f"--per-label {MIN_PER_LABEL} or more" if per_label < MIN_PER_LABEL else "a bigger pool")
        unmeasured[f"{what}.features_chosen"] = why
        warn(f"{what} combiner: features {why}; {fix} lets the worst source choose them")


def support_combiner(scorer, held: Sequence[PoolRecord], out: Path, *, log: Log,
                     cross_fit: Sequence[Path] = (), max_features: int | None = None) -> tuple[dict, dict]:
    """The support combiner's spec and report, fit on ``held`` (support_calibration); with ``cross_fit``, on features
    from fold models that never trained on each record's source (judge_train/crossfit.py), whose recipes are kept
    under ``out``/stages/."""
    from eval.judges.nli import CompactJudgeScorer

    log(f"support combiner: {len(held)} held-out records")
    rows, folds = None, {}
    if cross_fit:
        fold_scorers = [(CompactJudgeScorer(out, combiner={}, support=f), trained_sources(f)) for f in cross_fit]
        rows, counts = cross_fitted_rows(scorer, fold_scorers, held, log)
        names = [copy_stage_records(f, out / "stages", keep_existing=True)[0] for f in cross_fit]
        folds = {"folds": {name: sorted(seen) for name, (_, seen) in zip(names, fold_scorers)},
                 "records_scored_by": counts}
    spec, report = fit_support(scorer, held, log, rows, max_features=max_features)
    if folds:
        report["cross_fit"] = folds
        spec["fit_on"] += (f"; features cross-fitted: each record scored by a support model that never trained on "
                           f"its source ({len(cross_fit)} fold models)")
    return spec, report


def build(support: Path, relevance: Path | None, out: Path, data_dir: str, *, per_label: int = 120,
          percent: int = 10, seed: int = 13, log: Log = print, nli: Path | None = None,
          cross_fit: Sequence[Path] = (), max_features: int | None = None) -> dict:
    """``cross_fit``: support stages each trained without some of the pool's sources; the support combiner is then
    fit on features where every held-out record comes from a model that never trained on its source
    (judge_train/crossfit.py), and the folds' recipes are kept under stages/. ``max_features``: the support
    combiner's features are chosen among subsets of at most that many beside the cross-encoder (None: all).
    ``percent``: the most of each source's groups the calibration slice takes; less when a stage held out less
    (calibration_share: a stage that records no share, or 0, is a UsageError before ``out`` is touched).
    A calibration slice that cannot fit the support combiner: UsageError before ``out`` is touched; one that cannot fit
    the relevance combiner: the folder without it, its reason under "unmeasured" (module docstring)."""
    replaceable_out(out, [support, relevance, nli, *cross_fit, data_dir])
    t0 = time.time()
    percent, share_said = calibration_share([s for s in (support, relevance, nli, *cross_fit) if s is not None],
                                            percent)
    # the pool first: a damaged pool line, or a slice too small to fit on, is refused while --out is still whole
    support_records, _ = read_pool(DataConfig(data_dir=data_dir, cap_per_label=dict(SUPPORT_CAPS),
                                              heldout_percent=percent))
    held = support_calibration(support_records, data_dir, percent=percent, per_label=per_label, seed=seed)
    rel_records = (read_relevance_pool(DataConfig(data_dir=data_dir, cap_per_label=dict(RELEVANCE_CAPS),
                                                  heldout_percent=percent), seed)[0] if relevance is not None else [])
    all_sets = read_nomiracl_sets(Path(data_dir) / SOURCES["nomiracl"].paths[0]) if relevance is not None else []
    rel_held = heldout_records(rel_records, percent, per_label, seed)
    pairs = [(r.text, r.evidence, r.label, r.source, r.group) for r in rel_held]
    sets = [s for s in all_sets if heldout(s.group, percent) and heldout_half(s.group) == "calibrate"]
    rel_problem = relevance_problem(pairs, percent, data_dir) if relevance is not None else None
    log(share_said)
    fresh(out)
    copy_model(support, out / "support")
    stages = copy_stage_records(support, out / "stages")
    for name, stage in (("relevance", relevance), ("nli", nli)):
        if stage is not None:
            copy_model(stage, out / name)
            stages += [s for s in copy_stage_records(stage, out / "stages") if s not in stages]
    idf = idf_weights(r.evidence for r in support_records if not heldout(r.group, percent))
    (out / "idf.json").write_text(json.dumps(idf, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
    log(f"idf.json: {len(idf)} words")
    from eval.judges.nli import CompactJudgeScorer

    scorer = CompactJudgeScorer(out, combiner={})
    combiner: dict = {}
    report: dict = {}
    unmeasured: dict[str, str] = {}  # what this folder goes without, and why (package.json)
    combiner["support"], report["support"] = support_combiner(scorer, held, out, log=log, cross_fit=cross_fit,
                                                              max_features=max_features)
    _say_unchosen("support", report["support"], per_label, unmeasured)
    if rel_problem:
        warn(f"no relevance combiner: {rel_problem}")
        unmeasured["relevance"] = rel_problem
    elif relevance is not None:
        log(f"relevance combiner: {len(pairs)} held-out pairs, {len(sets)} held-out NoMIRACL sets")
        combiner["relevance"], report["relevance"] = fit_relevance(scorer, pairs, log, sets)
        _say_unchosen("relevance", report["relevance"], per_label, unmeasured)
    for spec in combiner.values():  # the fit depends on it: bf16 and int8 scores give different weights (model card)
        spec["fit_on"] += f"; cross-encoder scores in {scorer.precision}"
    if rel_problem:  # the folder says what it goes without: readers use the bare relevance model
        combiner["unmeasured"] = report["unmeasured"] = {"relevance": rel_problem}
    (out / "combiner.json").write_text(json.dumps(combiner, indent=2) + "\n")
    (out / "heldout_metrics.json").write_text(json.dumps(report, indent=1) + "\n")
    summary = {"stages": stages, "seconds": round(time.time() - t0, 1), "per_label": per_label,
               "heldout_percent": percent, "seed": seed, "precision": scorer.precision}
    if unmeasured:
        summary["unmeasured"] = unmeasured
    (out / "package.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_card(out)
    finished(out)
    log(f"judge folder {out} in {summary['seconds'] / 60:.1f} min")
    return summary


def judge_stages(judge: Path) -> list[Path]:
    """The records (stages/<stage>) of the stages a judge folder's package.json lists: those of its models and of the
    stages they started from; the judge folder itself when it lists none (its models' shares are then unknown)."""
    names = read_json_object(judge / "package.json").get("stages")
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        return [judge]
    return [judge / "stages" / n for n in names]


def refit_support(judge: Path, out: Path, data_dir: str, *, cross_fit: Sequence[Path] = (), per_label: int = 120,
                  percent: int = 10, seed: int = 13, log: Log = print, support: Path | None = None,
                  max_features: int | None = None) -> dict:
    """A copy of the judge folder ``judge`` at ``out`` whose support combiner is fit again (on cross-fitted features
    with ``cross_fit``); its models, IDF table, relevance combiner and stage records are kept as they are, except
    that ``support`` (a stage folder) replaces the support cross-encoder, its records listed first under stages/.
    The calibration share is bounded by the held-out shares of the judge's recorded stages (package.json's "stages"),
    the fold models and ``support`` (calibration_share, as in build).
    A calibration slice that cannot fit the support combiner: UsageError before ``out`` is touched (see build)."""
    replaceable_out(out, [judge, *cross_fit, support, data_dir])
    t0 = time.time()
    percent, share_said = calibration_share([*judge_stages(judge), *cross_fit, *([support] if support is not None
                                                                                 else [])], percent)
    support_records, _ = read_pool(DataConfig(data_dir=data_dir, cap_per_label=dict(SUPPORT_CAPS),
                                              heldout_percent=percent))  # before --out is touched (see build)
    held = support_calibration(support_records, data_dir, percent=percent, per_label=per_label, seed=seed)
    log(share_said)
    shutil.copytree(judge, fresh(out), dirs_exist_ok=True)
    pkg = json.loads((out / "package.json").read_text())
    if support is not None:
        shutil.rmtree(out / "support")
        copy_model(support, out / "support")
        names = copy_stage_records(support, out / "stages", keep_existing=True)
        pkg["stages"] = [names[0], *[s for s in pkg["stages"] if s != names[0]],
                         *[s for s in names[1:] if s not in pkg["stages"]]]
        (out / "package.json").write_text(json.dumps(pkg, indent=1) + "\n")
    from eval.judges.nli import CompactJudgeScorer

    scorer = CompactJudgeScorer(out, combiner={})
    spec, report = support_combiner(scorer, held, out, log=log, cross_fit=cross_fit, max_features=max_features)
    unmeasured: dict[str, str] = {}
    _say_unchosen("support", report, per_label, unmeasured)
    spec["fit_on"] += f"; cross-encoder scores in {scorer.precision}"
    for name, part in (("combiner.json", spec), ("heldout_metrics.json", report)):
        doc = json.loads((out / name).read_text()) if (out / name).exists() else {}
        doc["support"] = part
        (out / name).write_text(json.dumps(doc, indent=2 if name == "combiner.json" else 1) + "\n")
    pkg["support_refit"] = {"from": judge.name, "support": support.name if support is not None else None,
                            "cross_fit": [f.name for f in cross_fit], "per_label": per_label,
                            "heldout_percent": percent, "seed": seed, "precision": scorer.precision,
                            "seconds": round(time.time() - t0, 1)}
    said = {k: v for k, v in pkg.get("unmeasured", {}).items() if not k.startswith("support.")} | unmeasured
    pkg.pop("unmeasured", None)  # the folder's earlier support combiner is gone: so is what it went without
    if said:
        pkg["unmeasured"] = said
    (out / "package.json").write_text(json.dumps(pkg, indent=1) + "\n")
    write_card(out)
    log(f"judge folder {out}: support combiner refit in {pkg['support_refit']['seconds'] / 60:.1f} min")
    finished(out)
    return pkg


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


def _source_table(report: dict, baseline: str, alone: str) -> list[str]:
    """Per source: the combiner (leave-one-source-out and cross-validated), the cross-encoder alone and the lexical
    baseline (both min over claims), AUROC on the calibration half of the held-out slice; then the worst source and
    the smallest lead over the baseline."""
    loso, cv = report["combiner_loso"], report["combiner_cv"]
    singles = report["feature_alone"]
    rows = ["| source | combiner (LOSO) | combiner (5-fold) | cross-encoder alone | lexical baseline |",
            "|---|---|---|---|---|"]
    for src in [s for s in loso if s not in ("min", "margin")] + ["min"]:
        name = "**worst source (enough records)**" if src == "min" else src
        rows.append(f"| {name} | {fmt(loso.get(src))} | {fmt(cv.get(src))} | "
                    f"{fmt(singles[alone].get(src))} | {fmt(singles.get(baseline, {}).get(src))} |")
    if loso.get("margin") is not None:
        rows.append(f"| **smallest lead over the baseline** | {loso['margin']:+.3f} | | | |")
    return rows


def write_card(out: Path, *, dev_table: str | None = None, extra: str | None = None) -> Path:
    """MODEL_CARD.md from the folder's own records; ``dev_table``: the meta-evaluation on the human-labelled dev
    sets, measured separately (markdown); ``extra``: more markdown (limits, what did not work)."""
    pkg = json.loads((out / "package.json").read_text())
    metrics = json.loads((out / "heldout_metrics.json").read_text())
    comb = json.loads((out / "combiner.json").read_text())
    lines = [f"# {out.name}: compact judge for groundedness and context relevance", "",
             "Two MiniLM-L6 cross-encoders (22.7M parameters each, fp16 safetensors, int8 feed-forward on CPU at "
             "load) and two logistic-regression combiners over named, explainable features (eval/judges/nli.py, "
             "eval/judges/features.py). `support/`: (premise window, claim) -> supported, trained on general NLI "
             "first, then on the claim-level pool; `relevance/`: (passage window, question) -> the passage bears on "
             "the question. The project's default `nli` judge: groundedness, context recall, answer correctness "
             "(claims against windows and the whole evidence), context precision and answer relevance.", "",
             "## Stages", "", "| stage | started from | task | examples | epochs | lr | max length | device | minutes |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in pkg["stages"]:
        tc = json.loads((out / "stages" / name / "training_config.json").read_text())
        r = tc["recipe"]
        base = Path(r["base_model"]).name if r["base_model"] != "minilm" else "all-MiniLM-L6-v2 (bundled)"
        if tc.get("interpolated"):  # judge_train/interpolate.py: a mix of two trained models, not a training run
            mix = tc["interpolated"]
            base = (f"{1 - mix['weight']:g} x {Path(mix['base']).name} + {mix['weight']:g} x {mix['tuned_recipe']} "
                    "(weight interpolation; the rest of the row is the tuned stage's)")
        lines.append(f"| {name} | {base} | {r['task']} | {tc.get('n_train', '-')} | {r['epochs']} | {r['lr']} | "
                     f"{r['max_length']} | {tc['device']} ({tc['threads']} threads) | "
                     f"{tc['fit']['seconds'] / 60:.1f} |")
    lines += ["", "Repeat a stage: `ragdoctor judge train --from-config stages/<stage>/training_config.json --out DIR` "
              "(same seed; `data_manifest.json` holds the sha256 of every input file). Assemble: `ragdoctor judge "
              "combine --support DIR --relevance DIR --out DIR`.", "", "## Training data and licences", "",
              *licence_lines(out / "stages"), "",
              "Weights trained on ShareAlike data (CC BY-SA: SNLI, MultiNLI's fiction parts, QNLI/SQuAD, NoMIRACL's "
              "Wikipedia passages, TopicalChat's CDLA-Sharing) may be a derivative work under those licences; we ship "
              "them with this notice and the list above. Never trained on: ares/, wice/, halueval/qa_dev.jsonl (rows "
              "of the pool that also occur there are dropped and counted in each stage's manifest).", ""]
    for what, baseline, alone in (("support", "lexical_win", "ce_max"), ("relevance", "q_coverage", "rel_max")):
        rep = metrics.get(what)
        if not rep:
            if why := metrics.get("unmeasured", {}).get(what):
                lines += [f"## Combiner: {what}", "", f"None: {why}.", ""]
            continue
        coef = ", ".join(f"{k} {v:+.2f}" for k, v in rep["standardised_coef"].items())
        unchosen = rep.get("unmeasured", {}).get("features_chosen")
        chosen = (f"Features {unchosen}" if unchosen else "Features chosen by the worst source's leave-one-source-out "
                  f"AUROC over every subset with the cross-encoder: **{' + '.join(rep['features_chosen'])}**")
        lines += [f"## Combiner: {what}", "",
                  f"{chosen}; standardised coefficients (the contribution of each, per standard deviation): {coef}. "
                  f"{comb[what]['fit_on']}.", "",
                  f"AUROC per source on the calibration half of the held-out slice ({'min over claims' if what == 'support' else 'per pair'}):", "",
                  *_source_table(rep, baseline, alone), ""]
        if rep.get("unmeasured"):
            lines += ["Unmeasured: " + "; ".join(f"{k}: {v}" for k, v in rep["unmeasured"].items()) + ".", ""]
        if rep.get("cross_fit"):
            names = list(rep["cross_fit"]["folds"])
            folds = "; ".join(f"{name} (trained on {', '.join(seen)})" for name, seen in rep["cross_fit"]["folds"].items())
            scored = ", ".join(f"{'the full model' if k == 'full' else names[int(k.removeprefix('fold'))]} {n}"
                               for k, n in rep["cross_fit"]["records_scored_by"].items())
            lines += ["Cross-fitted: every held-out record of a source some fold model never trained on was scored by "
                      "that model, so the weights above say how far to trust the cross-encoder on a source it has not "
                      f"seen (judge_train/crossfit.py). Fold models: {folds}. Held-out records scored by each: "
                      f"{scored}.", ""]
        if rep.get("nomiracl_sets_auroc") is not None:
            lines += [f"NoMIRACL passage sets (does any of the 10 retrieved passages answer the question; set score = "
                      f"best passage): AUROC {rep['nomiracl_sets_auroc']:.3f} over {rep['nomiracl_sets_n']} held-out "
                      "sets.", ""]
    if dev_table:
        lines += ["## Meta-evaluation on the human-labelled dev sets (never trained on, never used to choose)", "",
                  dev_table.strip(), ""]
    if extra:
        lines += [extra.strip(), ""]
    card = out / "MODEL_CARD.md"
    card.write_text("\n".join(lines))
    return card
