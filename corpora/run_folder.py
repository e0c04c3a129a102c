"""A run folder and every file in it, read and written here and nowhere else.

    traces.jsonl      `ragdoctor run`: one Trace per line, appended as each question is answered
    results.jsonl     `ragdoctor eval`: one Judgement per line, appended as each batch is judged
    config.json       the evaluation's configuration, its current samples with their content hashes, the run key
    results.parquet   the long results table (sample x metric x judge), rewritten when an evaluation finishes
    summary.json      means with bootstrap 95% CIs, unmeasured counts and reasons, the run key
    diagnoses.jsonl   `ragdoctor diagnose`: one Diagnosis per line; diagnosis.json: the run's report
    run_summary.json  `ragdoctor run`: outcomes, retrieval, latency per stage
    input_errors.txt  the bad input lines that were skipped; warnings.txt: what was ambiguous
    requests.json     `ragdoctor eval` with an LLM judge: what its last invocation sent (retries, failures by kind and
                      endpoint; rag/fleet.py); `ragdoctor run` keeps the same in run_summary.json's "requests"
    gate.xml          `ragdoctor gate`'s JUnit report
    labels.jsonl      human labels, one Label per line, appended by the dashboard's Label page or `ragdoctor label`
                      (read and written in corpora/labels.py; they calibrate the scores: eval/calibration.py)
    .ragdoctor.lock   while an evaluation (or `ragdoctor run`) writes the folder: who holds it (``RunFolder.claim``)

One writer at a time: an evaluation claims the folder (an exclusive ``flock`` on its lock file, released by the kernel
when its process dies, so a killed run never leaves the folder locked); a second one, from another thread or process,
is refused in one line naming the folder ("in use by another ragdoctor evaluation"), never told the folder is not a
run folder, and writes nothing. A lock file left by a killed run marks the folder as ours and is taken over. Without
``fcntl`` (Windows) the lock file's exclusive creation is the lock and the holder's pid is written in it: nothing
releases it when its holder is killed, so a lock file whose process no longer runs is taken over, said in one line.
The lock itself is corpora/locks.py's, which an index build holds too (rag/index_dir.py).

The logs are append-only (``AppendLog``): one record per line, flushed, so a kill loses at most the record in flight;
a torn last line is dropped and redone; a log whose first line is not one of ours is refused, never appended to.
``AppendLog.resume`` is the one resume loop, used by the pipeline (rag/run_questions.py) and the evaluation
(eval/judging.py): each says which earlier record of an item may be reused, and the rest is made and appended.

``config.json`` names the run's current samples and their hashes; every reader takes, per sample, the latest results
line that matches them (or, for a folder written before config.json did, the latest line of the sample). It also
carries the folder's ``format``: 2 since records were unified (format 1 judgements carry their record as ``sample``,
which ``Judgement`` still reads)."""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError
from tqdm import tqdm

from corpora import locks
from corpora.errors import InputError, warn
from corpora.jsonl import append_json_line, json_object_problem, read_log, repair_torn_tail, validation_error
from corpora.paths import output_file, output_folder, refuse_symlink_loop, utf8_name, write_whole
from corpora.records import Diagnosis, Judgement, Trace, _hash

TRACES, RESULTS, CONFIG, SUMMARY = "traces.jsonl", "results.jsonl", "config.json", "summary.json"
RESULTS_TABLE, DIAGNOSES, DIAGNOSIS = "results.parquet", "diagnoses.jsonl", "diagnosis.json"
RUN_SUMMARY, INPUT_ERRORS, WARNINGS, GATE_REPORT, LABELS = ("run_summary.json", "input_errors.txt", "warnings.txt",
                                                            "gate.xml", "labels.jsonl")
