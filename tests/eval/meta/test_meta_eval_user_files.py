"""`ragdoctor meta-eval --dataset jsonl --path FILE` on users' own labelled files as they really are: labels written
as words or booleans, a Likert scale, one class, a handful of rows, groups, files that are CSV, gzipped, with a BOM,
CRLF lines or a torn last line. Exit 0 or 2 (never a traceback), a bad row named by file:line and field and skipped,
and what cannot be measured said with its reason, never a silent 0, 0.5 or NaN (results.json is strict JSON)."""
import gzip
import json
import math

import pytest

from eval.judges.base import Support
from eval.judges.registry import JudgeOptions
from eval.judges.lexical_judge import NO_CLAIM_WORDS, LexicalJudge
from eval.judges.scorer import ScorerJudge
from eval.meta import meta_eval
from eval.meta.datasets import LabelledItem, Task
from eval.meta.meta_eval import MetaEvalOptions, build_judge, run_meta_eval
from eval.meta.scoring import score_task
from ragdoctor.cli import main

EVIDENCE = "The Eiffel Tower is in Paris. It was completed in 1889 and is 330 metres tall."
TEXTS = {1: ["The Eiffel Tower is in Paris.", "It was completed in 1889.", "The tower is 330 metres tall."],
         0: ["The Eiffel Tower is in Berlin.", "Bananas are yellow fruit.", "The moon is made of cheese."]}


