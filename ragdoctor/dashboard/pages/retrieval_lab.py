"""Retrieval lab: the JSON `ragdoctor retrieval-lab --out FILE.json` writes (eval/retrieval_lab.py). Each retrieval
setting's nDCG@10 on the half of the queries it was chosen on against the other half: the lesson is that the best
setting on one half is rarely as far ahead on the other (the winner's curse), which is why the lab confirms a choice
before it recommends it. Then the verdict, and the table."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from ragdoctor.dashboard import widgets
from ragdoctor.dashboard.text import md

EXPLAIN = """
- **BM25** ranks by shared words (rare words count more); **dense** by embedding similarity; **hybrid** joins the
  two lists: **RRF** by ranks alone, **min-max** / **z-score** by normalised scores with `w` the dense share.
- **BM25 k1 / b**: k1 is how fast repeats of a word stop adding score, b how much long chunks are penalised.
  A change rebuilds the index.
- **+rerank w**: a cross-encoder reads the question with each of the first stage's best chunks; `w` is its share of
  the final score.
- **choose / confirm**: the queries are split in two by a hash of their id. The setting best on the *choose* half is
  compared with the current configuration on the *confirm* half. With dozens of settings, the best on one half is
  partly best by luck; only what holds on queries it was not chosen on counts ("beats": the 95% CI of the
  difference lies above 0).
"""


def first_stage(name: str) -> str:
    return name.split(",")[0]


st.title("Retrieval lab")
lab = widgets.lab_file("retrieval-lab.json", "ragdoctor retrieval-lab", "rl_path", EXPLAIN)
try:
    df = widgets.lab_rows(lab, {"name": "text", "rerank_weight": "number or null", "ndcg@10": "number or null",
                                "ndcg@10_choose": "number or null", "ndcg@10_confirm": "number or null",
                                "recall@100": "number or null", "config": "object or null"})
    if not isinstance(lab.get("current"), str):
        raise ValueError("no 'current' setting named")
    confirm = lab.get("confirm")
    if lab.get("chosen") is not None and confirm:
        ci = confirm["ci"] if isinstance(confirm, dict) else None
        if not isinstance(ci, list) or len(ci) != 2 or (ci[0] is None) != (ci[1] is None) or \
                not all(v is None or widgets.is_number(v) for v in ci) or \
                not all(widgets.is_number(confirm.get(k)) for k in ("chosen", "current", "difference")):
            raise ValueError("'confirm' is not the lab's verdict (ci, chosen, current, difference)")
    df["first stage"] = df["name"].map(first_stage)
    df["rerank"] = df["rerank_weight"].map(lambda w: "off" if w is None or pd.isna(w) else f"w={w}")
    df["current"] = df["name"] == lab["current"]
    caption = (f"{lab['n_queries']:,} labelled queries from {lab.get('queries_from', '?')}: {lab['n_choose']} to "
               f"choose on, {lab['n_confirm']} to confirm on; {len(df)} settings; index BM25 "
               f"k1={lab.get('index_bm25', {}).get('k1', '?')} b={lab.get('index_bm25', {}).get('b', '?')}")
except (KeyError, TypeError, ValueError) as exc:
    st.error(md(f"not a retrieval lab file ({type(exc).__name__}: {exc})"))
    st.stop()
st.caption(md(caption))
if lab.get("chosen") is None or not confirm:
    st.warning(f"No choice: unmeasured ({md(lab.get('unmeasured', 'no reason recorded'))})")
else:
    lo, hi = confirm["ci"]
    ci = "CI unmeasured" if lo is None else f"95% CI {lo:+.3f} to {hi:+.3f}"
    text = (f"Chosen on the choose half: **{md(lab['chosen'])}**. On the confirm half: nDCG@10 "
            f"{confirm['chosen']:.3f} against the current **{md(lab['current'])}** {confirm['current']:.3f} "
            f"({confirm['difference']:+.3f}, {ci}).")
    if confirm.get("verdict") == "beats":
        st.success(text + " A confirmed gain: the configuration lines are in the table's `config` column.")
    else:
        verdict = md(str(confirm.get("verdict") or "unmeasured").capitalize())
        st.info(text + f" {verdict}: keep the current configuration.")
if lab.get("note"):
    st.caption(md(lab["note"]))
scored = df.dropna(subset=["ndcg@10_choose", "ndcg@10_confirm"])
lo_ = float(min(scored["ndcg@10_choose"].min(), scored["ndcg@10_confirm"].min())) if len(scored) else 0.0
hi_ = float(max(scored["ndcg@10_choose"].max(), scored["ndcg@10_confirm"].max())) if len(scored) else 1.0
diagonal = alt.Chart(pd.DataFrame({"x": [lo_, hi_]})).mark_line(color="#9aa0a6", strokeDash=[4, 4]).encode(
    x="x:Q", y="x:Q")
points = alt.Chart(scored).mark_point(filled=True, size=90, opacity=0.85).encode(
    x=alt.X("ndcg@10_choose:Q", title="nDCG@10 on the choose half", scale=alt.Scale(zero=False)),
    y=alt.Y("ndcg@10_confirm:Q", title="nDCG@10 on the confirm half", scale=alt.Scale(zero=False)),
    color=alt.Color("first stage:N"), shape=alt.Shape("rerank:N", title="rerank"),
    tooltip=["name", alt.Tooltip("ndcg@10_choose:Q", format=".3f"), alt.Tooltip("ndcg@10_confirm:Q", format=".3f"),
             alt.Tooltip("ndcg@10:Q", format=".3f"), "current"])
st.altair_chart((diagonal + points).properties(height=420), width="stretch")
st.caption("On the dashed line a setting does as well on both halves. The chosen setting is the rightmost point; "
           "how far it stands above the current one on the vertical axis is what the verdict tests.")
table = df[["name", "ndcg@10", "ndcg@10_choose", "ndcg@10_confirm", "recall@100", "current", "config"]].copy()
table["config"] = table["config"].map(lambda c: "; ".join(f"{s}: {k}" for s, k in (c or {}).items()))
st.dataframe(table.sort_values("ndcg@10_choose", ascending=False), width="stretch", hide_index=True)
st.subheader("What the settings mean")
st.markdown(EXPLAIN)
