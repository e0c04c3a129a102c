"""Compare runs: metric deltas with 95% CIs (a paired bootstrap over the samples both runs measured; unpaired when too
few are shared, and said), and the samples whose failure category changed, regressions first."""
from __future__ import annotations

from pathlib import Path

import altair as alt
import streamlit as st

from ragdoctor.dashboard import compare_data as cd
from ragdoctor.dashboard import state, widgets
from ragdoctor.dashboard.text import md

st.title("Compare runs")
paths = state.open_runs()
if len(paths) < 2:
    st.info("Open two or more run folders in the sidebar (one per line) to compare them, e.g. the same questions "
            "before and after a retrieval change.")
    st.stop()
c1, c2 = st.columns(2)
pa = c1.selectbox("Run A (before)", paths, index=min(1, len(paths) - 1), format_func=lambda p: Path(p).name, key="c_a")
pb = c2.selectbox("Run B (after)", paths, index=0, format_func=lambda p: Path(p).name, key="c_b")
if pa == pb:
    st.warning("Pick two different runs.")
    st.stop()
ra, rb = state.load_or_say(pa), state.load_or_say(pb)
if ra is None or rb is None:
    st.stop()
cmp = state.compare(state.key(ra), state.key(rb), ra, rb)
m = cmp["metrics"]
kinds = set(m["ci"]) if "ci" in m else set()
how = {"paired": "the mean of B − A over the samples both runs measured, with its paired 95% CI",
       "unpaired": "B's mean − A's over different samples (fewer than 5 measured by both), with an unpaired 95% CI "
                   "(each run resampled on its own)",
       "none": "fewer than 5 samples: no CI and no verdict (too few samples)"}
st.caption(f"{cmp['common']:,} samples in both · {len(cmp['only_a'])} only in A · {len(cmp['only_b'])} only in B"
           + "".join(f" · {kind} rows: {how[kind]}" for kind in ("paired", "unpaired", "none") if kind in kinds))
if not cmp["common"]:
    st.warning("The two runs share no samples: no sample can be compared with itself, so every delta below is "
               "unpaired (B's mean − A's over different questions) and says as much about the questions as about "
               "the change.")

if not len(m):
    st.info("Neither run has a summary.json (evaluate them first).")
else:
    reg = m[m["change"] == "regression"]
    imp = m[m["change"] == "improvement"]
    k1, k2, k3 = st.columns(3)
    k1.metric("regressions (CI below 0)", len(reg))
    k2.metric("improvements (CI above 0)", len(imp))
    k3.metric("within noise", int((m["change"] == "within noise").sum()))
    few = int((m["change"] == "too few samples").sum())
    if few:
        st.caption(f"{few} metric(s) with too few samples for a CI: no regression or improvement is claimed.")
    if len(reg):
        st.error("Regressed: " + ", ".join(f"{md(r.metric)} ({md(r.judge)}) {r.delta:+.3f}"
                                           + (" (unpaired CI)" if r.ci == "unpaired" else "")
                                           for r in reg.itertuples()))
    plot = m.dropna(subset=["delta"]).assign(name=lambda d: d["metric"] + " · " + d["judge"])
    if len(plot):
        base = alt.Chart(plot).encode(y=alt.Y("name:N", sort=list(plot["name"]), title=None))
        color = alt.Color("change:N", scale=alt.Scale(domain=["regression", "within noise", "improvement",
                                                              "too few samples"],
                                                      range=["#d33a2c", "#9aa0a6", "#2e9e4f", "#c8ccd0"]),
                          legend=alt.Legend(orient="bottom", title=None))
        chart = (base.mark_rule(strokeWidth=2).encode(x=alt.X("delta_ci_low:Q", title="delta (B − A) with 95% CI"),
                                                      x2="delta_ci_high:Q", color=color)
                 + base.mark_point(filled=True, size=70).encode(
                     x="delta:Q", color=color,
                     tooltip=["metric", "judge", alt.Tooltip("mean_a:Q", format=".3f"),
                              alt.Tooltip("mean_b:Q", format=".3f"), alt.Tooltip("delta:Q", format="+.3f"),
                              alt.Tooltip("delta_ci_low:Q", format="+.3f"),
                              alt.Tooltip("delta_ci_high:Q", format="+.3f"),
                              "n_paired", "ci"])
                 + alt.Chart().mark_rule(color="black").encode(x=alt.datum(0)))
        st.altair_chart(chart.properties(height=max(160, 24 * len(plot))), width="stretch")
    fmt = {c: st.column_config.NumberColumn(format="%.3f") for c in m.columns if c.startswith(("mean", "ci_", "delta"))}
    fmt["delta"] = st.column_config.NumberColumn(format="%+.3f")
    st.dataframe(m, hide_index=True, width="stretch", column_config=fmt)

st.subheader("Corrected by human labels (PPI)")
ca, cb = state.calibrated(ra), state.calibrated(rb)
ppi = cd.compare_calibrated(ca, cb)
if len(ppi):
    st.caption("Each run's judge mean calibrated by its own labels.jsonl (prediction-powered inference): the mean a "
               "person would give, with its 95% CI. The delta's CI treats the two runs as independent (conservative "
               "when they share questions).")
    st.dataframe(ppi, hide_index=True, width="stretch", column_config={
        c: st.column_config.NumberColumn(format="%+.3f" if c == "ppi_delta" else "%.3f")
        for c in ppi.columns if c.startswith(("judge_mean", "ppi"))})
else:
    why = {tag: next((r["reason"] for r in rows if r["status"] != "ok"), "no labels yet")
           for tag, rows in (("A", ca), ("B", cb)) if not any(r["status"] == "ok" for r in rows)}
    st.info("Corrected estimates show when both runs have enough human labels of a metric (Label page). " +
            " · ".join(f"{tag}: {md(w)}" for tag, w in why.items()))

st.subheader("Samples whose category changed")
ch = cmp["changed"]
if not len(ch):
    if not cmp["common"]:
        st.info("The two runs share no samples: no sample can change category between them.")
    elif ra.diagnoses and rb.diagnoses:
        st.success("No sample changed category.")
    else:
        st.info("Diagnose both runs (`ragdoctor diagnose RUN`) to compare their categories.")
else:
    counts = ch["change"].value_counts()
    st.caption(" · ".join(f"{k}: {int(counts.get(k, 0))}" for k in ("regression", "changed", "fix", "unmeasured")) +
               " (regression: was ok, now failing; fix: the reverse; unmeasured: one run could not tell, e.g. it did "
               "not evaluate answer correctness: no verdict either way)")
    st.dataframe(ch, hide_index=True, width="stretch", height=300, column_config={
        c: st.column_config.NumberColumn(format="%.2f") for c in ch.columns if c.endswith(("_a", "_b"))
        and not c.startswith("category")})
    sid = widgets.sample_picker(ch["sample_id"].tolist(), key="c_pick")
    if sid:
        left, right = st.columns(2)
        for col, r, tag in ((left, ra, "A"), (right, rb, "B")):
            with col, st.container(border=True):
                st.markdown(f"**{tag}: {md(r.name)}**")
                widgets.drilldown(state.detail(*state.key(r), sid, r), key=f"cmp_{tag}")
