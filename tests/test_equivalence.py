"""The refactor of issue 13 changed no number: `ragdoctor eval` (lexical, embedding and labels judges) and
`ragdoctor diagnose` on fixed inputs give exactly what the code before it gave (tests/data/equivalence: 20 traces of
the bundled set answered by the FakeLLM pipeline, 9 generic and ragas rows; the expected files were written by the
earlier code, except the embedding judge's groundedness row on traces: METRICS_VERSION 5 deliberately changed the
premises a claim is checked against (bounded windows, issue 11), which moved its mean from 0.870 to 0.898; and the
lexical judge's answer_correctness rows and the diagnoses: METRICS_VERSION 8 made answer correctness the reference's
claim recall (traces: 0.269 -> 0.444, rows: 0.625 -> 0.750), so qa07, qa09 and qa31, right answers with claims the
reference does not state, are now `ok`, not grounded_yet_hallucinated); and (session 26) the CIs of means over fewer
than 5 values or all-equal values, which are Wilson intervals now (a bootstrap of such values claimed a zero-width or
too-narrow interval; no mean moved), and the grounded_yet_hallucinated rule's wording (no category moved); and
(session 27, METRICS_VERSION 12) the retrieval metrics of the one row with neither contexts nor relevance labels,
not applicable now (were unmeasured: rows' unmeasured share 0.191 -> 0.165; no value moved); and (session 28,
METRICS_VERSION 13) the lexical judge's context precision on traces, 0.706 -> 0.719: qa20's outdated chunk
(a17-paged-attention-2023#0) states another number than the reference, so it no longer counts as relevant; and
(session 30, claim splitting) the embedding judge's groundedness on traces, 0.898 -> 0.926 (qa13's "(Narayanan et al.,
2021)" is a citation, no claim to check) and its context precision, 0.430 -> 0.417 (qa27's current FlashAttention-2
chunk now counts as relevant: its 43-word sentence is cut at its semicolon, not between "and all" and "head
dimensions"); no diagnosis moved. And a run folder written by that earlier version (tests/data/legacy_run,
judgements carrying an EvalSample) is still read by every reader: diagnose, gate, the
dashboard, and a resumed eval; its stored judgements are diagnosed by today's rules (diagnoses.legacy.json: as
diagnoses.traces.json, except qa11, whose old lexical evidence called its reference covered)."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corpora.run_folder import RunFolder
from ragdoctor.dashboard.data import load_run

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ["PYTHONPATH"], str(ROOT)])}


def ragdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "ragdoctor.cli", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


ADDED = {"higher_is_better"}  # fields a summary row gained since (session 30: the metric's direction), no number


def same(got: dict, expected: dict) -> bool:
    """Two summary rows agree: counts, reasons and the model-free judges' values exactly; the embedding judge's to 1e-6
    (MiniLM on CPU is not bit-reproducible: its float sums depend on which texts share a batch, which the embedding
    cache changes between runs; run standalone with a fresh cache it matches the earlier code bit for bit)."""
    if got.keys() - ADDED != expected.keys():
        return False
    tolerance = 1e-6 if expected["judge"] == "embedding" else 0.0
    return all(g == e or (isinstance(e, float) and isinstance(g, float) and math.isclose(g, e, abs_tol=tolerance))
               for g, e in ((got[k], expected[k]) for k in expected))


@pytest.mark.model
@pytest.mark.parametrize("name", ["traces", "rows"])
def test_eval_gives_the_numbers_the_earlier_code_gave(name, tmp_path):
    ragdoctor("eval", str(DATA / "equivalence" / f"{name}.jsonl"), "--judges", "lexical,embedding,labels",
              "--out", str(tmp_path / "run"), cwd=tmp_path)
    expected = json.loads((DATA / "equivalence" / f"summary.{name}.json").read_text())
    got = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert got["n_samples"] == expected["n_samples"] and got["unmeasured_share"] == expected["unmeasured_share"]
    assert len(got["metrics"]) == len(expected["metrics"])
    for g, e in zip(got["metrics"], expected["metrics"]):
        assert same(g, e), (g, e)
    if name == "traces":
        ragdoctor("diagnose", str(tmp_path / "run"), cwd=tmp_path)
        want = json.loads((DATA / "equivalence" / "diagnoses.traces.json").read_text())
        assert {d.sample_id: [d.category, d.secondary, d.rule]
                for d in RunFolder(tmp_path / "run").diagnoses().values()} == want


@pytest.fixture
def legacy(tmp_path) -> Path:
    return shutil.copytree(DATA / "legacy_run", tmp_path / "legacy")


def test_a_run_folder_of_the_earlier_version_is_read_as_it_is(legacy):
    run = RunFolder(legacy)
    judgements = run.judgements()
    assert len(judgements) == 20 and all(j.trace is not None for j in judgements)
    error = next(j.trace for j in judgements if j.sample_id == "qa04")
    assert error.outcome == "error" and error.error == "TimeoutError: the model did not answer"  # was metadata.error
    assert all(j.trace.candidates for j in judgements if j.trace.outcome == "answered")  # was metadata.candidates
    assert run.summary() is not None
    dashboard = load_run(legacy)
    assert len(dashboard.samples) == 20 and dashboard.detail("qa01")["latency_ms"]["total"] > 0
    want = json.loads((DATA / "equivalence" / "diagnoses.legacy.json").read_text())
    traces_want = json.loads((DATA / "equivalence" / "diagnoses.traces.json").read_text())
    assert {k for k in want if want[k] != traces_want[k]} == {"qa11"}
    from ragdoctor import flow

    _, diagnoses, _ = flow.diagnose_run(legacy)
    assert {d.sample_id: [d.category, d.secondary, d.rule] for d in diagnoses} == want


def test_gate_and_a_resumed_eval_on_a_run_folder_of_the_earlier_version(legacy, tmp_path):
    assert ragdoctor("gate", str(legacy), "--min", "recall@5=0.9", "--pyproject", os.devnull, cwd=tmp_path)
    ev = ragdoctor("eval", str(legacy / "traces.jsonl"), "--judges", "lexical,labels", cwd=tmp_path)
    assert "20 judged" in ev.stdout  # a new configuration: judged again, the old lines stay
    assert len(RunFolder(legacy).judgements()) == 20 and RunFolder(legacy).config()["format"] == 2
