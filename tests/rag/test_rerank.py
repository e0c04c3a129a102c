"""The rerank stage (rag/reranker.py) in the pipeline on the bundled corpus: real MiniLM first stage, the real relevance
cross-encoder, the fake LLM. What the trace records, that the order is the reranker's, and one-line config errors."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corpora.bundled import bundled_questions
from corpora.errors import InputError
from rag.config import PipelineConfig, load_config
from rag.fake_server import FakeOpenAIServer
from rag.llm import FakeLLM
from rag.reranker import RerankerUnavailable, RerankStage
from rag.session import open_pipeline

pytestmark = pytest.mark.model

DEPTH = 12
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("idx") / "bundled")


def _cfg(index_dir, **retrieval):
    return PipelineConfig.model_validate({"index_dir": index_dir, "retrieval": retrieval})


def test_the_rerank_stage_reorders_the_first_stage_and_the_trace_says_so(index_dir):
    questions = [q for q in bundled_questions() if q.relevant_doc_ids][:8]
    with open_pipeline(_cfg(index_dir, rerank=False), llm=FakeLLM()) as plain:
        first = {q.id: plain.retrieve(q.question) for q in questions}
    cfg = _cfg(index_dir, rerank=True, rerank_depth=DEPTH, rerank_weight=1.0)
    assert cfg.config_hash() != _cfg(index_dir, rerank=False).config_hash()
    with open_pipeline(cfg, llm=FakeLLM()) as pipe:
        reranked = {q.id: pipe.retrieve(q.question) for q in questions}
        trace = pipe.answer(questions[0].question, questions[0])
    moved = 0
    for q in questions:
        before, after = first[q.id], reranked[q.id]
        head = after[:DEPTH]
        assert {c.chunk_id for c in head} == {c.chunk_id for c in before[:DEPTH]}  # the same candidates, reordered
        assert [c.chunk_id for c in after[DEPTH:]] == [c.chunk_id for c in before[DEPTH:len(after)]]  # below: kept
        logits = [c.signals["rerank_score"] for c in head]
        assert logits == sorted(logits, reverse=True) and [c.score for c in head] == logits  # pure rerank: by logit
        assert all(before[int(c.signals["first_stage_rank"]) - 1].chunk_id == c.chunk_id for c in head)
        assert [c.rank for c in after] == list(range(1, len(after) + 1))
        moved += [c.chunk_id for c in head] != [c.chunk_id for c in before[:DEPTH]]
        # the reranker reads the question: a relevant document is at the top for these written-to-the-corpus questions
    assert moved >= len(questions) // 2
    hit_at_1 = sum(reranked[q.id][0].doc_id in q.relevant_doc_ids for q in questions)
    assert hit_at_1 >= len(questions) - 2
    assert {"retrieve", "rerank", "generate", "total"} <= set(trace.latency_ms) and trace.latency_ms["rerank"] > 0
    assert trace.metadata["rerank"] == {"model": "rerank-minilm", "precision": pipe.rerank.reranker.precision}
    assert trace.metadata["rerank"]["precision"] in ("bf16", "int8", "fp32")
    assert [c.rank for c in trace.ranked()] == list(range(1, len(trace.ranked()) + 1))
    assert all("rerank_score" in c.signals for c in trace.contexts)
    assert [c.chunk_id for c in trace.ranked()] == [c.chunk_id for c in reranked[questions[0].id]]


def test_interpolation_keeps_the_first_stage_at_weight_zero(index_dir):
    q = next(q for q in bundled_questions() if q.relevant_doc_ids)
    with open_pipeline(_cfg(index_dir, rerank=False), llm=FakeLLM()) as plain:
        before = [c.chunk_id for c in plain.retrieve(q.question)]
    with open_pipeline(_cfg(index_dir, rerank=True, rerank_depth=DEPTH, rerank_weight=0.0), llm=FakeLLM()) as pipe:
        after = pipe.retrieve(q.question)
    assert [c.chunk_id for c in after] == before and "rerank_score" in after[0].signals


def test_config_errors_are_one_line():
    with pytest.raises(InputError) as err:
        load_config(overrides={"retrieval": {"rerank_weight": 1.5}})
    assert "retrieval.rerank_weight" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(InputError) as err:
        load_config(environ={"RAGDOCTOR_RETRIEVAL__RERANK_DEPTH": "0"})
    assert "retrieval.rerank_depth" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(RerankerUnavailable) as missing:
        RerankStage(load_config(overrides={"retrieval": {"rerank": True, "reranker": "/no/such/folder"}}).retrieval)
    assert "/no/such/folder" in str(missing.value) and "\n" not in str(missing.value)


def test_the_cli_flag_and_a_missing_reranker_is_exit_2_in_one_line(tmp_path):
    env = {**os.environ, "RAGDOCTOR_RETRIEVAL__RERANKER": str(tmp_path / "nope"),
           "PYTHONPATH": os.pathsep.join([os.environ.get("PYTHONPATH", ""), str(ROOT)])}
    with FakeOpenAIServer() as srv:
        proc = subprocess.run([sys.executable, "-m", "ragdoctor.cli", "ask", "What is LoRA?", "--rerank", "--embedder",
                               "fake", "--index-dir", str(tmp_path / "idx"), "--base-url", srv.base_url],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope" in lines[0] and "Traceback" not in proc.stderr


def test_the_config_hash_sees_the_rerank_and_fusion_keys_only_when_they_act():
    def cfg(**retrieval):
        return PipelineConfig.model_validate({"retrieval": {"fusion": "rrf", "rerank": False, **retrieval}})

    base = cfg().config_hash()
    assert cfg(rerank_depth=50, dense_weight=0.7).config_hash() == base  # keys of stages that do not run
    on, deeper = cfg(rerank=True).config_hash(), cfg(rerank=True, rerank_depth=50).config_hash()
    fused = cfg(fusion="zscore").config_hash()
    assert len({base, on, deeper, fused, PipelineConfig().config_hash()}) == 5
    assert PipelineConfig().config_hash() == cfg(fusion="zscore", rerank=True).config_hash()  # today's defaults


def test_both_bundled_rerankers_load_offline_and_put_the_answering_passage_first():
    from rag.config import RetrievalConfig
    from rag.reranker import DEFAULT_RERANKER, MODELS, CrossEncoderReranker

    assert RetrievalConfig().reranker == DEFAULT_RERANKER == "rerank-minilm" and RetrievalConfig().rerank_weight == 0.25
    question = "How many bits per weight does a Q4_K_M quantised model use on average?"
    passages = ["Q4_K_M stores weights in about 4.8 bits per weight on average, mixing 4- and 6-bit blocks.",
                "Quantised models are served with llama.cpp; the server keeps the prompt prefix in its KV cache.",
                "Tensor parallelism splits each weight matrix across the GPUs of one node."]
    for name in MODELS:
        logits = CrossEncoderReranker(name).score(question, passages)
        assert logits.shape == (3,) and int(logits.argmax()) == 0, (name, logits)


def test_the_precision_follows_the_cpu_and_the_environment_and_stays_close_to_fp32(monkeypatch):
    import numpy as np

    from corpora.errors import UsageError
    from rag import precision, reranker
    from rag.reranker import CrossEncoderReranker

    monkeypatch.delenv(reranker.PRECISION_ENV, raising=False)
    monkeypatch.setattr(precision, "native_bf16", lambda: True)
    assert CrossEncoderReranker().precision == "bf16"
    monkeypatch.setattr(precision, "native_bf16", lambda: False)
    assert CrossEncoderReranker().precision == "int8"
    monkeypatch.setenv(reranker.PRECISION_ENV, " FP32 ")
    assert CrossEncoderReranker().precision == "fp32" and CrossEncoderReranker(precision="bf16").precision == "bf16"
    monkeypatch.setenv(reranker.PRECISION_ENV, "fp8")
    with pytest.raises(UsageError, match=r"RAGDOCTOR_RERANK_PRECISION='fp8': expected one of auto, bf16, int8, fp32"):
        CrossEncoderReranker()
    monkeypatch.delenv(reranker.PRECISION_ENV)
    question = "What does the KV cache store?"
    passages = [q.reference or q.question for q in bundled_questions()[:12]] + [
        "The KV cache stores the keys and values of every earlier token so they are not recomputed."]
    models = {p: CrossEncoderReranker(precision=p) for p in ("fp32", "bf16", "int8")}
    logits = {p: m.score(question, passages) for p, m in models.items()}
    assert (models["bf16"].autocast, models["bf16"].quantized) == (True, False)
    assert (models["int8"].autocast, models["int8"].quantized) == (False, True)
    assert (models["fp32"].autocast, models["fp32"].quantized) == (False, False)
    assert np.abs(logits["bf16"] - logits["fp32"]).max() < 0.1  # bf16 matmuls, fp32 accumulation
    assert np.abs(logits["int8"] - logits["fp32"]).max() < 2.5  # int8 activations scaled per batch: further off
    assert all(int(v.argmax()) == len(passages) - 1 for v in logits.values())  # the same passage first in each


def test_a_resumed_run_answers_again_what_was_reranked_in_another_precision(index_dir, tmp_path, monkeypatch):
    """The config hash leaves out the reranker's precision (the machine picks it): a trace reranked in another one
    is answered again, one in the same one is reused, and the precision is known before the model loads."""
    from rag import reranker
    from rag.reranker import CrossEncoderReranker
    from ragdoctor.flow import answer_questions

    lazy = CrossEncoderReranker(precision="int8")
    assert lazy.will_run_in == "int8" and lazy._model is None  # noqa: SLF001 - not loaded to tell
    assert CrossEncoderReranker(precision="int8", device="cuda").will_run_in == "cuda"
    questions = [q for q in bundled_questions() if q.relevant_doc_ids][:3]
    cfg = _cfg(index_dir, rerank=True, rerank_depth=DEPTH)
    traces = tmp_path / "run" / "traces.jsonl"
    runs = []
    for precision in ("fp32", "int8", "int8"):
        monkeypatch.setenv(reranker.PRECISION_ENV, precision)
        result = answer_questions(cfg, traces, questions=questions, llm=FakeLLM(), progress=False)
        runs.append((result.new, result.resumed))
    assert runs == [(3, 0), (3, 0), (0, 3)]
    assert {t.metadata["rerank"]["precision"] for t in result.traces} == {"int8"}


def test_a_reranker_folder_retrained_in_place_is_another_model(index_dir, tmp_path, monkeypatch):
    """A folder of the user's is named by its files' digest beside its path: a resume answers again what the old
    weights reranked, and the bench's logit cache keys on the model, its files and the precision it runs in."""
    import shutil

    from bench.retrieval import RerankCache
    from rag import reranker
    from rag.reranker import CrossEncoderReranker
    from ragdoctor.flow import answer_questions

    folder = shutil.copytree(reranker.model_dir("rerank-minilm"), tmp_path / "my-reranker")
    monkeypatch.setenv(reranker.PRECISION_ENV, "int8")
    questions = [q for q in bundled_questions() if q.relevant_doc_ids][:2]
    cfg = _cfg(index_dir, rerank=True, rerank_depth=DEPTH, reranker=str(folder))
    traces = tmp_path / "run" / "traces.jsonl"
    runs = [answer_questions(cfg, traces, questions=questions, llm=FakeLLM(), progress=False)]
    runs.append(answer_questions(cfg, traces, questions=questions, llm=FakeLLM(), progress=False))
    (folder / "config.json").write_text((folder / "config.json").read_text() + "\n")  # "retrained": other files
    runs.append(answer_questions(cfg, traces, questions=questions, llm=FakeLLM(), progress=False))
    assert [(r.new, r.resumed) for r in runs] == [(2, 0), (0, 2), (2, 0)]
    assert all(t.metadata["rerank"]["model_id"].endswith(reranker.folder_digest(folder)) for t in runs[-1].traces)
    bundled = CrossEncoderReranker(precision="int8")
    assert bundled.model_id == "rerank-minilm"  # the bundled one keeps its name: its traces are reused as before
    keys = {RerankCache.key(CrossEncoderReranker(name, precision=p), "passage", "question?")
            for name in ("rerank-minilm", str(folder)) for p in ("bf16", "int8")}
    assert len(keys) == 4
