"""Tests of the bench/ scripts (plumbing with small or fake models; the numbers themselves are the scripts' output)."""
import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_bench(name: str) -> ModuleType:
    """bench/<name>.py as a module (bench/ is scripts, not a package the tests import by name)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOPICS = ["pipeline bubble", "kv cache memory", "flashattention tiling", "speculative decoding draft",
          "lora adapter rank", "cuda graphs capture", "int4 quantization awq", "tensor parallel allreduce"]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


def beir_folder(folder: Path, n_docs: int = 48, n_queries: int = 12) -> Path:
    """A BEIR folder: each doc has a topic and two rare code words; each query names one doc's code words."""
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": TOPICS[i % len(TOPICS)],
             "text": f"Note about {TOPICS[i % len(TOPICS)]} with {WORDS[i % 12]}{i} and {WORDS[(i * 5) % 12]}x{i}. " * 3}
            for i in range(n_docs)]
    docs.append({"_id": "empty", "title": "", "text": ""})  # dropped by the bench, as Cranfield's two empty docs
    queries = [{"_id": f"q{j}", "text": f"{WORDS[j % 12]}{j} {WORDS[(j * 5) % 12]}x{j} {TOPICS[j % len(TOPICS)]}"}
               for j in range(n_queries)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    qrels = ["query-id\tcorpus-id\tscore"] + [f"q{j}\td{j}\t1" for j in range(n_queries)]
    (folder / "qrels" / "train.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return folder
