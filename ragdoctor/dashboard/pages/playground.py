"""Playground: ask one question against an index, see the trace, its evaluation by the fast judges (lexical +
embedding, plus the labels judge when relevant documents are given) and its diagnosis, live."""
from __future__ import annotations

import atexit
from contextlib import ExitStack

import streamlit as st
from pydantic import ValidationError

from corpora.records import Question
from eval.judges.labels import LabelsJudge
from eval.judges.registry import JudgeOptions, make_judges
from eval.metrics import model_metrics
from rag.config import PipelineConfig, load_config
from ragdoctor import flow
from ragdoctor.dashboard import data as rd
from ragdoctor.dashboard import widgets
from ragdoctor.dashboard.text import code, md

st.title("Playground")
st.caption("Ask a question against an index with the bundled model (or any OpenAI-compatible server). The answer is "
           "judged by the fast judges and diagnosed like any run sample.")


@st.cache_resource(max_entries=2, show_spinner=False)
def pipeline(cfg_json: str):
    """One pipeline per configuration, kept across reruns and sessions; the bundled model server (when used) stops
    when the dashboard exits."""
    stack = ExitStack()
    pipe = stack.enter_context(flow.pipeline(PipelineConfig.model_validate_json(cfg_json)))
    atexit.register(stack.close)
    return pipe


@st.cache_resource(max_entries=2, show_spinner=False)
def fast_judges(cfg_json: str, _embedder) -> list:
    return make_judges(["lexical", "embedding"], JudgeOptions(embedder=_embedder))


def ask(cfg_json: str, question: str, reference: str | None, relevant: list[str] | None) -> dict:
    with st.status("Working ...", expanded=True) as status:
        status.write("Opening the pipeline (first use loads the index and starts the model: up to a minute) ...")
        pipe = pipeline(cfg_json)
        status.write("Retrieving and generating ...")
        trace = pipe.answer(question, Question(id="playground", question=question, reference=reference,
                                               relevant_doc_ids=relevant))
        status.write("Judging (lexical + embedding) and diagnosing ...")
        judges = list(fast_judges(cfg_json, pipe.embedder))
        metrics = [m.name for m in model_metrics(default_only=True)]
        if relevant:
            judges.append(LabelsJudge())
            metrics += ["recall@5", "mrr@10"]
        judged = flow.judge_one(trace, judges, metrics)
        status.update(label=f"Done: {judged.diagnosis.category.replace('_', ' ')}", state="complete", expanded=False)
    return {"detail": rd.sample_detail(judged.judgement, trace, judged.diagnosis),
            "trace": trace.model_dump(mode="json")}


try:
    defaults = load_config()
except Exception as exc:  # a malformed RAGDOCTOR_* variable: show it, start from the built-in defaults
    st.warning(f"Ignoring the environment's pipeline settings: {md(exc)}")
    defaults = PipelineConfig()

with st.form("ask"):
    question = st.text_area("Question", key="pg_question", placeholder="What does ZeRO stage 2 partition?")
    c1, c2 = st.columns(2)
    reference = c1.text_input("Reference answer (optional: enables correctness)", key="pg_reference")
    relevant = c2.text_input("Relevant document ids (optional, comma-separated: enables recall)", key="pg_relevant")
    with st.expander("Pipeline"):
        p1, p2, p3 = st.columns(3)
        corpus = p1.text_input("Corpus", defaults.corpus, key="pg_corpus")
        index_dir = p2.text_input("Index folder", defaults.index_dir, key="pg_index")
        embedder = p3.text_input("Embedder", defaults.embedding.model, key="pg_embedder",
                                 help="'minilm' (bundled), 'fake', or a sentence-transformers folder")
        p4, p5, p6 = st.columns(3)
        modes = ["hybrid", "dense", "bm25"]
        mode = p4.selectbox("Retrieval", modes, index=modes.index(defaults.retrieval.mode), key="pg_mode")
        top_k = p5.number_input("top-k", 1, 50, defaults.retrieval.top_k, key="pg_topk")
        base_url = p6.text_input("OpenAI-compatible URL(s), comma-separated (empty: bundled model)",
                                 ", ".join(defaults.generation.urls()), key="pg_base_url")
        p7, p8 = st.columns([2, 1])
        model = p7.text_input("Model", defaults.generation.model, key="pg_model")
        budget = p8.number_input("Context budget, tokens (0: the top-k chunks)", 0, 32768,
                                 defaults.retrieval.context_tokens or 0, step=64, key="pg_budget",
                                 help="pack the ranked chunks that fit into this many tokens instead of a fixed top-k "
                                      "(the first that does not fit is cut at a sentence); at least 32")
    submitted = st.form_submit_button("Ask", type="primary")

if submitted:
    if not question.strip():
        st.warning("Type a question first.")
    else:
        cfg = defaults.model_copy(deep=True)
        cfg.corpus, cfg.index_dir = corpus, index_dir
        cfg.embedding.model, cfg.retrieval.top_k = embedder, int(top_k)
        cfg.retrieval.mode = mode  # type: ignore[assignment]  # one of the select box's modes
        urls = [u.strip() for u in base_url.split(",") if u.strip()]
        cfg.generation.base_url = None if not urls else urls[0] if len(urls) == 1 else urls
        cfg.generation.model = model
        cfg.retrieval.context_tokens = int(budget) or None
        ids = [x.strip() for x in relevant.split(",") if x.strip()] or None
        try:
            cfg = PipelineConfig.model_validate(cfg.model_dump())  # the settings' own checks (e.g. the budget's bounds)
            st.session_state["pg_result"] = ask(cfg.model_dump_json(), question.strip(), reference.strip() or None, ids)
        except ValidationError as exc:  # a setting out of bounds: name it, one line
            st.session_state.pop("pg_result", None)
            err = exc.errors()[0]
            st.error(f"{'.'.join(map(str, err['loc'])) or 'settings'}: {md(err['msg'])}")
        except Exception as exc:  # the pipeline's own errors are one line (index mismatch, model missing, ...)
            st.session_state.pop("pg_result", None)
            st.error(md(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))

result = st.session_state.get("pg_result")
if result:
    packing = result["trace"].get("metadata", {}).get("context_budget")
    if packing:
        cut = f"; {code(packing['cut'])} cut at a sentence" if packing.get("cut") else ""
        st.caption(f"Context budget: {packing['packed']} chunk(s), {packing['tokens']} of {packing['budget']} tokens "
                   f"({md(packing['tokenizer'])}){cut}.")
    widgets.drilldown(result["detail"], key="playground")
    with st.expander("The trace (JSON)"):
        st.json(result["trace"], expanded=1)
