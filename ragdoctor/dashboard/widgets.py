"""Rendering shared by the pages: the one-sample drill-down, colours, small chart helpers. Layout only."""
from __future__ import annotations

import json
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from diagnostics.taxonomy import DEFINITIONS
from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import state
from ragdoctor.dashboard.text import attr, code, html, md

VERDICT_STYLE = {
    "supported": ("#c9f2d0", "#0b5d1e", "supported"),
    "unsupported": ("#ffe9a8", "#6b4b00", "unsupported"),
    "contradicted": ("#ffcccc", "#8a1010", "contradicted"),
}
QUADRANT_COLORS = {
    "grounded_right": "#2e9e4f", "grounded_wrong": "#e8830c", "ungrounded_right": "#3b7dd8",
    "ungrounded_wrong": "#d33a2c",
    "precise_grounded": "#2e9e4f", "precise_ungrounded": "#d33a2c", "noisy_grounded": "#e8830c",
    "noisy_ungrounded": "#8c5fbf", "relevant_right": "#2e9e4f", "relevant_wrong": "#e8830c",
    "offtopic_right": "#3b7dd8",
    "offtopic_wrong": "#d33a2c",
}
# categories share the quadrant colours where they mean the same thing (grounded yet wrong is orange on every page)
CATEGORY_COLORS = {
    "ok": "#2e9e4f", "grounded_yet_hallucinated": "#e8830c", "ungrounded_hallucination": "#d33a2c",
    "retrieval_miss": "#8c5fbf", "ranked_out": "#b5478c", "context_ignored": "#c9a400", "noisy_context": "#5f7d8c",
    "incomplete": "#17a2b8", "off_topic": "#6d4c41", "wrong_refusal": "#3b7dd8", "missed_refusal": "#a0522d",
    "guardrail_block": "#4e79a7", "unmeasured": "#9aa0a6",
}
for _c in DEFINITIONS:  # a category added to the taxonomy later still gets a colour
    CATEGORY_COLORS.setdefault(_c, "#607d8b")


def label(name: str) -> str:
    return name.replace("_", " ")


def category_scale() -> alt.Scale:
    return alt.Scale(domain=list(CATEGORY_COLORS), range=list(CATEGORY_COLORS.values()))


def verdict_chip(verdict: str | None, text: str | None = None) -> str:
    bg, fg, name = VERDICT_STYLE.get(verdict or "", ("#eceff1", "#37474f", verdict or "?"))
    return (f'<span style="background:{bg};color:{fg};padding:1px 6px;border-radius:8px;font-size:0.85em;'
            f'white-space:nowrap">{html(text or name)}</span>')


def highlighted_answer(segments: list[dict]) -> str:
    parts = []
    for seg in segments:
        if seg["verdict"] is None:
            parts.append(html(seg["text"]))
            continue
        bg, fg, _ = VERDICT_STYLE.get(seg["verdict"], ("#eceff1", "#37474f", ""))
        parts.append(f'<span title="claim {attr(seg["claim"])}: {attr(seg["verdict"])}" '
                     f'style="background:{bg};color:{fg};padding:1px 2px;border-radius:3px">{html(seg["text"])}'
                     f'<sup>{html(str(seg["claim"]))}</sup></span>')
    return '<div class="rd-answer" style="line-height:1.7">' + "".join(parts) + "</div>"


def _mark_sentence(text: str, sentences: list[str]) -> str:
    out = html(text)
    for s in dict.fromkeys(x for x in sentences if x):
        e = html(s)
        if e and e in out:
            out = out.replace(e, f'<mark style="background:#fff3a0">{e}</mark>', 1)
    return out


def category_badge(category: str) -> str:
    color = CATEGORY_COLORS.get(category, "#607d8b")
    return (f'<span style="background:{color};color:white;padding:2px 10px;border-radius:10px;font-weight:600">'
            f'{html(label(category))}</span>')


