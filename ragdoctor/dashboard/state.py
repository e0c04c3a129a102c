"""Which runs are open, and the cached data of each. A run is cached by its path and the mtimes/sizes of its files,
so an edited or re-evaluated run reloads by itself and an unchanged one never reloads across reruns.

The parsed run (``Run``: thousands of records) is an ``st.cache_resource``: shared read-only, never copied or pickled
(unpickling a 1,000-sample run costs about a second on every rerun). Frames derived from it are ``st.cache_data``
keyed on (path, stamp)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from ragdoctor.dashboard import compare_data as cd
from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard.text import md

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
    return cd.compare_runs(_ra, _rb)


@st.cache_data(max_entries=32, show_spinner="Calibrating the judges by the human labels (PPI) ...")
def _calibrated(path: str, stamp: tuple, labels_stamp: tuple, _run: rd.Run) -> list[dict]:
    return rd.calibrated(_run)


def calibrated(run: rd.Run) -> list[dict]:
    """The run's PPI-calibrated rows, recomputed when its results or its labels.jsonl change."""
    return _calibrated(*key(run), rd.labels_stamp(run.path), run)


@st.cache_data(max_entries=32, show_spinner="Placing the samples in the quadrant ...")
def quadrant(path: str, stamp: tuple, x: str, y: str, x_judge: str | None, y_judge: str | None, jitter: float,
             _run: rd.Run) -> pd.DataFrame:
    return rd.quadrant_points(_run, x, y, x_judge, y_judge, jitter=jitter)


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
        lines = [ln.strip() for ln in st.session_state[RUNS_KEY].splitlines() if ln.strip()]
        for ln in lines:  # "~/runs/x" is the home folder's, as find_runs reads it
            if not Path(ln).expanduser().exists():
                st.warning(f"not found: {md(ln)}")
            elif not rd.find_runs([ln]):  # there, but neither a run nor a folder of runs
                st.warning(f"not a run folder (no results.jsonl, results.parquet or traces.jsonl): {md(ln)}")
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
    """``load(path)``, or None after one error line naming the run: whatever goes wrong reading a run (a damaged line,
    a file that vanished mid-read, a record no reader expected) is said in one line, never a traceback in a page."""
    try:
        return load(path)
    except Exception as exc:  # noqa: BLE001 - InputError (a ValueError), OSError, and anything a damaged file causes
        st.error(f"Could not read {md(str(path))}: {md(one_line(exc))}")
        return None


def one_line(exc: BaseException) -> str:
    """An exception as one line: its message's first line (its type where the message says nothing by itself)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, (ValueError, OSError)) and text:  # InputError and OSError messages name the file and problem
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --- widget choices that survive a visit to another page ------------------------------------------------------------
# streamlit drops a widget's own key when a page without that widget runs: the choice is kept under a key of its own
# and given back to the widget when its page runs again (the labeller's name is kept the same way, on the Label page).

def _kept(key: str) -> str:
    return f"kept_{key}"


def restore(key: str, valid=None) -> None:
    """Before the widget keyed ``key`` is drawn: give it back the value it last had on this page, unless ``valid``
    (a callable) says that value no longer fits (an option the open run does not have)."""
    if key not in st.session_state and _kept(key) in st.session_state:
        value = st.session_state[_kept(key)]
        if valid is None or valid(value):
            st.session_state[key] = value


def remember(*keys: str) -> None:
    """After the widgets keyed ``keys`` are drawn: keep their values for the next visit to the page."""
    for key in keys:
        if key in st.session_state:
            st.session_state[_kept(key)] = st.session_state[key]


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
