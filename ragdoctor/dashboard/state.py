"""Which runs are open, and the cached data of each. A run is cached by its path and the mtimes/sizes of its files,
so an edited or re-evaluated run reloads by itself and an unchanged one never reloads across reruns.

The parsed run (``Run``: thousands of records) is an ``st.cache_resource``: shared read-only, never copied or pickled
(unpickling a 1,000-sample run costs about a second on every rerun). Frames derived from it are ``st.cache_data``
keyed on (path, stamp)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from ragdoctor.dashboard import data as rd

RUNS_KEY = "run_paths"  # the sidebar's text area: one run folder (or a folder of runs) per line
RUN_KEY = "run"  # the selected run's path
SAMPLE_KEY = "sample_id"  # the sample open in a drill-down, shared by the pages


@st.cache_resource(max_entries=16, show_spinner=False)
def _load(path: str, stamp: tuple) -> rd.Run:
    return rd.load_run(path)


def load(path: str | Path) -> rd.Run:
    path = str(path)
    with st.spinner(f"Loading {Path(path).name} ..."):
        return _load(path, rd.run_stamp(path))


def key(run: rd.Run) -> tuple[str, tuple]:
    """(path, stamp): what every derived cache below is keyed on."""
    return str(run.path), rd.run_stamp(run.path)


@st.cache_data(max_entries=32, show_spinner="Computing recall@k from the traces ...")
def recall_curve(path: str, stamp: tuple, _run: rd.Run) -> pd.DataFrame:
    return rd.recall_curve(_run)


@st.cache_data(max_entries=32, show_spinner="Comparing the runs (bootstrap CIs) ...")
def compare(a: tuple, b: tuple, _ra: rd.Run, _rb: rd.Run) -> dict:
    return rd.compare_runs(_ra, _rb)


@st.cache_data(max_entries=32, show_spinner="Calibrating the judges by the human labels (PPI) ...")
def _calibrated(path: str, stamp: tuple, labels_stamp: tuple, _run: rd.Run) -> list[dict]:
    return rd.calibrated(_run)


def calibrated(run: rd.Run) -> list[dict]:
    """The run's PPI-calibrated rows, recomputed when its results or its labels.jsonl change."""
    return _calibrated(*key(run), rd.labels_stamp(run.path), run)


@st.cache_data(max_entries=32, show_spinner=False)
def claim_agreement(path: str, stamp: tuple, _run: rd.Run) -> dict:
    return rd.claim_agreement(_run)


@st.cache_data(max_entries=256, show_spinner=False)
def detail(path: str, stamp: tuple, sample_id: str, _run: rd.Run) -> dict:
    return _run.detail(sample_id)


def discovered(cwd: Path | None = None) -> list[Path]:
    """Run folders under ./runs, newest first (the default when no run was named)."""
    return rd.find_runs([(cwd or Path.cwd()) / "runs"])


def sidebar(argv_runs: list[str]) -> list[Path]:
    """The run picker. Returns the open runs; the selected one is in session state under RUN_KEY."""
    if RUNS_KEY not in st.session_state:
        st.session_state[RUNS_KEY] = "\n".join(argv_runs or [str(p) for p in discovered()[:10]])
    with st.sidebar:
        st.text_area("Run folders (one per line; a folder of runs works too)", key=RUNS_KEY, height=90)
        runs = rd.find_runs(st.session_state[RUNS_KEY].splitlines())
        missing = [ln for ln in st.session_state[RUNS_KEY].splitlines() if ln.strip() and not Path(ln.strip()).exists()]
        for m in missing:
            st.warning(f"not found: {m}")
        for ln in st.session_state[RUNS_KEY].splitlines():  # there, but neither a run nor a folder of runs
            if ln.strip() and Path(ln.strip()).exists() and not rd.find_runs([ln]):
                st.warning(f"not a run folder (no results.jsonl, results.parquet or traces.jsonl): {ln.strip()}")
        if not runs:
            st.info("No run folder yet. Make one with `ragdoctor demo` or `ragdoctor run` + `ragdoctor eval`, "
                    "then name it above.")
            return []
        names = [str(p) for p in runs]
        if st.session_state.get(RUN_KEY) not in names:
            st.session_state[RUN_KEY] = names[0]
        st.selectbox("Run", names, key=RUN_KEY, format_func=lambda p: Path(p).name)
    return runs


def load_or_say(path: str | Path) -> rd.Run | None:
    """``load(path)``, or None after one error line naming the run (a damaged run never raises in a page)."""
    try:
        return load(path)
    except (FileNotFoundError, ValueError, OSError) as exc:  # InputError is a ValueError
        st.error(f"Could not read {path}: {exc}")
        return None


def current() -> rd.Run | None:
    path = st.session_state.get(RUN_KEY)
    return load_or_say(path) if path else None


def require_run() -> rd.Run:
    """The selected run, or a hint and a stop when none is open."""
    run = current()
    if run is None:
        st.info("Open a run folder in the sidebar to begin.")
        st.stop()
    return run


def open_runs() -> list[str]:
    return [str(p) for p in rd.find_runs(st.session_state.get(RUNS_KEY, "").splitlines())]