def open_sample(sample_id: str | None, source: str) -> None:
    """Open ``sample_id`` because of a click in ``source`` (a table or a chart), once per new click: a selection that
    merely persists across reruns does not override a sample picked since."""
    token = f"_last_{source}"
    if sample_id and st.session_state.get(token) != sample_id:
        st.session_state["sample_id"] = sample_id
        st.session_state["_last_click"] = source
    st.session_state[token] = sample_id


def sample_picker(ids: list[str], key: str, label_text: str = "Open a sample") -> str | None:
    """A selectbox of sample ids that follows the sample last opened on any page."""
    if not ids:
        return None
    current = st.session_state.get("sample_id")
    if current in ids and st.session_state.get(key) != current:
        st.session_state[key] = current
    elif st.session_state.get(key) not in ids:
        st.session_state[key] = ids[0]

    def picked() -> None:
        st.session_state["sample_id"] = st.session_state[key]

    sid = st.selectbox(label_text, ids, key=key, on_change=picked)
    st.session_state["sample_id"] = sid
    return sid


def drilldown(d: dict, *, key: str) -> None:
    """Everything about one sample: the diagnosis and the rule that fired, the question, reference and answer with each
    claim coloured by its verdict, the retrieved chunks in rank order with the chunk behind each claim marked, the
    relevant-document labels, per-stage latency, and probe results when there are any."""
    st.markdown(f"### Sample {code(d['sample_id'])}")
    diag = d.get("diagnosis")
    if diag:
        st.markdown(f"{category_badge(diag['category'])} &nbsp; {html(diag['definition'])}", unsafe_allow_html=True)
        st.markdown(f"**Rule that fired:** {html(diag['rule'])}", unsafe_allow_html=True)
        if diag["secondary"]:
            st.markdown("**Also:** " + "; ".join(f"{html(label(c))} ({html(diag['secondary_rules'].get(c, ''))})"
                                                 for c in diag["secondary"]), unsafe_allow_html=True)
    else:
        st.caption("No diagnosis for this sample (run `ragdoctor diagnose` on the run).")
    if d.get("error"):
        st.error(f"Pipeline error: {md(d['error'])}")

    left, right = st.columns([3, 2])
    with left:
        st.markdown("**Question**")
        st.markdown(f'<div>{html(d["question"])}</div>', unsafe_allow_html=True)
        st.markdown("**Reference**")
        st.markdown(f'<div>{html(d["reference"]) if d["reference"] else "<i>none</i>"}</div>', unsafe_allow_html=True)
        judges = list(d["claims"])
        judge = d["claim_judge"]
        if len(judges) > 1:
            judge = st.radio("Claims judged by", judges, index=judges.index(judge), horizontal=True, key=f"{key}_judge",
                             format_func=md)
        claims = d["claims"].get(judge, []) if judge else []
        segments = rd.highlight_segments(d["answer"], claims) if judge else d["segments"]
        st.markdown(f"**Answer** ({md(d['outcome'])})" + (f" — claims coloured by the **{md(judge)}** judge:" if judge
                                                          else ""))
        st.markdown(highlighted_answer(segments), unsafe_allow_html=True)
        if d.get("answer_from"):  # an imported trace whose answer is not the root span's own output
            st.caption(f"Where the answer comes from: {md(d['answer_from'])}")
        if claims:
            st.markdown(" ".join(verdict_chip(v) for v in VERDICT_STYLE), unsafe_allow_html=True)
            st.dataframe(pd.DataFrame([{"#": n, "claim": c.get("claim"), "verdict": c.get("verdict"),
                                        "score": c.get("score"), "chunk": c.get("chunk_id"),
                                        "evidence sentence": c.get("sentence")} for n, c in enumerate(claims, 1)]),
                         hide_index=True, width="stretch")
    with right:
        st.markdown("**Metrics**")
        m = d["metrics"]
        if len(m):
            st.dataframe(m, hide_index=True, width="stretch",
                         column_config={"value": st.column_config.NumberColumn(format="%.3f")})
        for jn, c in d["correctness"].items():
            if c.get("precision") is not None:
                st.caption(f"correctness ({md(jn)}): claim precision {c['precision']:.2f}, recall {c['recall']:.2f}")
            elif c.get("note"):
                st.caption(f"correctness ({md(jn)}): {md(c['note'])}")
        _relevance_labels(d)
        if d["latency_ms"]:
            st.markdown("**Latency per stage (ms)**")
            st.dataframe(pd.DataFrame([d["latency_ms"]]).round(1), hide_index=True)

    _chunks(d, judge)
    with st.expander("Diagnosis evidence"):
        st.json(diag["evidence"] if diag else {}, expanded=2)
    probe = d.get("probe")
    if probe:
        st.markdown("**Probe results**")
        st.json(probe, expanded=2)
    else:
        st.caption("No probe results for this sample.")