REQUESTS, LOCK = "requests.json", ".ragdoctor.lock"
ERRORS_HEADER = "# ragdoctor "  # a section of input_errors.txt: the step that skipped the lines below it
FILES = (TRACES, RESULTS, RESULTS_TABLE, SUMMARY, DIAGNOSES, DIAGNOSIS, RUN_SUMMARY, CONFIG, INPUT_ERRORS, LABELS)
MARKERS = (RESULTS, TRACES)  # a folder holding one of these is a run folder
EVAL_WRITES = (CONFIG, SUMMARY, RESULTS_TABLE, WARNINGS)  # what an evaluation (re)writes as a whole
FORMAT = 2


class Keyed(Protocol):
    sample_id: str


R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")


@dataclass
class Resume(Generic[T, R]):
    """What a resumed log already holds for ``items`` (``done``, by item id) and what is left to make."""

    log: AppendLog[R]
    items: list[T]
    ids: list[str]
    done: dict[str, R]
    made: dict[str, R] = field(default_factory=dict)

    @property
    def todo(self) -> list[T]:
        return [item for item, i in zip(self.items, self.ids) if i not in self.done]

    def add(self, item_id: str, record: R) -> None:
        """Append one made record (flushed). ``run`` calls it; an engine that makes records elsewhere (workers that
        stream results back to the driver) calls it as each arrives."""
        self.log.append(record)
        self.made[item_id] = record

    def records(self) -> list[R]:
        """One record per item, in item order (every item made or reused by now)."""
        return [self.made.get(i) or self.done[i] for i in self.ids]

    def batches(self, size: int) -> list[list[tuple[T, str]]]:
        """The items left to make with their ids, ``size`` per batch, in item order: every engine judges the same
        batches (a judge whose scores depend on its batch, such as int8 dynamic quantisation, gives the same results
        in-process and on a cluster)."""
        todo = [(item, i) for item, i in zip(self.items, self.ids) if i not in self.done]
        return [todo[start : start + size] for start in range(0, len(todo), max(1, size))]

    def collect(self, made: Iterable[Iterable[tuple[str, R]]], *, desc: str = "", unit: str = "item",
                progress: bool = True) -> list[R]:
        """Append each (item id, record) as its batch arrives, in any order (workers stream them back), and return
        one record per item in item order. A record for an item that was not left to make, or one made twice (a
        retried task delivering again), is not appended; an item that never arrived is an error, never a gap."""
        left = {i for i in self.ids if i not in self.done}
        bar = tqdm(total=len(left), desc=desc, unit=unit, leave=False, disable=None) if progress and left else None
        for batch in made:
            n = 0
            for i, record in batch:
                if i in left and i not in self.made:
                    self.add(i, record)
                    n += 1
            if bar:
                bar.update(n)
        if bar:
            bar.close()
        lost = [i for i in self.ids if i not in self.done and i not in self.made]
        if lost:
            raise RuntimeError(f"{len(lost)} item(s) were never made (first: {lost[0]!r})")
        return self.records()

    def run(self, make: Callable[[list[T]], list[R]], *, batch_size: int = 1, desc: str = "", unit: str = "item",
            progress: bool = True) -> list[R]:
        """Make the records left, ``batch_size`` items per call, appending each record as soon as its batch is made;
        return one record per item, in item order."""
        made = (list(zip([i for _, i in batch], make([item for item, _ in batch])))
                for batch in self.batches(batch_size))
        return self.collect(made, desc=desc, unit=unit, progress=progress)


class AppendLog(Generic[R]):
    """An append-only JSONL log of one record type."""

    def __init__(self, path: str | Path, model: type[R], what: str):
        self.path, self.model, self.what = Path(path), model, what

    def read(self) -> list[R]:
        """Every valid record in file order (a torn last line dropped; a foreign first line: InputError)."""
        return read_log(self.path, self.model, what=self.what)

    def append(self, record: R) -> None:
        append_json_line(self.path, record)

    def resume(self, items: Sequence[T], *, item_id: Callable[[T], str],
               reusable: Callable[[list[R]], Mapping[str, R]]) -> Resume[T, R]:
        """Read the log (refusing one that is not ours before anything is written), drop a torn last line, and keep
        for each item the record ``reusable`` picks from the log's records (the item is not made again)."""
        lines = self.read()
        repair_torn_tail(self.path)
        ids = [item_id(item) for item in items]
        found = reusable(lines)
        return Resume(self, list(items), ids, {i: found[i] for i in ids if i in found})