def rows(n: int = 12, label=lambda y: y, **extra) -> list[dict]:
    return [{"evidence": EVIDENCE, "text": TEXTS[i % 2][(i // 2) % 3], "label": label(i % 2),
             **{k: v(i) if callable(v) else v for k, v in extra.items()}} for i in range(n)]


def write(tmp_path, name: str, records: list[dict], *, end: str = "\n", head: str = "", tail: str = "") -> str:
    text = head + "".join(json.dumps(r) + end for r in records) + tail
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_bytes(text.encode("utf-8"))
    return str(path)


def strict_json(text: str):
    def refuse(constant: str):
        raise AssertionError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def run_cli(tmp_path, path: str, capsys, *extra: str) -> tuple[int, str, str, dict | None]:
    out = tmp_path / "out"
    code = main(["meta-eval", "--dataset", "jsonl", "--path", path, "--judge", "lexical", "--resamples", "50",
                 "--out", str(out), *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    report = strict_json((out / "results.json").read_text()) if (out / "results.json").exists() else None
    if report is not None:  # never a NaN in results.json or in the printed table
        assert "nan" not in captured.out.replace(str(tmp_path), "").lower()
        for line in (out / "scores.jsonl").read_text().splitlines():
            strict_json(line)
    return code, captured.out, captured.err, report


# labels --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("label", [lambda y: "yes" if y else "no", lambda y: "Yes" if y else "No",
                                   lambda y: "true" if y else "false", str, lambda y: bool(y),
                                   lambda y: "supported" if y else "unsupported", lambda y: 5 if y else 2,
                                   lambda y: 1.5 if y else -1])
def test_labels_that_are_no_number_in_0_1_are_refused_with_file_line_and_field(tmp_path, capsys, label):
    """README: a label is a number as written ("1", true are not read as 1), in [0, 1]: a 1-5 Likert scale is out of
    range, not rescaled. Every row bad: exit 2, one line naming the file, the first line and the field."""
    path = write(tmp_path, "l.jsonl", rows(label=label))
    code, _, err, _ = run_cli(tmp_path, path, capsys)
    assert code == 2
    assert f"ragdoctor: error: {path}: no valid records" in err and "first: line 1: field 'label'" in err


def test_a_null_or_nan_label_is_a_bad_line_and_the_rest_is_measured(tmp_path, capsys):
    records = rows(16)
    lines = [json.dumps(r) for r in records]
    lines[3] = lines[3].replace('"label": 1', '"label": NaN')
    lines[5] = lines[5].replace('"label": 1', '"label": null')
    path = tmp_path / "n.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, out, err, report = run_cli(tmp_path, str(path), capsys)
    assert code == 0 and report["results"][0]["n"] == 14
    assert f"{path}:4: malformed JSON: NaN is not a JSON number" in err
    assert f"{path}:6: field 'label'" in err and "2 bad line(s) skipped" in out
    assert (tmp_path / "out" / "input_errors.txt").read_text().count("\n") == 2


def test_float_labels_0_and_1_are_binary_and_grades_give_spearman(tmp_path, capsys):
    code, _, _, report = run_cli(tmp_path, write(tmp_path, "f.jsonl", rows(label=float)), capsys)
    assert code == 0 and report["results"][0]["kind"] == "binary" and report["results"][0]["auroc"] is not None
    graded = write(tmp_path, "g.jsonl", rows(label=lambda y: 0.8 if y else 0.3))
    code, out, _, report = run_cli(tmp_path, graded, capsys)
    (r,) = report["results"]
    assert code == 0 and r["kind"] == "graded" and r["spearman"] is not None and r["auroc"] is None
    assert r["why_none"]["auroc"].startswith("no record labelled exactly 0 or 1") and "AUROC" in out


# one class, few rows, groups ------------------------------------------------------------------------------------
def test_one_class_gives_no_auroc_with_its_reason_and_exit_2(tmp_path, capsys):
    code, out, err, report = run_cli(tmp_path, write(tmp_path, "o.jsonl", rows(label=lambda y: 1)), capsys)
    (r,) = report["results"]
    assert code == 2 and r["auroc"] is None and r["unmeasured"] == "every item has the same label (AUROC needs both "\
                                                                   "classes)"
    assert "nothing could be measured" in err and "every item has the same label" in err
    assert "0.500" not in out


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_file_of_one_to_three_rows_says_what_it_cannot_measure(tmp_path, capsys, n):
    code, out, _, report = run_cli(tmp_path, write(tmp_path, "s.jsonl", rows(n)), capsys)
    (r,) = report["results"]
    assert code == (2 if n == 1 else 0)
    assert r["auroc_ci"] == [None, None] or r["auroc"] is None
    assert "not measured" in out


def test_groups_as_int_or_text_single_row_groups_and_one_group_for_all(tmp_path, capsys):
    by_text = run_cli(tmp_path, write(tmp_path, "a.jsonl", rows(20, group=lambda i: f"{i // 4}")), capsys)[3]
    by_int = run_cli(tmp_path, write(tmp_path, "b.jsonl", rows(20, group=lambda i: i // 4)), capsys)[3]
    assert by_text["results"][0]["n_groups"] == by_int["results"][0]["n_groups"] == 5
    assert by_text["results"][0]["auroc_ci"] == by_int["results"][0]["auroc_ci"]
    single = run_cli(tmp_path, write(tmp_path, "c.jsonl", rows(20, group=lambda i: "solo" if i == 0 else
                                                                  f"g{(i + 1) // 4}")), capsys)
    assert single[0] == 0 and single[3]["results"][0]["n_groups"] == 7  # "solo", g0..g5
    code, out, _, report = run_cli(tmp_path, write(tmp_path, "d.jsonl", rows(20, group="all")), capsys)
    (r,) = report["results"]
    assert code == 0 and r["auroc"] is not None and r["auroc_ci"] == [None, None]
    assert r["why_none"]["auroc_ci"] == "1 group to resample, fewer than 5" and "every record is in one group" in out


def test_duplicate_ids_are_bad_lines_the_first_kept(tmp_path, capsys):
    code, _, err, report = run_cli(tmp_path, write(tmp_path, "i.jsonl", rows(12, id=lambda i: 2 if i == 3 else i)),
                                   capsys)
    assert code == 0 and report["results"][0]["n"] == 11
    assert "i.jsonl:4: field 'id': duplicate record id '2' (first on line 3" in err


# evidence --------------------------------------------------------------------------------------------------------
def test_evidence_blank_in_every_row_is_refused_and_a_list_of_passages_is_read(tmp_path, capsys):
    code, _, err, _ = run_cli(tmp_path, write(tmp_path, "e.jsonl", [{**r, "evidence": ""} for r in rows()]), capsys)
    assert code == 2 and "no valid records" in err and "field 'evidence'" in err
    passages = [{**r, "evidence": EVIDENCE.split(". ")} for r in rows()]
    code, _, _, listed = run_cli(tmp_path, write(tmp_path, "p.jsonl", passages), capsys)
    plain = run_cli(tmp_path, write(tmp_path, "q.jsonl", rows()), capsys)[3]
    assert code == 0 and listed["results"][0]["n"] == 12 and listed["results"][0]["auroc"] == plain["results"][0]["auroc"]


def test_very_long_evidence_and_extra_fields(tmp_path, capsys):
    long = [{**r, "evidence": EVIDENCE + " " + "Lorem ipsum dolor sit amet. " * 3600, "source": "x"} for r in rows()]
    code, _, err, report = run_cli(tmp_path, write(tmp_path, "long.jsonl", long), capsys)
    assert code == 0 and report["results"][0]["n"] == 12
    assert "field(s) 'source' (12 lines) not read by --dataset jsonl" in err


# file shapes -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kw", [("z.jsonl.gz", {}), ("bom.jsonl", {"head": "\ufeff"}),
                                      ("crlf.jsonl", {"end": "\r\n"}), ("blank.jsonl", {"tail": "\n\n"})])
def test_gzip_bom_crlf_and_trailing_blank_lines_read_as_plain_jsonl(tmp_path, capsys, name, kw):
    code, _, err, report = run_cli(tmp_path, write(tmp_path, name, rows(), **kw), capsys)
    assert code == 0 and report["results"][0]["n"] == 12 and "skipped" not in err


def test_a_torn_last_line_is_one_bad_line(tmp_path, capsys):
    path = write(tmp_path, "t.jsonl", rows(), tail='{"evidence": "x", "te')
    code, out, err, report = run_cli(tmp_path, path, capsys)
    assert code == 0 and report["results"][0]["n"] == 12
    assert f"{path}:13: malformed JSON" in err and "1 bad line(s) skipped" in out


def test_csv_a_folder_or_a_missing_file_is_one_line_exit_2(tmp_path, capsys):
    csv = tmp_path / "labels.csv"
    csv.write_text("evidence,text,label\n" + "".join(f'"{EVIDENCE}","{r["text"]}",{r["label"]}\n' for r in rows()))
    for path, said in [(str(csv), "no valid records"), (str(tmp_path), "is a folder, not a file"),
                       (str(tmp_path / "missing.jsonl"), "file not found")]:
        code = main(["meta-eval", "--dataset", "jsonl", "--path", path, "--judge", "lexical", "--out",
                     str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2 and said in err and "Traceback" not in err
        assert [line for line in err.splitlines() if line.startswith("ragdoctor: error:")] == [err.strip()]


def test_out_holding_an_earlier_report_is_replaced_and_a_users_results_json_is_not(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps({"dataset": "jsonl", "results": []}))
    (out / "input_errors.txt").write_text("stale\n")
    code, _, _, report = run_cli(tmp_path, write(tmp_path, "ok.jsonl", rows()), capsys)
    assert code == 0 and report["results"][0]["n"] == 12 and (out / "input_errors.txt").read_text() == ""
    (out / "results.json").write_text('{"mine": 1}')
    code = main(["meta-eval", "--dataset", "jsonl", "--path", str(tmp_path / "ok.jsonl"), "--judge", "lexical",
                 "--out", str(out)])
    assert code == 2 and "is not a meta-eval report" in capsys.readouterr().err
    assert (out / "results.json").read_text() == '{"mine": 1}'


# what the judge cannot measure in eval, it does not measure here -------------------------------------------------
def test_a_claim_without_content_words_is_unmeasured_for_lexical_not_scored_0(tmp_path, capsys):
    """eval's lexical judge leaves "It is what it is." unmeasured (a claim with no content words: its empty overlap
    would be a 0); meta-eval used to score it 0.0 and rank it among the unsupported answers."""
    records = rows(12)
    records[2]["text"] = records[3]["text"] = "It is what it is."
    code, out, _, report = run_cli(tmp_path, write(tmp_path, "w.jsonl", records), capsys)
    (r,) = report["results"]
    assert code == 0 and r["n"] == 10 and r["n_unmeasured"] == 2
    assert r["unmeasured_reasons"] == {NO_CLAIM_WORDS: 2}
    assert f"2 of 12 items unmeasured ({NO_CLAIM_WORDS}): left out" in r["flags"]
    scored = [json.loads(line) for line in (tmp_path / "out" / "scores.jsonl").read_text().splitlines()]
    assert {s["id"] for s in scored}.isdisjoint({"jsonl:3", "jsonl:4"}) and NO_CLAIM_WORDS in out


def test_every_item_without_content_words_is_nothing_measured_with_the_reason(tmp_path, capsys):
    records = [{**r, "text": "It is what it is."} for r in rows()]
    code, _, err, report = run_cli(tmp_path, write(tmp_path, "all.jsonl", records), capsys)
    assert code == 2 and report["results"][0]["unmeasured"] == f"every item unmeasured ({NO_CLAIM_WORDS})"
    assert NO_CLAIM_WORDS in err and "nothing could be measured" in err


class _Echo:
    """A scorer that scores anything 0.9 (as a model does text it cannot read: the MiniLM gives [UNK] pairs ~1.0)."""
    name, family, support_threshold, relevance_threshold = "echo", "test", 0.5, 0.5

    def support(self, pairs):
        return [Support(0.9) for _ in pairs]

    def relevance(self, pairs):
        return [0.9 for _ in pairs]


def _latin_only(texts: list[str]) -> str | None:
    return "not Latin script: not measurable by this judge" if any(not t.isascii() for t in texts) else None


def test_text_the_judges_model_cannot_read_is_unmeasured_as_in_eval(monkeypatch):
    """The embedding and nli judges leave text their model cannot read unmeasured in eval (``unreadable``);
    meta-eval rebuilt the judge without it and scored a Chinese file as if the model read it."""
    monkeypatch.setattr(meta_eval, "make_judge", lambda name, opts: ScorerJudge(_Echo(), unreadable=_latin_only,
                                                                                  config_id="echo:v1"))
    judge, _ = build_judge("echo", JudgeOptions())
    assert judge.unreadable is _latin_only
    task = Task("jsonl", "groundedness", "label", "support", "binary",
                [LabelledItem("a", "埃菲尔铁塔位于巴黎。", "埃菲尔铁塔位于巴黎。", 1.0),
                 LabelledItem("b", "The tower is in Paris.", "The tower is in Paris.", 1.0)])
    scores = score_task(judge, task)
    assert scores.scores == [None, 0.9] and scores.why == {0: "not Latin script: not measurable by this judge"}
    assert judge.scorer.pairs == 1  # the readable item only: the unreadable one never reached the model


def test_lexical_judge_from_the_registry_is_still_a_counting_lexical_scorer():
    judge, config_id = build_judge("lexical", JudgeOptions())
    assert config_id == LexicalJudge().config_id and judge.unreadable is None
    task = Task("jsonl", "groundedness", "label", "support", "binary",
                [LabelledItem("a", EVIDENCE, "Yes.", 1.0), LabelledItem("b", EVIDENCE, "It is.", 0.0)])
    scores = score_task(judge, task)
    assert scores.scores[0] is not None and not math.isnan(scores.scores[0])  # "yes" is a content word
    assert scores.scores[1] is None and scores.why == {1: NO_CLAIM_WORDS}


def test_run_meta_eval_counts_each_reason(tmp_path):
    records = rows(12)
    records[4]["text"] = "It is."
    records[5]["text"] = ""  # blank text: refused as a bad line by the loader, not an unmeasured item
    path = write(tmp_path, "r.jsonl", records)
    report = run_meta_eval("jsonl", path, MetaEvalOptions(judges=["lexical"], n_resamples=50))
    (r,) = report["results"]
    assert r["n_unmeasured"] == 1 and r["unmeasured_reasons"] == {NO_CLAIM_WORDS: 1}