def _relevance_labels(d: dict) -> None:
    """The labels as eval's retrieval metrics read them (rd.sample_detail): relevant (graded above 0, with the grade
    when graded), found at which rank or not, matched per chunk or per document; grade 0 is judged not relevant."""
    st.markdown("**Relevant documents (labels)**")
    grades = d.get("relevance_grades")

    def name(label: str) -> str:
        return code(label) + (f" (grade {grades[label]})" if grades and label in grades else "")

    if d.get("retrieval_left_out"):  # eval's retrieval metrics leave it out: no document found or missed
        st.caption(f"Retrieval cannot be judged for this sample, as eval's retrieval metrics leave it out "
                   f"({md(d['retrieval_left_out'])}): its relevant documents count neither as retrieved nor as "
                   f"missed.")
        for doc in d["relevant_doc_ids"] or []:
            st.markdown(f"- {name(doc)}: not judged")
    elif d["relevant_doc_ids"] is None:
        st.caption("no relevance labels for this question")
    elif not d["relevant_doc_ids"]:
        st.caption("none: the question is labelled unanswerable")
    else:
        if d.get("relevance_level") == "chunk":
            st.caption("The labels name chunks: matched chunk by chunk, as eval's retrieval metrics match them.")
        for doc, rank in d["relevant_found"].items():
            st.markdown(f"- {name(doc)}: " + (f"retrieved at rank {rank}" if rank else "**not retrieved**"))
    if d.get("not_relevant"):  # qrels grade 0 or below: judged, and not relevant
        st.caption("Judged not relevant (grade 0 or below): " + ", ".join(code(x) for x in d["not_relevant"]))


def _chunks(d: dict, judge: str | None) -> None:
    chunks = d["chunks"]
    top = [c for c in chunks if c["in_context"]]
    st.markdown(f"**Retrieved chunks, in rank order** ({len(top)} given to the generator)")
    if not top:
        why = f": {md(d['contexts_missing'])}" if d.get("contexts_missing") else ""
        st.caption("nothing was retrieved" if d.get("retrieval_known", True) else
                   # contexts null after a guardrail stopped the question: nothing was meant to be retrieved (eval)
                   "blocked by a guardrail before retrieval: nothing was retrieved" if d.get("outcome") == "blocked"
                   else f"the record does not say what was retrieved (contexts null){why}")
    for c in top:
        tags = []
        unit = "chunk" if d.get("relevance_level") == "chunk" else "document"  # as eval matched the labels
        if c["relevant"] is True:
            tags.append(f":green[:material/check_circle:] relevant {unit}")
        elif c["relevant"] is False:
            tags.append(f"not a relevant {unit}")
        marks = [m for m in c["marks"] if judge is None or m["judge"] == judge]
        for verdict in ("supported", "contradicted"):
            nums = sorted({m["claim"] for m in marks if m["verdict"] == verdict})
            if nums:
                icon, verb = (":green[:material/check:]", "supports") if verdict == "supported" else \
                    (":red[:material/close:]", "contradicts")
                tags.append(f"{icon} {verb} claim {', '.join(map(str, nums))}")
        cp = c["context_precision"]
        if cp:
            tags.append("precision verdict: " + ", ".join(f"{md(j)}={'relevant' if v else 'irrelevant'}"
                                                          for j, v in cp.items()))
        if c.get("precision_blank"):  # a blank chunk gets no verdict: context precision left it out of its ranking
            tags.append("blank: no precision verdict (left out of the ranking)")
        title = f"#{c['rank']} · {md(c['chunk_id'])}" + (f" · {' · '.join(tags)}" if tags else "")
        with st.expander(title, expanded=bool(marks)):
            if c["title"]:
                st.caption(md(c["title"]))
            if c["in_context"] and not (c["text"] or "").strip():
                st.caption("blank: this chunk has no text")
            marked = _mark_sentence(c["text"] or "", [m["sentence"] for m in marks])
            st.markdown(f'<div style="font-size:0.92em">{marked}</div>', unsafe_allow_html=True)
            meta = {"doc_id": c["doc_id"], "score": c["score"], **c["signals"]}
            if c["flags"]:
                meta["flags"] = ", ".join(c["flags"])
            # an imported record may give no retriever score: "not recorded", never "None"
            st.caption(" · ".join(md(f"{k}: {v:.4g}" if isinstance(v, float) else
                                     f"{k}: {'not recorded' if v is None else v}") for k, v in meta.items()))
    rest = [c for c in chunks if not c["in_context"]]
    if rest:
        st.caption(f"{len(rest)} more candidates ranked past the top-k cut:")
        st.dataframe(pd.DataFrame([{"rank": c["rank"], "chunk": c["chunk_id"], "doc": c["doc_id"],
                                    "relevant": c["relevant"]} for c in rest]), hide_index=True, height=180)


