"""Index lab: the JSON `ragdoctor index-lab --out FILE.json` writes (eval/index_lab.py), as recall@10 against exact
search vs index memory (point size: p50 latency), a table, and what each index kind trades. The file is read from the
path typed in, by default the open run folder's index-lab.json when there is one."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from ragdoctor.dashboard import widgets
from ragdoctor.dashboard.text import md

EXPLAIN = """
- **flat**: exact search over every float32 vector (4 bytes x dimensions each); the reference the others are scored
  against (recall@10 = 1 by definition).
- **SQ8**: each dimension stored in 8 bits instead of 32: about 4x smaller, a tiny loss of ranking precision.
- **IVF**: k-means splits the vectors into `nlist` cells; a query scans only the `nprobe` nearest cells. Faster,
  the same memory as flat; recall drops when the right vectors sit in cells it did not probe (the default probes a
  quarter of the cells, at least 8).
- **IVF-PQ**: IVF whose vectors are product-quantizer codes (`m` sub-quantizers, one byte each): a small fraction
  of flat's memory, the largest loss of recall.
- **refine**: IVF-PQ's top `k_factor x k` candidates re-ranked with better vectors (8-bit SQ8, or the exact float
  vectors: IndexRefineFlat, which costs more memory than flat). Refine cannot recover what IVF did not probe.
- **HNSW**: a navigable graph over the float vectors: fast and near exact, with the links as memory overhead.
"""

st.title("Index lab")
lab = widgets.lab_file("index-lab.json", "ragdoctor index-lab", "il_path", EXPLAIN)
try:
    df = widgets.lab_rows(lab, {"name": "text", "factory": "text", "index_bytes": "number", "memory_vs_flat": "number",
                                "build_s": "number", "p50_ms": "number", "p99_ms": "number",
                                "recall@10_vs_flat": "number or null", "ndcg@10": "number or null"})
    df["MiB"] = df["index_bytes"] / 2**20
    caption = (f"{lab['n_vectors']:,} vectors ({lab['dim']}-d), {lab['n_queries']:,} queries from "
               f"{lab.get('queries_from', '?')}; IVF with {lab['nlist']} lists; faiss {lab['faiss_version']}")
except (KeyError, TypeError, ValueError) as exc:
    st.error(md(f"not an index lab file ({type(exc).__name__}: {exc})"))
    st.stop()
st.caption(md(caption))
chart = alt.Chart(df).mark_circle(opacity=0.8).encode(
    x=alt.X("MiB:Q", title="index memory (MiB, faiss.serialize_index)"),
    y=alt.Y("recall@10_vs_flat:Q", title="recall@10 against flat", scale=alt.Scale(zero=False)),
    size=alt.Size("p50_ms:Q", title="p50 latency (ms)"), color=alt.Color("name:N", title="index"),
    tooltip=["name", "factory", alt.Tooltip("MiB:Q", format=".2f"), alt.Tooltip("p50_ms:Q", format=".3f"),
             alt.Tooltip("p99_ms:Q", format=".3f"), alt.Tooltip("recall@10_vs_flat:Q", format=".3f"), "ndcg@10"])
st.altair_chart(chart.properties(height=380), width="stretch")
if lab.get("recall_unmeasured"):
    st.caption(f"recall@10 against flat unmeasured: {md(lab['recall_unmeasured'])}")
if lab.get("ndcg_unmeasured"):
    st.caption(f"nDCG@10 unmeasured: {md(lab['ndcg_unmeasured'])}")
table = df[["name", "factory", "MiB", "memory_vs_flat", "build_s", "p50_ms", "p99_ms", "recall@10_vs_flat",
            "ndcg@10"]].copy()
for col in ("recall@10_vs_flat", "ndcg@10"):
    table[col] = table[col].map(lambda v: "unmeasured" if v is None or pd.isna(v) else f"{v:.3f}")
st.dataframe(table, width="stretch", hide_index=True)
st.subheader("What each index trades")
st.markdown(EXPLAIN)
