"""Overview: every metric per judge with its 95% CI, the CI gate against the configured thresholds, the failure
categories, and what could not be measured and why."""
from __future__ import annotations

import altair as alt
import streamlit as st

from corpora.errors import InputError, UsageError
from eval.gate import GateConfig, load_gate_config, parse_threshold
from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import state, widgets
from ragdoctor.dashboard.text import md

run = state.require_run()
widgets.run_header(run, "Overview")
status = rd.evaluation_status(run)
if status["note"] and status["judged"]:  # a run never evaluated says so below, where its results would be
    st.warning(status["note"][0].upper() + status["note"][1:] + ".")

summary = run.summary or {}
outcomes = run.samples["outcome"].value_counts()
cols = st.columns(5)
cols[0].metric("samples", f"{len(run.samples):,}")
cols[1].metric("answered", int(outcomes.get("answered", 0)))
cols[2].metric("refused", int(outcomes.get("refused", 0)))
cols[3].metric("errors / blocked", int(outcomes.get("error", 0) + outcomes.get("blocked", 0)))
share = summary.get("unmeasured_share")
cols[4].metric("unmeasured share", "-" if share is None else f"{share:.1%}")

# --- gate -----------------------------------------------------------------------------------------------------------
st.subheader("CI gate")
with st.expander("Thresholds", expanded=False):
    pyproject = st.text_input("pyproject.toml with [tool.ragdoctor.gate]", "pyproject.toml", key="gate_pyproject")
    extra = st.text_input("Extra thresholds (METRIC[:JUDGE]=VALUE, comma-separated)", "", key="gate_extra",
                          placeholder="groundedness=0.8, answer_correctness:lexical=0.4")
    ci_lower = st.checkbox("Compare the 95% CI lower bound instead of the mean", key="gate_ci_lower")
try:
    given = pyproject.strip()  # cleared: no file; the default: ./pyproject.toml when there is one; else it must exist
    cfg = GateConfig() if not given else load_gate_config(None if given == "pyproject.toml" else given)
    for text in (t for t in extra.split(",") if t.strip()):
        name, value = parse_threshold(text.strip())
        cfg.minimums[name] = value
    cfg.use_ci_lower = cfg.use_ci_lower or ci_lower
except InputError as exc:
    st.error(md(exc))
    cfg = GateConfig()
try:
    gate = rd.gate_table(run, cfg)
    refused = None
except UsageError as exc:  # a threshold on what this run never evaluated: `ragdoctor gate` exits 2 on it too
    gate, refused = rd.gate_table(run, GateConfig()), str(exc)
if refused:
    st.warning(md(f"No gate verdict: {refused}"))
elif not status["judged"]:
    st.info("No summary.json: evaluate the run with `ragdoctor eval` first.")
elif not status["complete"]:
    st.info("No gate verdict: the evaluation is incomplete (above). " + (
        "`ragdoctor gate` refuses a run without the summary.json of its current evaluation (exit 2), and so does "
        "this page." if not status["gate"] else "Complete it with `ragdoctor eval`, then gate."))
elif not len(gate):
    st.info("No thresholds configured. Set `[tool.ragdoctor.gate] min = {groundedness = 0.8}` in pyproject.toml, "
            "or type some above.")
else:
    failed = int((~gate["passed"]).sum())
    if failed:
        st.error(f"Gate FAILED: {failed} of {len(gate)} checks below threshold.")
    else:
        st.success(f"Gate passed: all {len(gate)} checks.")
    st.dataframe(gate[["check", "passed", "observed", "threshold", "message"]], hide_index=True, width="stretch",
                 column_config={"observed": st.column_config.NumberColumn(format="%.3f")})

# --- metrics with CIs -----------------------------------------------------------------------------------------------
st.subheader("Metrics per judge, with 95% confidence intervals")
table = rd.metrics_table(run)
if not len(table):
    st.info("This run has no evaluation results yet.")
else:
    if not status["gate"]:
        st.caption(f"Provisional: recomputed from the {status['judged']:,} samples judged so far, not the run's "
                   "summary.json.")
    table = rd.with_gate(table, gate)
    left, right = st.columns([3, 2])
    with left:
        st.dataframe(table, hide_index=True, width="stretch", column_config={
            "mean": st.column_config.ProgressColumn("mean", min_value=0.0, max_value=1.0, format="%.3f"),
            "ci_low": st.column_config.NumberColumn("95% CI low", format="%.3f"),
            "ci_high": st.column_config.NumberColumn("95% CI high", format="%.3f"),
            "n_unmeasured": "unmeasured", "n_not_applicable": "n/a"})
    with right:
        measured = table.dropna(subset=["mean"])
        base = alt.Chart(measured).encode(
            y=alt.Y("metric:N", title=None, sort=sorted(set(measured["metric"]), key=rd.metric_rank)),
            yOffset="judge:N", color=alt.Color("judge:N", legend=alt.Legend(orient="bottom")))
        chart = base.mark_rule(strokeWidth=2).encode(x=alt.X("ci_low:Q", title="mean and 95% CI",
                                                             scale=alt.Scale(domain=[0, 1])), x2="ci_high:Q") + \
            base.mark_point(filled=True, size=60).encode(x="mean:Q", tooltip=["metric", "judge", "n",
                                                                               alt.Tooltip("mean:Q", format=".3f"),
                                                                               alt.Tooltip("ci_low:Q", format=".3f"),
                                                                               alt.Tooltip("ci_high:Q", format=".3f")])
        st.altair_chart(chart, width="stretch")

