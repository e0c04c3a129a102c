"""Playground: ask one question against an index, see the trace, its evaluation by the fast judges (lexical +
embedding, plus the labels judge when relevant documents are given) and its diagnosis, live."""
from __future__ import annotations

import atexit
from contextlib import ExitStack

import streamlit as st

from ragdoctor.dashboard import widgets
from diagnostics import run_data as rd

st.title("Playground")
st.caption("Ask a question against an index with the bundled model (or any OpenAI-compatible server). The answer is "
           "judged by the fast judges and diagnosed like any run sample.")


@st.cache_resource(max_entries=2, show_spinner=False)
def pipeline(cfg_json: str):
    """One pipeline per configuration, kept across reruns and sessions; the bundled model server (when used) stops
    when the dashboard exits."""
    from rag.config import PipelineConfig
    from rag.session import open_pipeline

    cfg = PipelineConfig.model_validate_json(cfg_json)
    stack = ExitStack()
    pipe = stack.enter_context(open_pipeline(cfg))
    atexit.register(stack.close)
    return pipe


@st.cache_resource(max_entries=2, show_spinner=False)
def fast_judges(cfg_json: str, _embedder) -> list:
    from eval.judges.registry import JudgeOptions, make_judges

    return make_judges(["lexical", "embedding"], JudgeOptions(embedder=_embedder))


def ask(cfg_json: str, question: str, reference: str | None, relevant: list[str] | None) -> dict:
    from corpora.records import Sample
    from diagnostics.classify import classify
    from eval.dataset import from_trace
    from eval.judges.registry import JudgeOptions, make_judge
    from eval.metrics import LLM_METRICS
    from eval.runner import judge_batch

    with st.status("Working ...", expanded=True) as status:
        status.write("Opening the pipeline (first use loads the index and starts the model: up to a minute) ...")
        pipe = pipeline(cfg_json)
        status.write("Retrieving and generating ...")
        trace = pipe.answer(question, Sample(id="playground", question=question, reference=reference,
                                             relevant_doc_ids=relevant))
        status.write("Judging (lexical + embedding) ...")
        judges = list(fast_judges(cfg_json, pipe.embedder))
        metrics = list(LLM_METRICS)
        if relevant:
            judges.append(make_judge("labels", JudgeOptions()))
            metrics += ["recall@5", "mrr@10"]
        judgement = judge_batch([from_trace(trace)], metrics, judges)[0]
        status.write("Diagnosing ...")
        diagnosis = classify(judgement)
        status.update(label=f"Done: {diagnosis.category.replace('_', ' ')}", state="complete", expanded=False)
    return {"detail": rd.sample_detail(judgement, trace, diagnosis), "trace": trace.model_dump(mode="json")}


from rag.config import load_config  # noqa: E402

try:
    defaults = load_config()
except Exception as exc:  # a malformed RAGDOCTOR_* variable: show it, start from the built-in defaults
    st.warning(f"Ignoring the environment's pipeline settings: {exc}")
    from rag.config import PipelineConfig

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
        base_url = p6.text_input("OpenAI-compatible URL (empty: bundled model)", defaults.generation.base_url or "",
                                 key="pg_base_url")
        model = st.text_input("Model", defaults.generation.model, key="pg_model")
    submitted = st.form_submit_button("Ask", type="primary")

if submitted:
    if not question.strip():
        st.warning("Type a question first.")
    else:
        cfg = defaults.model_copy(deep=True)
        cfg.corpus, cfg.index_dir = corpus, index_dir
        cfg.embedding.model, cfg.retrieval.mode, cfg.retrieval.top_k = embedder, mode, int(top_k)
        cfg.generation.base_url, cfg.generation.model = (base_url.strip() or None), model
        ids = [x.strip() for x in relevant.split(",") if x.strip()] or None
        try:
            st.session_state["pg_result"] = ask(cfg.model_dump_json(), question.strip(), reference.strip() or None, ids)
        except Exception as exc:  # the pipeline's own errors are one line (index mismatch, model missing, ...)
            st.session_state.pop("pg_result", None)
            st.error(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")

result = st.session_state.get("pg_result")
if result:
    widgets.drilldown(result["detail"], key="playground")
    with st.expander("The trace (JSON)"):
        st.json(result["trace"], expanded=1)
