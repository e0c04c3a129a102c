"""The ragdoctor dashboard: a thin view over eval/ and diagnostics/ results (layout only; no metric logic here).

    ragdoctor dashboard [RUN ...]            # serves on 127.0.0.1 and prints the URL
    streamlit run app.py -- [RUN ...]        # the same, by hand

Pages live in ragdoctor/dashboard/pages/; the data they show comes from ragdoctor.dashboard.data."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # `streamlit run` puts the script's folder on the path; an installed copy may not
    sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

import streamlit as st  # noqa: E402

from ragdoctor.dashboard import state  # noqa: E402

PAGES = ROOT / "ragdoctor" / "dashboard" / "pages"


def argv_runs() -> list[str]:
    """Run folders given after `--` to `streamlit run app.py` (sys.argv belongs to someone else under a test runner)."""
    if sys.argv and Path(sys.argv[0]).resolve() == Path(__file__).resolve():
        return [a for a in sys.argv[1:] if not a.startswith("-")]
    return []


st.set_page_config(page_title="ragdoctor dashboard", page_icon=":material/stethoscope:", layout="wide")
state.sidebar(argv_runs())
nav = st.navigation([
    st.Page(PAGES / "overview.py", title="Overview", icon=":material/dashboard:", url_path="overview", default=True),
    st.Page(PAGES / "samples.py", title="Samples", icon=":material/table_view:", url_path="samples"),
    st.Page(PAGES / "disagreements.py", title="Disagreements", icon=":material/balance:", url_path="disagreements"),
    st.Page(PAGES / "retrieval.py", title="Retrieval", icon=":material/trending_up:", url_path="retrieval"),
    st.Page(PAGES / "compare.py", title="Compare runs", icon=":material/compare_arrows:", url_path="compare"),
    st.Page(PAGES / "label.py", title="Label", icon=":material/how_to_reg:", url_path="label"),
    st.Page(PAGES / "playground.py", title="Playground", icon=":material/science:", url_path="playground"),
    st.Page(PAGES / "index_lab.py", title="Index lab", icon=":material/speed:", url_path="index-lab"),
    st.Page(PAGES / "retrieval_lab.py", title="Retrieval lab", icon=":material/tune:", url_path="retrieval-lab"),
])
with st.sidebar:
    st.caption("ragdoctor · every number here is read from the run folder; nothing is recomputed in the app.")
nav.run()
