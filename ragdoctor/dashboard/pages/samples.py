"""Samples: a filterable, sortable table of every sample, and the drill-down for one."""
from __future__ import annotations

import streamlit as st

from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import state, widgets

run = state.require_run()
widgets.run_header(run, "Samples")
df = run.samples
metrics = [m for m in rd.metric_columns(df) if m in df]
cats = sorted(df["category"].dropna().unique())
outcomes = sorted(df["outcome"].dropna().unique())
sort_cols = ["sample_id", "category", *metrics, "judge_gap", "first_relevant_rank", "latency_ms", "n_unmeasured"]
# the choices survive a visit to another page (streamlit drops a widget's own key when a page without it runs)
KEPT = ("f_category", "f_outcome", "f_text", "f_disagree", "f_unmeasured", "f_sort", "f_desc")
state.restore("f_category", valid=lambda v: set(v) <= set(cats))
state.restore("f_outcome", valid=lambda v: set(v) <= set(outcomes))
state.restore("f_sort", valid=lambda v: v in sort_cols)
for k in ("f_text", "f_disagree", "f_unmeasured", "f_desc"):
    state.restore(k)

with st.container(border=True):
    c1, c2, c3 = st.columns([2, 2, 3])
    chosen = c1.multiselect("Category", cats, key="f_category", format_func=widgets.label)
    chosen_out = c2.multiselect("Outcome", outcomes, key="f_outcome")
    text = c3.text_input("Search question or id", key="f_text")
    c4, c5, c6 = st.columns([2, 2, 3])
    only_disagree = c4.toggle("Only where judges disagree", key="f_disagree")
    only_unmeasured = c5.toggle("Only with unmeasured results", key="f_unmeasured")
    s1, s2 = c6.columns([3, 2])
    sort_by = s1.selectbox("Sort by", sort_cols, key="f_sort")
    descending = s2.toggle("Descending", key="f_desc")
    ranges = {}
    with st.expander("Metric ranges (preferred judge)"):
        rcols = st.columns(max(1, min(4, len(metrics))))
        for i, m in enumerate(metrics):
            ranges[m] = rcols[i % len(rcols)].slider(widgets.label(m), 0.0, 1.0, (0.0, 1.0), 0.05, key=f"f_range_{m}")

state.remember(*KEPT)
mask = df["sample_id"].notna()
if chosen:
    mask &= df["category"].isin(chosen)
if chosen_out:
    mask &= df["outcome"].isin(chosen_out)
if text:
    mask &= df["question"].str.contains(text, case=False, regex=False) | df["sample_id"].str.contains(text, regex=False)
if only_disagree:
    mask &= df["judges_disagree"]
if only_unmeasured:
    mask &= df["n_unmeasured"] > 0
for m, (lo, hi) in ranges.items():
    if (lo, hi) != (0.0, 1.0):  # a narrowed range keeps only samples measured inside it
        mask &= df[m].between(lo, hi)
view = df.loc[mask].sort_values(sort_by, ascending=not descending, na_position="last", kind="stable")
st.caption(f"{len(view):,} of {len(df):,} samples · click a row (or pick below) to open it")

# a blank first relevant rank is "not retrieved" only where eval's retrieval metrics measure the sample: the reason
# they leave it out stands next to it (blank for an unlabelled question too: "labelled" says which)
shown = ["sample_id", "category", *metrics, "judges_disagree", "disagree_on", "first_relevant_rank",
         "retrieval_left_out", "labelled", "latency_ms", "n_unmeasured", "outcome", "question"]
config = {m: st.column_config.NumberColumn(widgets.label(m), format="%.2f") for m in metrics}
config.update({"latency_ms": st.column_config.NumberColumn("latency ms", format="%.0f"),
               "first_relevant_rank": st.column_config.NumberColumn(
                   "first relevant rank", help="Blank: not retrieved, when the sample is labelled and measured; "
                   "else see the next columns"),
               "retrieval_left_out": st.column_config.TextColumn(
                   "retrieval left out", help="Why eval's retrieval metrics leave this labelled sample out (no "
                   "first relevant rank to count: neither retrieved nor missed)"),
               "labelled": st.column_config.CheckboxColumn("labelled", help="Has relevance labels"),
               "judges_disagree": st.column_config.CheckboxColumn("judges disagree"),
               "question": st.column_config.TextColumn("question", width="large")})
event = st.dataframe(view[shown], hide_index=True, width="stretch", height=420, column_config=config,
                     on_select="rerun", selection_mode="single-row", key="samples_table")
rows = event.selection.rows if event is not None else []
ids = view["sample_id"].tolist()
widgets.open_sample(ids[rows[0]] if rows and rows[0] < len(ids) else None, "samples_table")
sid = widgets.sample_picker(ids, key="samples_pick")
if sid:
    st.divider()
    widgets.drilldown(state.detail(*state.key(run), sid, run), key="samples")