calibrated = state.calibrated(run)
if calibrated:
    st.markdown("**Calibrated by human labels** (PPI-corrected means with 95% CIs; `labels.jsonl`, Label page)")
    widgets.calibrated(calibrated)

# --- failure categories ---------------------------------------------------------------------------------------------
st.subheader("Failure categories")
cats = rd.category_counts(run)
if not len(cats) and run.diagnoses_stale:
    st.info("The diagnoses are from an earlier evaluation of this run (or damaged), so they are not shown: run "
            "`ragdoctor diagnose` on this run folder again.")
elif not len(cats):
    st.info("No diagnoses yet: run `ragdoctor diagnose` on this run folder.")
else:
    left, right = st.columns([3, 2])
    with left:
        bars = alt.Chart(cats).mark_bar().encode(
            x=alt.X("count:Q", title="samples"), y=alt.Y("category:N", sort="-x", title=None),
            color=alt.Color("category:N", scale=widgets.category_scale(), legend=None),
            tooltip=["category", "count", alt.Tooltip("share:Q", format=".1%"), "definition", "examples"])
        st.altair_chart(bars, width="stretch")
    with right:
        st.dataframe(cats[["category", "count", "share", "definition"]], hide_index=True, width="stretch",
                     column_config={"share": st.column_config.NumberColumn(format="percent")})
    unknown = cats[cats["category"] == "unmeasured"]
    if len(unknown):  # no verdict, so neither a failure nor ok: say why, with each reason's count
        n = int(unknown["count"].iloc[0])
        st.info(f"{n:,} sample{'' if n == 1 else 's'} unmeasured: not failures, and not ok either; the diagnosis "
                f"could not tell whether the answer is right. Why: {md(unknown['reasons'].iloc[0])}.")

# --- unmeasured -----------------------------------------------------------------------------------------------------
st.subheader("Unmeasured results")
unmeasured = rd.unmeasured_table(run)
n_unmeasured = int(unmeasured["count"].sum()) if len(unmeasured) else 0
n_na = int((run.results["status"] == "not_applicable").sum())
unjudged = status["unjudged"]
if not status["judged"]:
    stopped = "its evaluation stopped before the first result: " if status["expected"] is not None else ""
    st.info(f"This run has not been evaluated: {stopped}none of its {status['total']:,} samples has been judged, so "
            "nothing was measured yet. Run `ragdoctor eval` on it.")
elif unjudged:
    st.warning(f"{len(unjudged):,} of the run's {len(run.samples):,} samples have not been evaluated (no results; "
               f"first: {md(unjudged[0])}): nothing on this page measures them. Evaluate them with `ragdoctor eval`.")
if status["judged"] and n_unmeasured:
    st.warning(f"{n_unmeasured:,} results could not be measured. They count against the gate's unmeasured share "
               "and are never scored as 0.")
    st.dataframe(unmeasured, hide_index=True, width="stretch")
elif status["judged"]:
    judged = "Every applicable result was measured" if not unjudged and status["complete"] else \
        f"Every applicable result of the {status['judged']:,} samples judged was measured"
    st.success(f"{judged} (0 unmeasured).")
st.caption(f"{n_na:,} results were not applicable (no reference, unanswerable question, blocked answer): they are "
           "left out of the means and of the unmeasured share.")
if run.input_errors:
    with st.expander(f"{len(run.input_errors)} input records were skipped"):
        st.code("\n".join(run.input_errors[:200]))

if run.run_summary:
    st.subheader("Pipeline")
    rs = run.run_summary
    lat = rs.get("latency_ms", {})
    if lat:
        st.dataframe([{"stage": k, "p50 ms": round(v["p50"], 1), "p95 ms": round(v["p95"], 1), "n": v["n"]}
                      for k, v in lat.items()], hide_index=True)
    if rs.get("retrieval"):
        st.caption("retrieval (documents, labelled queries): " +
                   " · ".join(f"{md(k)} {v:.3f}" for k, v in rs["retrieval"].items()))
