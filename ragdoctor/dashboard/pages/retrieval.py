"""Retrieval: recall@k over k = 1..20 from the traces (pytrec_eval), the rank of the first relevant chunk, and BM25 vs
dense vs hybrid when the run's chunks carry each retriever's ranks (and across the other open runs)."""
from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import state, widgets
from ragdoctor.dashboard.text import md

run = state.require_run()
widgets.run_header(run, "Retrieval")
df = run.samples
labelled = int(df["labelled"].sum())
# the labelled questions eval's retrieval metrics leave out (contexts null or without doc ids, blocked before
# retrieval, every label graded 0), by status and reason: left out of the curve and of the ranks, never a miss
left_out = rd.recall_left_out(run)
n_left_out = sum(len(ids) for reasons in left_out.values() for ids in reasons.values())


def plural(n: int, word: str = "question") -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def show_left_out() -> None:
    """Why each left-out question is left out (eval's status and reason), one line a reason, and which they are."""
    for status, reasons in left_out.items():
        for reason, ids in reasons.items():
            st.caption(md(f"{plural(len(ids))} {status.replace('_', ' ')}: {reason}"))
    st.dataframe(pd.DataFrame([{"left out": status.replace("_", " "), "reason": reason, "questions": len(ids),
                                "sample ids": ", ".join(ids[:50]) + (f" … and {len(ids) - 50:,} more"
                                                                     if len(ids) > 50 else "")}
                               for status, reasons in left_out.items() for reason, ids in reasons.items()]),
                 hide_index=True, width="stretch")


if not labelled:
    st.info("No question in this run has relevance labels (relevant_doc_ids or metadata.qrels), so recall cannot be "
            "measured. The bundled question set and BEIR corpora carry them.")
    st.stop()
if not int(df["retrieval_measured"].sum()):
    st.info(f"Recall cannot be measured: {plural(labelled)} with relevance labels, and eval's retrieval metrics leave "
            f"{'it' if labelled == 1 else 'every one'} out (neither retrieved nor missed: why, below).")
    show_left_out()
    st.stop()
if n_left_out:
    st.caption(f"Left out of everything below, as eval's retrieval metrics leave them out: {plural(n_left_out)} of "
               f"{labelled:,} with relevance labels. They count neither as retrieved nor as missed.")
    show_left_out()

curve = state.recall_curve(*state.key(run), run).assign(run=run.name)
# the count the curve itself measured (its own ranking: the per-retriever ones cover at most as many)
measured = int(curve["n_queries"].max()) if len(curve) else 0
others = [p for p in state.open_runs() if p != str(run.path)]
extra = st.multiselect("Overlay other open runs", others, format_func=lambda p: Path(p).name, key="r_overlay")
for p in extra:
    other = state.load_or_say(p)
    if other is None:
        continue
    c = state.recall_curve(*state.key(other), other)
    curve = pd.concat([curve, c.assign(run=other.name)], ignore_index=True)
    if len(c) and c["left_out"].iloc[0]:  # what the overlaid run's curve leaves out, and why
        st.caption(md(f"{other.name}: {c['left_out'].iloc[0]}"))
curve["line"] = curve["run"] + " · " + curve["ranking"]

st.subheader(f"Recall@k ({plural(measured, 'labelled question')} measured"
             + (f", {n_left_out:,} left out" if n_left_out else "") + "; k counts distinct documents)")
line = alt.Chart(curve).mark_line(point=True).encode(
    x=alt.X("k:Q", scale=alt.Scale(domain=[1, int(curve["k"].max())]), title="k"),
    y=alt.Y("recall:Q", scale=alt.Scale(domain=[0, 1]), title="mean recall@k"),
    color=alt.Color("line:N", title=None, legend=alt.Legend(orient="bottom")),
    strokeDash=alt.condition(alt.datum.note == "", alt.value([1, 0]), alt.value([5, 4])),  # dashed: lower bounds
    tooltip=["run", "ranking", "k", alt.Tooltip("recall:Q", format=".3f"), "n_queries", "note"])
st.altair_chart(line.properties(height=340), width="stretch")
notes = curve.loc[curve["note"] != "", ["run", "ranking", "note"]].drop_duplicates()
for r in notes.itertuples():
    st.caption(md(f"{r.run} · {r.ranking}: {r.note}"))
wide = curve[curve["k"].isin([1, 3, 5, 10, 20])].pivot_table(index="line", columns="k", values="recall")
wide.columns = [f"recall@{k}" for k in wide.columns]
st.dataframe(wide.style.format("{:.3f}"), width="stretch")

st.subheader("Rank of the first relevant chunk")
first = rd.first_relevant_table(df)
left, right = st.columns([3, 2])
with left:
    bars = alt.Chart(first).mark_bar().encode(
        x=alt.X("rank:N", sort=alt.SortField("order"), title="rank of the first chunk from a relevant document",
              axis=alt.Axis(labelAngle=0)),
        y=alt.Y("count:Q", title="questions"),
        color=alt.Color("bucket:N", legend=None, scale=alt.Scale(domain=["rank", "not retrieved", "left out"],
                                                                 range=["#3b7dd8", "#d33a2c", "#9aa0a6"])),
        tooltip=["rank", "count", "why"])  # left out: one stacked bar a reason, never "not retrieved"
    st.altair_chart(bars.properties(height=280), width="stretch")
with right:
    measured_rows = df[df["retrieval_measured"]]
    ranks = measured_rows["first_relevant_rank"]
    first_share = float((ranks == 1).fillna(False).sum()) / len(ranks) if len(ranks) else 0.0  # never retrieved: not 1
    st.metric("relevant in the first chunk", f"{first_share:.0%}")
    st.metric("never retrieved (top-k and candidates)", int(ranks.isna().sum()))
    k_ctx = int(df["n_retrieved"].max() or 0)
    if k_ctx:
        st.metric(f"first relevant past the top-{k_ctx} cut", int((ranks > k_ctx).sum()))
    if n_left_out:
        st.metric("left out (not measured, see above)", n_left_out)

st.subheader("Worst-ranked questions")
worst = measured_rows[["sample_id", "first_relevant_rank", "category", "question"]] \
    .sort_values("first_relevant_rank", ascending=False, na_position="first").head(200)
st.dataframe(worst, hide_index=True, width="stretch", height=260)
sid = widgets.sample_picker(worst["sample_id"].tolist(), key="r_pick")
if sid:
    with st.expander(f"Sample {md(sid)}", expanded=False):
        widgets.drilldown(state.detail(*state.key(run), sid, run), key="retrieval")

if run.run_summary and run.run_summary.get("latency_ms"):
    st.subheader("Latency per stage")
    lat = pd.DataFrame([{"stage": k, "p50": v["p50"], "p95": v["p95"]}
                        for k, v in run.run_summary["latency_ms"].items()])
    st.altair_chart(alt.Chart(lat.melt("stage", var_name="percentile", value_name="ms")).mark_bar().encode(
        x=alt.X("ms:Q"), y=alt.Y("stage:N", title=None), yOffset="percentile:N", color="percentile:N",
        tooltip=["stage", "percentile", alt.Tooltip("ms:Q", format=".1f")]).properties(height=160), width="stretch")