def latest(records: Iterable[Keyed]) -> dict[str, Any]:
    """The later record of a sample supersedes the earlier one (in the order of its last line)."""
    out: dict[str, Any] = {}
    for r in records:
        out.pop(r.sample_id, None)
        out[r.sample_id] = r
    return out


_STR = rb'("(?:[^"\\]|\\.)*")'
_SAMPLE_ID = re.compile(rb'^\{"sample_id":\s*' + _STR)
_KEYS = re.compile(rb'^\{"sample_id":\s*' + _STR + rb',\s*"eval_hash":\s*' + _STR + rb',\s*"sample_hash":\s*' + _STR)


def line_key(raw: bytes, keyed: bool) -> tuple[str, str, str] | None:
    """(sample id, eval hash, sample hash) of a log line, read from its start when it can be (else parsed)."""
    m = (_KEYS if keyed else _SAMPLE_ID).match(raw)
    if m:
        got = tuple(json.loads(g) for g in m.groups())
        return (got + ("", ""))[:3]  # type: ignore[return-value]
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("sample_id"), str):
        return None
    return obj["sample_id"], str(obj.get("eval_hash", "")), str(obj.get("sample_hash", ""))


def _torn(raw: bytes) -> bool:
    """Whether a log's last line is cut off (not one JSON value): a kill mid-write, or an append still in flight."""
    try:
        json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return True
    return False


class LogIndex(Mapping[str, R]):
    """A log's latest record per sample id, each validated only when it is asked for (a run of thousands of samples
    opens in well under a second).

    The records this project writes start with their ``sample_id`` (then, for judgements, ``eval_hash`` and
    ``sample_hash``: pydantic dumps fields in order), so the key is read from the start of each line; any other line is
    parsed to find it. With ``current`` (RunFolder.current_keys) only the lines judged with the run's configuration on
    the samples' current content count. A torn last line (an evaluation in progress, or killed mid-write) is not
    listed, as ``read_log`` drops it; any other line that does not validate falls back to the sample's previous
    record, and a sample with none is an InputError naming the line (``file:line: field: problem``), never a
    KeyError for a sample the index lists."""

    def __init__(self, path: Path, model: type[R], current: tuple[str, dict[str, str]] | None = None):
        self.model, self.path = model, path
        self._lines: dict[str, list[tuple[int, bytes]]] = {}
        self._parsed: dict[str, R] = {}
        if not path.exists():
            return
        lines = path.read_bytes().split(b"\n")
        last = max((i for i, raw in enumerate(lines) if raw.strip()), default=-1)
        for i, raw in enumerate(lines):
            if not raw.strip() or (i == last and _torn(raw)):
                continue
            key = line_key(raw, keyed=current is not None)
            if key is None or (current is not None and (key[1] != current[0] or current[1].get(key[0]) != key[2])):
                continue
            self._lines.setdefault(key[0], []).append((i + 1, raw))

    def __getitem__(self, sid: str) -> R:
        if sid not in self._parsed:
            first: InputError | None = None
            for lineno, raw in reversed(self._lines[sid]):
                try:
                    self._parsed[sid] = self.model.model_validate_json(raw)
                    break
                except ValidationError as exc:
                    first = first or validation_error(self.path, lineno, exc)
            else:  # listed, so never a KeyError: the damaged line, named
                raise first or InputError(self.path, f"no valid record of sample '{sid}'")
        return self._parsed[sid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)


def _count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _unit_or_none(v: object) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0)