def calibrated(rows: list[dict]) -> None:
    """The PPI-calibrated table with everything `ragdoctor summary` prints beside it: lambda, AUROC and accuracy with
    their 95% CIs, and the notes (why there is no estimate, samples left out because their labellers disagree)."""
    table = rd.calibrated_table(rows)
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        **{c: st.column_config.NumberColumn(c, format="%.3f") for c in table.columns
           if c not in ("metric", "judge", "labels", "note")},
        "note": st.column_config.TextColumn("note", width="large")})


def run_header(run: rd.Run, title: str) -> None:
    st.title(title)
    n = len(run.samples)
    st.caption(f"run **{md(run.name)}** · {code(run.path)} · {n:,} samples")


def is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


LAB_CHECKS = {  # what a field of a lab row must be (None allowed where the lab writes it for "unmeasured")
    "text": lambda v: isinstance(v, str),
    "number": is_number,
    "number or null": lambda v: v is None or is_number(v),
    "object or null": lambda v: v is None or isinstance(v, dict),
}


def lab_rows(lab: dict, fields: dict[str, str]) -> pd.DataFrame:
    """The lab's rows as a frame, each row checked to have ``fields`` (name -> a LAB_CHECKS kind): ValueError naming
    the first row and field that does not (a file of another lab, an older version, a hand edit)."""
    rows = lab["rows"]
    if not rows:
        raise ValueError("no rows")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"rows[{i}] is not an object")
        for name, kind in fields.items():
            if name not in row:
                raise ValueError(f"rows[{i}] has no '{name}'")
            if not LAB_CHECKS[kind](row[name]):
                raise ValueError(f"rows[{i}] '{name}' is not a {kind}")
    return pd.DataFrame(rows)


def lab_file(file_name: str, command: str, key: str, explain: str) -> dict:
    """The lab JSON a lab page shows: the path typed in, by default the open run folder's ``file_name`` when there is
    one. Stops the page with how to make it when there is none, or with what is wrong when it cannot be read."""
    run_path = st.session_state.get(state.RUN_KEY)
    beside = Path(run_path) / file_name if run_path else None
    default = str(beside) if beside and beside.is_file() else file_name
    typed = st.text_input(f"Lab JSON (written by `{command} --out FILE.json`)", value=default, key=key)
    path = Path(typed).expanduser()
    if not path.is_file():
        st.info(f"No lab file at {md(path)}. Make one with {code(f'{command} --out {path}')}.")
        st.markdown(explain)
        st.stop()
    try:
        lab = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(lab, dict) or not isinstance(lab.get("rows"), list):
            raise ValueError("no 'rows' list")
    except (ValueError, OSError) as exc:
        st.error(md(f"{path}: not a lab file ({type(exc).__name__}: {exc})"))
        st.stop()
    return lab
