"""Label: a person labels samples one at a time (grounded? correct? relevant contexts?), one click or key per label,
saved append-only to the run's labels.jsonl with who and when. The judges' verdicts stay hidden unless asked for (they
anchor). Samples come in an order stratified by the judge's score (eval/labelling.py); already labelled ones are
skipped, and a sample whose answer changed since it was labelled comes back (its labels judged the earlier answer).
The labels calibrate the judge's means (PPI, eval/calibration.py): shown below once a metric has enough."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from corpora.errors import InputError
from corpora.labels import add_label, read_labels
from ragdoctor.dashboard import label_data as ld
from ragdoctor.dashboard import state, widgets
from ragdoctor.dashboard.text import code, html, md

WHO, WHO_INPUT, CURRENT, SKIPPED = "labeller", "label_who", "label_current", "label_skipped"
SAVE_ERROR = "label_save_error"

run = state.require_run()
widgets.run_header(run, "Label samples")
st.caption("Read the question, the contexts and the answer, then answer each question with one click or its key. "
           "Each label is appended to `labels.jsonl` in the run folder with your name and the time (the latest label "
           "per sample, metric and person counts). Samples come stratified by the judge's score, so a few labels "
           "cover the whole range; 30 labels of a metric give its PPI-corrected mean.")

st.session_state.setdefault(SKIPPED, [])
if WHO_INPUT not in st.session_state:  # a widget's own key is dropped when another page runs: keep the name apart
    st.session_state[WHO_INPUT] = st.session_state.get(WHO, "")
c1, c2, c3 = st.columns([2, 3, 2])
who = c1.text_input("Your name (saved with each label)", key=WHO_INPUT,
                    on_change=lambda: st.session_state.update({WHO: st.session_state[WHO_INPUT]})).strip()
st.session_state[WHO] = who
cannot = ld.unusable(run)  # questions this run cannot use: left out unless picked (a label of them calibrates nothing)
usable = [m for m in ld.LABEL_SET if m not in cannot] or list(ld.LABEL_SET)
state.restore("label_metrics", valid=lambda v: set(v) <= set(ld.LABEL_SET))
state.restore("label_stratify", valid=lambda v: v in ld.LABEL_SET)
st.session_state.setdefault("label_metrics", usable)
metrics = c2.multiselect("Label", list(ld.LABEL_SET), key="label_metrics", format_func=widgets.label) or usable
stratify = c3.selectbox("Order stratified by the judge's", list(ld.LABEL_SET), key="label_stratify",
                        format_func=widgets.label)
state.remember("label_metrics", "label_stratify")  # kept across a visit to another page, as the labeller's name is
if cannot:
    picked = [m for m in metrics if m in cannot]
    st.warning("This run cannot use labels of " + "; ".join(f"{widgets.label(m)} ({md(why)})"
                                                            for m, why in cannot.items()) +
               (": labels of them are kept, but calibrate nothing on this run as it is." if picked else
                ": left out of the questions below (pick them above to label them anyway)."))

errors: list[InputError] = []
labels = read_labels(run.folder, errors)
for e in errors[:5]:
    st.warning(f"skipped bad label line: {md(e.one_line())}")
if len(errors) > 5:
    st.warning(f"... and {len(errors) - 5} more bad label line(s) skipped ({len(errors)} in all)")
prog = ld.progress(run, labels, metrics, stratify, skipped=st.session_state[SKIPPED])

pcols = st.columns(len(metrics))
for col, m in zip(pcols, metrics):
    n = prog.counts.get(m, 0)
    col.progress(min(1.0, n / prog.target), text=f"{widgets.label(m)}: {n} labelled / target {prog.target}+")

current = st.session_state.get(CURRENT)
if current not in prog.order:  # labelled on every metric (here or elsewhere), skipped, or not in this run
    current = prog.order[0] if prog.order else None
    st.session_state[CURRENT] = current


def save(sample_id: str, metric: str, value: float) -> None:
    shown = ld.labelled_trace(run, sample_id)  # the answer on the page: the label stops counting once it changes
    try:
        add_label(run.folder, sample_id, metric, value, st.session_state[WHO],
                  sample_hash=shown.content_hash() if shown is not None else None)
        st.session_state[SAVE_ERROR] = None
    except InputError as exc:  # e.g. a name pasted with a tab in it: say so, keep the page
        st.session_state[SAVE_ERROR] = f"label not saved: {exc.one_line()}"


def skip(sample_id: str) -> None:
    st.session_state[SKIPPED] = [*st.session_state[SKIPPED], sample_id]


if current is None and not run.sample_ids:
    st.info("This run has no samples to label yet.")
elif current is None and len(prog.done) < len(run.sample_ids):  # the rest skipped in this session
    st.info(f"No sample left to label in this session: {len(prog.done)} of {len(run.sample_ids)} labelled on every "
            "question asked; you skipped the rest (they come back when the page is reloaded).")
elif current is None:
    st.success(f"Every sample of this run is labelled ({len(prog.done)} samples). Thank you!")
else:
    trace = ld.labelled_trace(run, current)
    st.markdown(f"#### Sample {code(current)} · {len(prog.done)} done, {len(prog.order)} to go")
    if not who:
        st.warning("Type your name above first: every label records who made it.")
    if st.session_state.get(SAVE_ERROR):
        st.error(md(st.session_state[SAVE_ERROR]))
    left, right = st.columns([3, 2])
    with left, st.container(border=True):
        st.markdown("**Question**")
        st.markdown(f"<div>{html(trace.question if trace else '')}</div>", unsafe_allow_html=True)
        st.markdown("**Answer**" + (f" ({trace.outcome})" if trace and trace.outcome != "answered" else ""))
        st.markdown(f"<div>{html(trace.answer if trace else '') or '<i>empty</i>'}</div>",
                    unsafe_allow_html=True)
        st.markdown("**Reference answer**")
        ref = trace.reference if trace else None
        st.markdown(f"<div>{html(ref) if ref else '<i>none given</i>'}</div>", unsafe_allow_html=True)
    with right:
        mine = ld.labels_of(labels, current, who)
        for m in metrics:
            question, yes_key, no_key = ld.QUESTIONS[m]
            given = mine.get(m)
            st.markdown(f"**{question}**" + (f" · you said **{'yes' if given.value >= 0.5 else 'no'}**" if given
                                             else ""))
            b1, b2 = st.columns(2)
            b1.button("Yes", key=f"lab_{m}_yes", shortcut=yes_key, on_click=save, args=(current, m, 1.0),
                      disabled=not who, type="primary" if given and given.value >= 0.5 else "secondary",
                      width="stretch")
            b2.button("No", key=f"lab_{m}_no", shortcut=no_key, on_click=save, args=(current, m, 0.0),
                      disabled=not who, type="primary" if given and given.value < 0.5 else "secondary",
                      width="stretch")
        st.button("Skip / next sample", key="lab_next", shortcut=ld.NEXT_SHORTCUT, on_click=skip, args=(current,),
                  width="stretch")
        st.caption("Keys: " + " · ".join(f"{widgets.label(m)} {ld.QUESTIONS[m][1]} yes / {ld.QUESTIONS[m][2]} no"
                                         for m in metrics) + f" · {ld.NEXT_SHORTCUT} skip")
        if st.toggle("Show the judges' verdicts (they anchor: look after labelling)", key="label_show_judges"):
            st.dataframe(pd.DataFrame(ld.judge_values(run, current)), hide_index=True, width="stretch")
    st.markdown("**Retrieved contexts**")
    chunks = trace.chunks if trace else []
    if not chunks:
        st.caption("none" if trace is None or trace.contexts is not None else "the record does not say what was "
                   "retrieved")
    for c in chunks:
        with st.container(border=True):
            st.caption(f"#{c.rank} · {md(c.chunk_id)}" + (f" · {md(c.title)}" if c.title else ""))
            st.markdown(f"<div>{html(c.text)}</div>", unsafe_allow_html=True)

st.subheader("Calibrated by these labels (PPI)")
rows = state.calibrated(run)
if not rows:
    st.info("No labels on this run's samples yet.")
else:
    widgets.calibrated(rows)