def _row_problem(m: object) -> str:
    """What is wrong with one summary row ("" when nothing): every reader (gate, summary, the dashboard) takes its
    names, counts and estimates as eval.summary writes them, so a hand-edited or foreign row is caught here, once."""
    if not isinstance(m, dict):
        return "is not an object"
    for key in ("metric", "judge"):
        if not isinstance(m.get(key), str) or not m[key]:
            return f"has no '{key}' name"
    for key in ("n", "n_unmeasured", "n_not_applicable"):
        if not _count(m.get(key, 0)) or (key == "n" and key not in m):
            return f"'{key}' is not a count"
    for key in ("mean", "ci_low", "ci_high"):
        if not _unit_or_none(m.get(key)):
            return f"'{key}' is not a number within [0, 1]"
        if m["n"] > 0 and m.get(key) is None:
            return f"has measured values but no '{key}'"
    return ""


def summary_problem(summary: object) -> str:
    """What makes ``summary`` (a parsed summary.json) not one eval.summary writes ("" when nothing): the gate refuses
    it with this reason, the other readers (RunFolder.summary) take it as missing."""
    if not isinstance(summary, dict) or not isinstance(summary.get("metrics"), list):
        return "no 'metrics' list"
    for i, m in enumerate(summary["metrics"]):
        problem = _row_problem(m)
        if problem:
            return f"metrics[{i}] {problem}"
    if not _unit_or_none(summary.get("unmeasured_share")):
        return "unmeasured_share is not a number within [0, 1]"
    return ""


def _in_use(lock: Path) -> InputError:
    hint = "" if locks.kernel_released() else f" (if that process is no ragdoctor run, remove {lock})"  # a reused pid
    return InputError(lock.parent, f"in use by another ragdoctor {locks.holder(lock)}: wait for it to finish, or "
                                   f"choose another folder{hint}")


def _acquire(lock: Path, what: str) -> locks.Held:
    """``lock`` held (corpora/locks.py), with who holds it written in; InputError when another writer (thread or
    process) holds it. Without ``fcntl`` (Windows) a lock file whose writer no longer runs (killed: nothing removed
    it) is taken over, said in one line."""
    try:
        held = locks.acquire(lock, what)
    except locks.Busy:
        raise _in_use(lock) from None
    if held.took_over:
        warn(f"{lock.parent}: took over its lock, left behind by a ragdoctor {held.took_over} that no longer runs")
    return held


