"""Disagreements: where metrics contradict each other (the groundedness x correctness quadrant first), and where two
judges read the same answer differently. Every quadrant comes with its plain-language explanation."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from corpora.errors import InputError
from diagnostics.disagreement import BUCKETS, EXPLANATIONS, LEFT_OUT, UNMEASURED
from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import state, widgets
from ragdoctor.dashboard.text import md

run = state.require_run()
widgets.run_header(run, "Disagreements")
df = run.samples
cols = rd.metric_columns(df)

st.markdown("A metric answers one narrow question. **Groundedness** asks *is every claim backed by the retrieved "
            "text?*; **correctness** asks *does the answer match the reference?*. Where they disagree, one of them is "
            "blind to the failure. Click a point to open that sample.")

views = [v for v in rd.QUADRANT_VIEWS if v[0] in cols and v[1] in cols]
if not views:
    st.info("This run has no pair of metrics to set against each other (it needs e.g. groundedness and "
            "answer_correctness).")
    st.stop()
c1, c2, c3, c4 = st.columns([3, 2, 2, 1.3], vertical_alignment="bottom")
x, y = c1.selectbox("View", views, format_func=lambda v: f"{widgets.label(v[0])} × {widgets.label(v[1])}", key="d_view")


def judge_choice(col, metric: str, key: str) -> str | None:
    judges = [c.partition(":")[2] for c in cols[metric]]
    pick = col.selectbox(f"{widgets.label(metric)} judge", ["preferred", *judges], key=key,
                         help="'preferred': per sample, the judge the classifier trusts most that measured that sample "
                              "(the next one where it did not), as `ragdoctor diagnose` reads it, so the counts are "
                              "diagnosis.json's. A judge's name: that judge alone (a sample it did not measure is "
                              "counted as unmeasured).")
    return None if pick == "preferred" else pick


x_judge = judge_choice(c2, x, f"d_xj_{x}")
y_judge = judge_choice(c3, y, f"d_yj_{y}")
jitter = c4.toggle("Jitter", value=True, key="d_jitter",
                   help="spread points that share a value, so each can be clicked")
try:
    everyone = state.quadrant(*state.key(run), x, y, x_judge, y_judge, 0.025 if jitter else 0.0, run)
except InputError as exc:  # a results line that does not validate: one line naming it, not a traceback
    st.error(md(state.one_line(exc)))
    st.stop()
quads = rd.quadrant_summary(everyone, x, y)
points = everyone[everyone["placed"]]
x_cut, y_cut = float(quads["x_cut"].iloc[0]), float(quads["y_cut"].iloc[0])
by = quads.set_index("quadrant")


def bucket_line(q: str) -> str:
    n = int(by.loc[q, "count"])
    why = ", ".join(f"{widgets.label(k)} {v}" for k, v in sorted(by.loc[q, "why"].items()))
    return f"**{widgets.label(q).capitalize()}: {n}**" + (f" ({md(why)})" if why else "")


if not len(points):
    st.info("No sample was measured on both metrics by these judges.")
else:
    pick = alt.selection_point(name="pick", fields=["sample_id"], on="click", clear="dblclick")
    domain = [q for q in quads["quadrant"] if q not in BUCKETS]
    scale = alt.Scale(domain=domain, range=[widgets.QUADRANT_COLORS.get(q, "#888") for q in domain])
    dots = alt.Chart(points).mark_circle(size=70).encode(
        x=alt.X("x_plot:Q", title=f"{widgets.label(x)} ({x_judge or 'preferred judge per sample'})",
                scale=alt.Scale(domain=[-0.06, 1.06]), axis=alt.Axis(values=[0, 0.25, 0.5, 0.75, 1], format=".2f")),
        y=alt.Y("y_plot:Q", title=f"{widgets.label(y)} ({y_judge or 'preferred judge per sample'})",
                scale=alt.Scale(domain=[-0.18, 1.18]), axis=alt.Axis(values=[0, 0.25, 0.5, 0.75, 1], format=".2f")),
        color=alt.Color("quadrant:N", scale=scale, legend=alt.Legend(orient="bottom", title=None,
                                                                     labelExpr="replace(datum.label, /_/g, ' ')")),
        opacity=alt.condition(pick, alt.value(0.85), alt.value(0.35)),
        tooltip=["sample_id", "category", alt.Tooltip("x:Q", title=x, format=".2f"),
                 alt.Tooltip("y:Q", title=y, format=".2f"), "quadrant", "question"],
    ).add_params(pick)
    rules = alt.Chart(pd.DataFrame({"x": [x_cut]})).mark_rule(strokeDash=[4, 4], color="gray").encode(x="x:Q") + \
        alt.Chart(pd.DataFrame({"y": [y_cut]})).mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
    # quadrant names above and below the data, centred on their quadrant
    corner = pd.DataFrame([{"x": (1 + x_cut) / 2 if hx else x_cut / 2, "y": 1.12 if hy else -0.12,
                            "text": widgets.label(q), "quadrant": q}
                           for (hx, hy), q in rd.QUADRANT_VIEWS[(x, y)].names.items()])
    labels = alt.Chart(corner).mark_text(fontWeight="bold", fontSize=13).encode(
        x="x:Q", y="y:Q", text="text:N", color=alt.Color("quadrant:N", scale=scale, legend=None))
    event = st.altair_chart((rules + labels + dots).properties(height=460), width="stretch", on_select="rerun",
                            selection_mode="pick", key="quadrant_chart")
    picked = (event.selection.get("pick") or []) if event is not None else []
    widgets.open_sample(picked[0].get("sample_id") if picked and isinstance(picked[0], dict) else None,
                        "quadrant_chart")

    # the four quadrants laid out as on the chart: high y on top, high x on the right
    names = rd.QUADRANT_VIEWS[(x, y)].names
    for hy in (True, False):
        row = st.columns(2)
        for i, hx in enumerate((False, True)):
            q = names[(hx, hy)]
            with row[i].container(border=True):
                color = widgets.QUADRANT_COLORS.get(q, "#888")
                st.markdown(f'<span style="color:{color};font-weight:700">● {widgets.label(q)}</span> — '
                            f'**{int(by.loc[q, "count"])}** sample{"" if by.loc[q, "count"] == 1 else "s"} '
                            f'({by.loc[q, "share"]:.0%})', unsafe_allow_html=True)
                st.caption(by.loc[q, "explanation"] or "")

    st.caption("A point's colour is its quadrant as the classifier reads it: grounded means at or above the cut *and* "
               "no claim unsupported, and a correctness above its cut that changes a fact of the reference is wrong, "
               "so a few points may sit across a dashed line from their colour.")
    st.markdown(f"{bucket_line(UNMEASURED)} · {bucket_line(LEFT_OUT)}")
    st.caption(f"{by.loc[UNMEASURED, 'explanation']} {by.loc[LEFT_OUT, 'explanation']}")

    # the second quadrant of each view is the instructive one (grounded yet wrong, ...): open it first
    quadrant = st.selectbox("Samples in quadrant", [*names.values(), *BUCKETS], format_func=widgets.label,
                            key="d_quadrant", index=1)
    ids = everyone.loc[everyone["quadrant"] == quadrant, "sample_id"].tolist()
    current = st.session_state.get(state.SAMPLE_KEY)
    if current in set(everyone["sample_id"]) and current not in ids:
        ids = [current, *ids]
    sid = widgets.sample_picker(ids, key="d_pick") if ids else None
    if sid:
        with st.container(border=True):
            widgets.drilldown(state.detail(*state.key(run), sid, run), key="disagreements")

# --- judge vs judge ---------------------------------------------------------------------------------------------------
st.divider()
st.header("Judge against judge")
st.caption(EXPLANATIONS["judge_disagreement"])
multi = [m for m, mc in cols.items() if len(rd.judge_pairs(df, m))]
if not multi:
    st.info("Only one judge measured each metric in this run: evaluate with two or more judges "
            "(e.g. `--judges nli,lexical`) to compare them.")
    st.stop()
j1, j2 = st.columns(2)
metric = j1.selectbox("Metric", multi, format_func=widgets.label, key="jj_metric")
pairs = rd.judge_pairs(df, metric)
a, b = j2.selectbox("Judges", pairs, format_func=lambda p: f"{p[0]} vs {p[1]}", key=f"jj_pair_{metric}")
agree = rd.judge_agreement(df, metric, a, b)
k1, k2, k3 = st.columns(3)
k1.metric("samples measured by both", agree["n"])
k2.metric(f"same side of {agree['cut']:g}", "-" if agree["agreement"] is None else f"{agree['agreement']:.0%}")
k3.metric("Spearman ρ", "-" if agree["spearman"] is None else f"{agree['spearman']:.2f}")
left, right = st.columns([3, 2])
with left:
    pts = agree["points"]
    jpick = alt.selection_point(name="jpick", fields=["sample_id"], on="click", clear="dblclick")
    sc = alt.Chart(pts).mark_circle(size=60).encode(
        x=alt.X(f"{a}:Q", scale=alt.Scale(domain=[-0.05, 1.05]), title=f"{widgets.label(metric)} by {a}"),
        y=alt.Y(f"{b}:Q", scale=alt.Scale(domain=[-0.05, 1.05]), title=f"{widgets.label(metric)} by {b}"),
        color=alt.Color("agree:N", scale=alt.Scale(domain=[True, False], range=["#2e9e4f", "#d33a2c"]),
                        legend=alt.Legend(title="same verdict", orient="bottom")),
        opacity=alt.condition(jpick, alt.value(0.8), alt.value(0.3)),
        tooltip=["sample_id", "category", alt.Tooltip(f"{a}:Q", format=".2f"), alt.Tooltip(f"{b}:Q", format=".2f"),
                 "question"]).add_params(jpick)
    diag = alt.Chart(pd.DataFrame({"x": [0, 1], "y": [0, 1]})).mark_line(color="gray", strokeDash=[2, 2]).encode(
        x="x:Q", y="y:Q")
    ev = st.altair_chart((diag + sc).properties(height=340), width="stretch", on_select="rerun",
                         selection_mode="jpick", key="judge_chart")
    jp = (ev.selection.get("jpick") or []) if ev is not None else []
    widgets.open_sample(jp[0].get("sample_id") if jp and isinstance(jp[0], dict) else None, "judge_chart")
with right:
    st.markdown(f"**Per sample, at the cut {agree['cut']:g}**")
    st.dataframe(agree["confusion"], width="stretch")
    claims = state.claim_agreement(*state.key(run), run)
    entry = claims.get(f"{a}_vs_{b}") or claims.get(f"{b}_vs_{a}")
    if metric == "groundedness" and entry and entry.get("claims"):
        st.markdown(f"**Per claim** ({entry['claims']} claims both judged; agreement "
                    f"{entry['agreement']:.0%})")
        st.dataframe(rd.confusion_frame(entry), width="stretch")
if metric == "groundedness" and entry and entry.get("examples"):
    with st.expander(f"Claims the two judges disagree on ({len(entry['examples'])})"):
        ex = pd.DataFrame([{"sample_id": e["sample_id"], "claim": e["claim"], f"{ja} verdict": e[ja]["verdict"],
                            f"{ja} score": e[ja]["score"], f"{jb} verdict": e[jb]["verdict"],
                            f"{jb} score": e[jb]["score"]} for e in entry["examples"]
                           for ja, jb in [tuple(entry["judges"])]])
        st.dataframe(ex, hide_index=True, width="stretch")
disagreeing = pts.loc[~pts["agree"], "sample_id"].tolist()
current = st.session_state.get(state.SAMPLE_KEY)
jids = ([current] if current in set(pts["sample_id"]) and current not in disagreeing else []) + disagreeing
if jids:
    sid = widgets.sample_picker(jids, key="jj_pick", label_text="Open a sample where they disagree")
    with st.expander(f"Sample {md(sid)}", expanded=st.session_state.get("_last_click") == "judge_chart"):
        widgets.drilldown(state.detail(*state.key(run), str(sid), run), key="judges")
