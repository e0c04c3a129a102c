"""Regression tests for issue 12's findings that need more than one command line (see test_bad_inputs.py for the
table of bad inputs per verb): stale results on resume, non-Latin text, empty labels, the index manifest's checks,
and the one place numeric options are validated."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from corpora.errors import InputError
from corpora.records import Chunk, Document, Question, Trace
from corpora.run_folder import RunFolder
from eval.answerability import unanswerable
from eval.judges.registry import JudgeOptions, make_judge
from rag.config import ChunkingConfig, IndexConfig
from rag.embeddings import FakeEmbedder
from rag.fake_server import FakeOpenAIServer
from rag.manifest import IndexMismatch
from rag.store import build_index, load_index
from ragdoctor.cli import build_parser, main
from ragdoctor.options import RULES, numeric_actions

CTX = [{"id": "kv#0", "doc_id": "kv", "text": "The KV cache stores keys and values for every token."}]
ROW = {"id": "a", "question": "What does the KV cache store?", "contexts": CTX, "reference": "Keys and values.",
       "answer": "The KV cache stores keys and values for every token.", "relevant_ids": ["kv"]}


def write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def lexical_groundedness(run_dir, sid="a"):
    j = next(j for j in RunFolder(run_dir).judgements() if j.sample_id == sid)
    return j.get("groundedness", "lexical").value


# --- item 2: a changed record is judged again, the old line superseded -------------------------------------------
def test_an_edited_record_is_judged_again_and_supersedes_its_old_verdict(tmp_path, capsys):
    src = write(tmp_path / "in.jsonl", [ROW, {**ROW, "id": "b"}])
    out = ["--judges", "lexical", "--out", str(tmp_path / "run")]
    assert main(["eval", str(src), *out]) == 0
    assert lexical_groundedness(tmp_path / "run") == 1.0
    write(src, [{**ROW, "answer": "The KV cache stores optimizer momentum on the CPU."}, {**ROW, "id": "b"}])
    assert main(["eval", str(src), *out]) == 0
    assert "(1 judged, 1 resumed" in capsys.readouterr().out
    assert lexical_groundedness(tmp_path / "run") < 1.0  # the new verdict, not the stale one
    log = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert len(log) == 3  # the old line stays (append-only) but is superseded
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert next(m for m in summary["metrics"] if m["metric"] == "groundedness")["n"] == 2
    write(src, [{**ROW, "id": "b"}])  # a sample that left the input is not part of the run any more
    assert main(["eval", str(src), *out]) == 0
    assert [j.sample_id for j in RunFolder(tmp_path / "run").judgements()] == ["b"]


def test_a_new_pipeline_config_followed_by_eval_judges_the_new_answers(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "corpus.jsonl", [{"id": f"d{i}", "text": f"Note {i}: the KV cache grows by {i} MB per token."}
                                      for i in range(6)])
    write(tmp_path / "q.jsonl", [{"id": f"q{i}", "question": f"How fast does the KV cache grow in note {i}?",
                                  "relevant_doc_ids": [f"d{i}"]} for i in range(4)])
    with FakeOpenAIServer() as srv:
        pipe = ["--embedder", "fake", "--index-dir", "idx", "--corpus", "corpus.jsonl", "--base-url", srv.base_url,
                "--questions", "q.jsonl", "--name", "r"]
        assert main(["run", *pipe, "--top-k", "1"]) == 0
        assert main(["eval", "runs/r/traces.jsonl", "--judges", "lexical,labels"]) == 0
        first = {j.sample_id: j.sample_hash for j in RunFolder(tmp_path / "runs" / "r").judgements()}
        assert main(["run", *pipe, "--top-k", "3"]) == 0  # a new config: every question answered again
        capsys.readouterr()
        assert main(["eval", "runs/r/traces.jsonl", "--judges", "lexical,labels"]) == 0
    assert "(4 judged, 0 resumed" in capsys.readouterr().out
    second = RunFolder(tmp_path / "runs" / "r").judgements()
    assert all(len(j.trace.chunks) == 3 and j.sample_hash != first[j.sample_id] for j in second)


def test_traces_from_two_configurations_are_warned_about_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "corpus.jsonl", [{"id": f"d{i}", "text": f"Note {i} about caches and tokens."} for i in range(4)])
    write(tmp_path / "q.jsonl", [{"id": f"q{i}", "question": f"What is in note {i}?"} for i in range(3)])
    with FakeOpenAIServer() as srv:
        pipe = ["--embedder", "fake", "--index-dir", "idx", "--corpus", "corpus.jsonl", "--base-url", srv.base_url,
                "--questions", "q.jsonl", "--name", "r"]
        assert main(["run", *pipe]) == 0
        assert main(["run", *pipe, "--limit", "1", "--top-k", "2"]) == 0
        capsys.readouterr()
        assert main(["eval", "runs/r/traces.jsonl", "--judges", "lexical"]) == 0
    err = capsys.readouterr().err
    assert err.count("traces from 2 pipeline configurations") == 1
    assert "pipeline configurations" in (tmp_path / "runs" / "r" / "warnings.txt").read_text()


# --- item 3: non-Latin text ----------------------------------------------------------------------------------------
def sample(answer: str, context: str, question: str = "What?") -> Trace:
    return Trace(sample_id="s", question=question, answer=answer, contexts=[Chunk(chunk_id="c", text=context, rank=1)])


@pytest.mark.parametrize("text", ["القاهرة هي عاصمة مصر.", "东京是日本的首都。", "กรุงเทพเป็นเมืองหลวงของไทย",
                                  "नई दिल्ली भारत की राजधानी है।", "Столица Египта — Каир."])
def test_word_for_word_answers_in_any_script_are_grounded_for_the_lexical_judge(text):
    r = make_judge("lexical", JudgeOptions()).judge("groundedness", [sample(text, "Intro. " + text)])[0]
    assert r.status == "ok" and r.value == 1.0


@pytest.mark.parametrize("name", ["embedding", "nli"])
@pytest.mark.parametrize("text", ["القاهرة هي عاصمة مصر.", "东京是日本的首都。", "🚀👍 ✅ 🎉"])
def test_the_bundled_english_judges_leave_text_they_cannot_read_unmeasured(name, text):
    judge = make_judge(name, JudgeOptions())  # the model is never loaded for these samples
    for metric in ("groundedness", "answer_relevance"):
        asked = text if any(c.isalnum() for c in text) else "What is it?"  # a question without words is no record
        r = judge.judge(metric, [sample(text, text, question=asked)])[0]
        assert r.status == "unmeasured", r  # emoji alone are no claims (the rules say so first)
        assert "reads Latin-script text" in r.reason or "no words to check" in r.reason, r


def test_a_model_with_the_bundled_vocabulary_reads_latin_and_another_is_checked_through_its_own(tmp_path):
    """A judge folder made from the bundled models (a `judge refit` or `judge combine` output, its tokenizer in
    support/) or a copy of MiniLM reads Latin-script text like the shipped judge: Cyrillic, which MiniLM's vocabulary
    spells without unknown tokens, is unmeasured too. A model of another vocabulary is checked through its own."""
    import json
    import shutil

    from eval.judges.scripts import reader_for
    from rag.models import minilm_path

    judge = make_judge("nli", JudgeOptions(nli_model=str(minilm_path())))
    for text in ("กรุงเทพเป็นเมืองหลวงของไทย", "Столица Египта — Каир."):
        r = judge.judge("groundedness", [sample(text, text)])[0]
        assert r.status == "unmeasured" and "reads Latin-script text" in r.reason, r
    folder = tmp_path / "judge" / "support"
    folder.mkdir(parents=True)
    shutil.copy(minilm_path() / "tokenizer.json", folder / "tokenizer.json")
    assert "Cyrillic" in reader_for(folder.parent, "refit", latin_only=False)(["Столица Египта — Каир."])
    other = json.loads((minilm_path() / "tokenizer.json").read_text(encoding="utf-8"))
    other["model"]["vocab"] = {k: v for k, v in other["model"]["vocab"].items() if k.isascii()}  # no Thai pieces
    (tmp_path / "custom").mkdir()
    (tmp_path / "custom" / "tokenizer.json").write_text(json.dumps(other), encoding="utf-8")
    why = reader_for(tmp_path / "custom", "custom", latin_only=False)(["กรุงเทพเป็นเมืองหลวงของไทย"])
    assert why is not None and "unknown to the judge's model" in why


# --- item 4 and 5: labels and missing inputs ---------------------------------------------------------------------
@pytest.mark.parametrize("fields, expected", [
    ({"relevant_doc_ids": [], "reference": "Keys and values."}, False),
    ({"relevant_doc_ids": []}, None),
    ({"relevant_doc_ids": [], "metadata": {"kind": "unanswerable"}}, True),
    ({"relevant_doc_ids": ["d"], "metadata": {"answerable": False}}, True),
    ({"reference": "The provided documents do not contain the answer."}, True),
    ({"relevant_doc_ids": ["d"]}, False),
    ({}, None),
])
def test_an_empty_relevant_ids_list_means_no_labels_not_unanswerable(fields, expected):
    assert unanswerable(Trace(sample_id="s", question="q?", **fields)) is expected


@pytest.mark.parametrize("labels, metadata, expected", [([], {}, None), ([], {"kind": "unanswerable"}, False),
                                                        (["d"], {}, True), (["d"], {"answerable": False}, False),
                                                        (None, {}, None)])
def test_a_question_is_unanswerable_only_when_it_says_so(labels, metadata, expected):
    assert Question(id="s", question="q?", relevant_doc_ids=labels, metadata=metadata).answerable is expected


def test_a_library_sample_without_contexts_is_unmeasured_not_zero():
    s = Trace(sample_id="s", question="What is it?", answer="It is a thing.", reference="A thing.")
    for name, metric in [("lexical", "groundedness"), ("lexical", "context_recall"), ("labels", "recall@5")]:
        r = make_judge(name, JudgeOptions()).judge(metric, [s.model_copy(update={"relevant_doc_ids": ["d"]})])[0]
        assert r.status == "unmeasured" and r.reason == "no contexts in the input record", (metric, r)


# --- item 1 and 8: the index ---------------------------------------------------------------------------------------
DOCS = [Document(id=f"d{i}", text=f"Note {i} about kv cache and marker{i}.") for i in range(6)]
CH = ChunkingConfig(chunk_size=64, chunk_overlap=8)


def test_a_folder_without_an_index_manifest_is_never_replaced(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match="holds no ragdoctor index manifest"):
        build_index(DOCS, tmp_path / "mine", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "years of work"
    (tmp_path / "empty").mkdir()
    build_index(DOCS, tmp_path / "empty", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())  # empty: fine
    build_index(DOCS[:3], tmp_path / "empty", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())  # ours: replaced
    assert load_index(tmp_path / "empty", FakeEmbedder()).manifest.n_documents == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary sibling left


def test_a_foreign_index_file_with_a_matching_checksum_is_still_caught_by_the_vector_count(tmp_path):
    import faiss
    import numpy as np

    from rag.manifest import file_entries

    build_index(DOCS, tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    index = faiss.IndexFlatIP(256)
    index.add(np.eye(256, dtype="float32")[:2])
    faiss.write_index(index, str(tmp_path / "idx" / "dense.faiss"))
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    manifest["files"] = {k: v.model_dump() for k, v in file_entries(tmp_path / "idx").items()}
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatch, match=r"inconsistent \(vectors in dense.faiss 2, manifest n_vectors 6.*rebuild"):
        load_index(tmp_path / "idx", FakeEmbedder())


def test_an_index_from_an_older_ragdoctor_is_rebuilt_not_trusted(tmp_path):
    from rag.store import ensure_index

    build_index(DOCS, tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    for key in ("files", "n_vectors"):
        manifest.pop(key)
    (tmp_path / "idx" / "manifest.json").write_text(json.dumps({**manifest, "version": 1}))
    with pytest.raises(InputError, match="manifest version 1.*rebuild the index"):
        load_index(tmp_path / "idx", FakeEmbedder())
    _, built = ensure_index(DOCS, tmp_path / "idx", FakeEmbedder(), chunking=CH, index_cfg=IndexConfig())
    assert built and load_index(tmp_path / "idx", FakeEmbedder()).manifest.version == 2
    shutil.rmtree(tmp_path / "idx")


# --- item 10: numeric options, in one place ------------------------------------------------------------------------
def test_every_numeric_option_of_every_command_is_range_checked():
    unchecked = [(p.prog, a.dest) for p, a in numeric_actions(build_parser()) if a.type in (int, float)]
    assert unchecked == []
    missing = sorted({a.dest for _, a in numeric_actions(build_parser())} - set(RULES))
    assert missing == [], f"add a rule for {missing} to ragdoctor/options.py"


@pytest.mark.parametrize("argv", [["eval", "x", "--batch-size", "1e3"], ["gate", "r", "--max-unmeasured", "inf"],
                                  ["dashboard", "--port", "70000"], ["dashboard", "--timeout", "-1"],
                                  ["judge", "train", "--lr", "nan"], ["run", "--top-k", "2.5"]])
def test_out_of_range_numbers_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("ragdoctor: error: ") and err.count("\n") == 1


def test_run_resume_reuses_a_trace_only_for_the_same_question_record(tmp_path):
    from corpora.jsonl import append_json_line
    from rag.run_questions import run_questions

    out = tmp_path / "traces.jsonl"
    q = [Question(id="q1", question="What is LoRA?", reference="Adapters."), Question(id="q2", question="And KV?")]
    legacy = Trace(sample_id="q1", question="What is LoRA?", reference="Adapters.", config_hash="c", answer="old")
    append_json_line(out, legacy)  # written before traces carried input_hash: reused when the record is the same
    asked: list[str] = []

    def answer(s):
        asked.append(s.id)
        return Trace(sample_id=s.id, question=s.question, reference=s.reference, config_hash="c", answer="new")

    assert run_questions(answer, q, out, config_hash="c", progress=False, salt="corpus-1").resumed == 1
    assert asked == ["q2"]
    assert run_questions(answer, q, out, config_hash="c", progress=False, salt="corpus-1").new == 0
    edited = [q[0].model_copy(update={"reference": "Low-rank adapters."}), q[1]]
    assert run_questions(answer, edited, out, config_hash="c", progress=False, salt="corpus-1").new == 1
    assert run_questions(answer, edited, out, config_hash="c", progress=False, salt="corpus-2").new == 2  # new corpus
    assert asked == ["q2", "q1", "q1", "q2"]


def test_the_gate_refuses_a_summary_left_by_an_earlier_evaluation(tmp_path, capsys):
    from eval.judges.lexical import LexicalScorer
    from eval.judges.scorer import ScorerJudge
    from eval.judging import evaluate

    src = write(tmp_path / "in.jsonl", [ROW, {**ROW, "id": "b"}])
    assert main(["eval", str(src), "--judges", "lexical", "--out", str(tmp_path / "run")]) == 0
    assert main(["gate", str(tmp_path / "run"), "--min", "groundedness=0.5", "--pyproject", os.devnull]) == 0

    class Killed(ScorerJudge):  # the next evaluation is killed after its first sample
        def judge(self, metric, samples):
            if samples[0].sample_id == "b":
                raise KeyboardInterrupt
            return super().judge(metric, samples)

    ctx = [Chunk(chunk_id="c", text="The KV cache stores keys and values.", rank=1)]
    edited = [Trace(sample_id="a", question=ROW["question"], answer="Something else entirely.", contexts=ctx),
              Trace(sample_id="b", question=ROW["question"], answer="Else is here.", contexts=ctx)]
    with pytest.raises(KeyboardInterrupt):
        evaluate(edited, metrics=["groundedness"], judges=[Killed(LexicalScorer())], run=tmp_path / "run",
                 batch_size=1, progress=False)
    capsys.readouterr()
    assert main(["gate", str(tmp_path / "run"), "--min", "groundedness=0.5", "--pyproject", os.devnull]) == 2
    assert "is from an earlier evaluation" in capsys.readouterr().err
    from ragdoctor.dashboard.data import load_run

    run = load_run(tmp_path / "run")  # the dashboard shows the current (partial) evaluation, not the stale summary
    assert run.summary["n_samples"] == 1 and set(run.results["sample_id"]) == {"a"}
    assert run.results.loc[run.results["metric"] == "groundedness", "value"].tolist() == [0.0]


@pytest.mark.parametrize("damage", [b'{"eval_hash": "e1", "samp', b"\xff\xfe{}", b"[1, 2]"])
def test_a_damaged_config_json_makes_the_gate_refuse_in_one_line_and_eval_repairs_it(tmp_path, capsys, damage):
    src = write(tmp_path / "in.jsonl", [ROW, {**ROW, "id": "b"}])
    run = tmp_path / "run"
    assert main(["eval", str(src), "--judges", "lexical", "--out", str(run)]) == 0
    results = (run / "results.jsonl").read_bytes()
    (run / "config.json").write_bytes(damage)
    capsys.readouterr()
    assert main(["gate", str(run), "--min", "groundedness=0.5", "--pyproject", os.devnull]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "config.json" in err and "Traceback" not in err
    assert "cannot tell which judgements are current" in err
    assert main(["eval", str(src), "--judges", "lexical", "--out", str(run)]) == 0  # rewrites it, reusing the lines
    assert (run / "results.jsonl").read_bytes() == results
    assert main(["gate", str(run), "--min", "groundedness=0.5", "--pyproject", os.devnull]) == 0