class RunFolder:
    """One run's folder. ``traces_file`` is where its traces log lives when not at ``path/traces.jsonl``
    (``ragdoctor run --out FILE``)."""

    def __init__(self, path: str | Path, *, traces_file: str | Path | None = None):
        self.path = Path(path).expanduser()  # "~/runs/x" from Python is the home folder's, as from a shell
        self.traces = AppendLog(Path(traces_file).expanduser() if traces_file else self.path / TRACES, Trace,
                                "traces log")
        self.results = AppendLog(self.path / RESULTS, Judgement, "results log")

    @classmethod
    def of_traces(cls, traces_file: str | Path) -> RunFolder:
        """The run folder of a traces log (the folder it is in)."""
        return cls(Path(traces_file).expanduser().parent, traces_file=traces_file)

    @property
    def name(self) -> str:
        return self.path.name

    def file(self, name: str) -> Path:
        return self.path / name

    # --- what may be written ----------------------------------------------------------------------------------------
    @staticmethod
    def is_run(path: str | Path) -> bool:
        p = Path(path)
        return p.is_dir() and any((p / f).exists() for f in (RESULTS, RESULTS_TABLE, TRACES))

    @staticmethod
    def find(paths: Iterable[str | Path]) -> list[Path]:
        """Run folders among ``paths``: a run folder itself, or a folder whose sub-folders are runs (newest first)."""
        out: list[Path] = []
        for raw in paths:
            if not str(raw).strip():
                continue
            p = Path(str(raw).strip()).expanduser()
            if RunFolder.is_run(p):
                out.append(p)
            elif p.is_dir():
                subs = [c for c in p.iterdir() if RunFolder.is_run(c)]
                out.extend(sorted(subs, key=lambda c: c.stat().st_mtime, reverse=True))
        return list(dict.fromkeys(out))

    def check_traces_writable(self) -> None:
        """The traces log may be created or appended to (not a folder; a file that is not a traces log is refused)."""
        refuse_symlink_loop(self.traces.path)
        self.traces.read()
        output_file(self.traces.path, what="traces log")

    def check_folder(self) -> None:
        """corpora.paths.output_folder for a run folder: new, empty, or one of ours. Ours all the same, without a log
        yet: a folder holding our lock file (being written now, or its run killed before its first record) or an
        evaluation's config.json (its evaluation stopped before its first result). The lock file is asked about after
        the folder was seen not empty: it is the first file a writer makes."""
        try:
            output_folder(self.path, markers=MARKERS)
        except InputError:
            if not (self.file(LOCK).is_file() or self._evaluation_config()):
                raise
            output_folder(self.path, markers=(LOCK, CONFIG))

    def _evaluation_config(self) -> bool:
        """Whether config.json is one an evaluation wrote (its hash, samples and run key)."""
        return self.current_keys() is not None and bool((self.config() or {}).get("run_key"))

    def check_eval_writable(self) -> None:
        """The folder an evaluation may write into (corpora.paths.output_folder), and never over a config.json,
        summary.json, results.parquet or warnings.txt that an evaluation did not write: a folder that only holds a
        traces.jsonl (possibly a user's own export of that name) must not have them. A folder whose name is not
        UTF-8 is refused: pyarrow cannot write results.parquet under it."""
        refuse_symlink_loop(self.path)
        if not utf8_name(self.path):
            raise InputError(self.path, "the folder's path is not UTF-8 text, and results.parquet cannot be written "
                                        "under it (pyarrow): choose a UTF-8 name")
        if self.path.is_symlink() and not self.path.exists():  # mkdir would fail on it with a bare "File exists"
            raise InputError(self.path, f"is a symbolic link to {os.readlink(self.path)}, which does not exist: create "
                                        f"that folder, or choose another folder")
        self.check_folder()
        if self.results.path.exists() or self.current_keys() is not None:
            return
        clash = [name for name in EVAL_WRITES if self.file(name).exists()]
        if clash:
            raise InputError(self.file(clash[0]), "exists and was not written by `ragdoctor eval`: refusing to "
                                                  "overwrite it; pass --out with a new folder")

    @contextmanager
    def claim(self, what: str = "evaluation", check: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold the folder for one writer while the block runs (``what`` it is, named to a writer refused meanwhile).
        ``check`` (default: check_eval_writable) runs before the folder is touched and again once it is held (what
        another writer left meanwhile). A second claim, from another thread or process, is an InputError naming the
        folder ("in use by another ragdoctor evaluation (pid N, since T): wait for it to finish, or choose another
        folder"); it writes nothing. A folder the claim made and the block left empty is removed again."""
        check = check or self.check_eval_writable
        lock = self.file(LOCK)
        try:
            check()
        except InputError:  # what a writer holding the folder has written so far is no reason: it is in use
            if locks.held(lock):
                raise _in_use(lock) from None
            raise
        created = not self.path.exists()
        try:
            held = _acquire(lock, what)
        except BaseException:
            if created:
                with suppress(OSError):
                    self.path.rmdir()
            raise
        try:
            check()
            yield
        finally:
            held.release()
            if created:
                with suppress(OSError):  # only an empty folder: one that nothing was written into
                    self.path.rmdir()

    # --- plain files --------------------------------------------------------------------------------------------------
    def read_json(self, name: str) -> Any:
        """The file's JSON, or None when it is missing or not JSON."""
        try:
            return json.loads(self.file(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write_text(self, name: str, text: str) -> None:
        """Replace the file at once (a temporary sibling renamed over it: a reader never sees half of it)."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_whole(self.file(name), text)

    def write_json(self, name: str, data: Any) -> None:
        self.write_text(name, json.dumps(data, indent=2, ensure_ascii=False, default=str))

    def write_lines(self, name: str, lines: Iterable[str]) -> None:
        self.write_text(name, "".join(f"{line}\n" for line in lines))

    def read_lines(self, name: str) -> list[str]:
        path = self.file(name)
        return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()] if path.is_file() else []

    # --- input_errors.txt: one section per step that read input into this folder ----------------------------------
    def input_errors(self) -> list[str]:
        """The skipped-input lines of every step (run, import, eval), without their section headers."""
        return [ln for ln in self.read_lines(INPUT_ERRORS) if not ln.startswith(ERRORS_HEADER)]

    def record_input_errors(self, step: str, errors: Iterable[object], *,
                            ours: Callable[[str], bool] | None = None) -> bool:
        """Replace ``step``'s section of input_errors.txt with ``errors`` and keep the other steps' sections: an eval
        after an import (or a second import of another file) no longer erases what the earlier step skipped. A
        section is ``# ragdoctor STEP`` and its lines; a step with nothing skipped has no section. Lines of a file
        written before sections (no header) belong to no step and are replaced, as that file always was. ``ours``:
        see ``write_if_ours`` (None: the file is this folder's and always written)."""
        sections = self._error_sections()
        lines = [str(e) for e in errors]
        sections.pop(step, None)
        if lines:
            sections[step] = lines
        text = "".join(f"{ERRORS_HEADER}{key}\n" + "".join(f"{ln}\n" for ln in body) for key, body in sections.items())
        if ours is None:
            self.write_text(INPUT_ERRORS, text)
            return True
        return self.write_if_ours(INPUT_ERRORS, text, ours=ours)

    def _error_sections(self) -> dict[str, list[str]]:
        sections: dict[str, list[str]] = {}
        key = None
        for ln in self.read_lines(INPUT_ERRORS):
            if ln.startswith(ERRORS_HEADER):
                key = ln[len(ERRORS_HEADER):]
                sections.setdefault(key, [])
            elif key is not None:
                sections[key].append(ln)
        return sections

    def write_if_ours(self, name: str, text: str, *, ours: Callable[[str], bool]) -> bool:
        """Write the file unless one is there that this project did not write (then warn and leave it)."""
        path = self.file(name)
        if path.exists():
            try:
                mine = path.is_file() and ours(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError):
                mine = False
            if not mine:
                warn(f"{path} exists and was not written by ragdoctor: left as it is")
                return False
        self.write_text(name, text)
        return True

    def stamp(self) -> tuple[tuple[str, int, int], ...]:
        """(file, mtime_ns, size) of every run file present: a cache key that changes whenever the run does."""
        out = []
        for name in FILES:
            f = self.file(name)
            if f.exists():
                st = f.stat()
                out.append((name, st.st_mtime_ns, st.st_size))
        return tuple(out)

    # --- the evaluation's configuration and its current results -------------------------------------------------------
    def config(self) -> dict | None:
        return self.read_config()[0]

    def config_problem(self) -> str | None:
        """Why the config.json that is there cannot be read as an evaluation's configuration (None when it is fine
        or absent). Without it nobody can tell which summary and which judgements are current."""
        return self.read_config()[1]

    def read_config(self) -> tuple[dict | None, str | None]:
        """(config.json's object, None), (None, None) when there is none, or (None, why it cannot be read): one read
        for callers that need both."""
        path = self.file(CONFIG)
        if not path.exists():
            return None, None
        cfg, why = json_object_problem(path)
        if why is not None and why.startswith("not a JSON object"):
            why = "not an evaluation's config.json (not a JSON object)"
        return cfg, why

    def current_keys(self) -> tuple[str, dict[str, str]] | None:
        """(eval hash, {sample id: sample hash}) of the run's current samples, from config.json; None when unknown."""
        cfg = self.config()
        if cfg is None or not isinstance(cfg.get("samples"), dict) or not cfg.get("eval_hash"):
            return None
        return cfg["eval_hash"], {str(k): str(v) for k, v in cfg["samples"].items()}

    def write_config(self, config: dict[str, Any], samples: dict[str, str]) -> str:
        """config.json with the run's current samples ({id: content hash}); returns the run key (one hash of the
        configuration and every current sample's content), which summary.json carries too, so a summary left by an
        earlier, different evaluation is never read as current."""
        key = _hash([config["eval_hash"], sorted(samples.items())])
        self.write_json(CONFIG, {**config, "format": FORMAT, "run_key": key, "samples": samples})
        return key

    def judgements(self) -> list[Judgement]:
        """The run's current judgements: per current sample the latest line judged with the run's configuration on the
        sample's current content (samples not judged yet are left out). Without config.json: the latest line per id.
        A config.json that cannot be read is an InputError: the latest lines may be superseded ones."""
        lines = self.results.read()
        keys = self.checked_keys()
        if keys is None:
            return list(latest(lines).values())
        h, samples = keys
        index = {(j.sample_id, j.eval_hash, j.sample_hash): j for j in lines}
        return [index[(sid, h, sh)] for sid, sh in samples.items() if (sid, h, sh) in index]

    def judgements_by_id(self) -> LogIndex[Judgement]:
        """The current judgements as judgements() takes them, validated one by one when asked for (the dashboard)."""
        return LogIndex(self.results.path, Judgement, self.checked_keys())

    def checked_keys(self) -> tuple[str, dict[str, str]] | None:
        """current_keys(), refusing a config.json that is there but cannot be read (InputError naming it)."""
        problem = self.config_problem()
        if problem:
            raise InputError(self.file(CONFIG), f"{problem}: cannot tell which judgements are current; rerun "
                                                "`ragdoctor eval` on the run (judged samples are reused)")
        return self.current_keys()

    def latest_traces(self) -> dict[str, Trace]:
        """The traces log's latest trace per sample."""
        return latest(self.traces.read())

    def summary(self) -> dict | None:
        """summary.json, or None when it is missing, malformed or left by an earlier evaluation (see stale_summary)."""
        summary = self.read_json(SUMMARY)
        return summary if not summary_problem(summary) and not self.stale_summary(summary) else None

    def stale_summary(self, summary: dict) -> bool:
        """A summary left by an earlier evaluation (the latest one was killed before it wrote its own)."""
        cfg, problem = self.read_config()
        if problem:  # nothing says which evaluation is current: the summary cannot be shown as it
            return True
        key = (cfg or {}).get("run_key")
        return bool(key and summary.get("run_key") and key != summary["run_key"])

    # --- diagnoses ----------------------------------------------------------------------------------------------------
    def diagnoses(self) -> dict[str, Diagnosis]:
        return latest(read_log(self.file(DIAGNOSES), Diagnosis, what="diagnoses file"))

    def stale_diagnoses(self) -> bool:
        """Diagnoses made before the run's latest evaluation (its categories describe judgements no longer current):
        diagnosis.json's run key differs from config.json's; a report without one is stale when config.json is newer."""
        report, cfg = self.read_json(DIAGNOSIS), self.config()
        if not self.file(DIAGNOSES).exists() or cfg is None:
            return False
        if isinstance(report, dict) and report.get("run_key"):
            return report["run_key"] != cfg.get("run_key")
        return self.file(CONFIG).stat().st_mtime_ns > self.file(DIAGNOSES).stat().st_mtime_ns

    def write_diagnoses(self, diagnoses: list[Diagnosis], report: dict, *, run_key: str | None = None) -> None:
        """diagnoses.jsonl and diagnosis.json, the latter with the run key of the evaluation diagnosed (``run_key``,
        default config.json's now)."""
        self.write_text(DIAGNOSES, "".join(d.model_dump_json() + "\n" for d in diagnoses))
        self.write_json(DIAGNOSIS, {**report, "run_key": run_key or (self.config() or {}).get("run_key")})
