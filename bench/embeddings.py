#!/usr/bin/env python
"""Embedding benchmark: passages/s of each embedding backend against fp32 sentence-transformers (all rounds
interleaved in one process, so machine load hits every variant alike), cosine agreement with fp32, and SciFact-train
nDCG@10 (dense, document level, as in bench/retrieval.py) per backend.

    python bench/embeddings.py [--rounds 3] [--sample 256] [--max-docs N] [--no-ndcg] [--ndcg-candidates]
                               [--data-dir DIR] [--out bench/results/embeddings.json]

Variants: the shipped backends (rag/embedding_backends.py: torch = fp32, torch-bf16) and the candidates that did not
ship, measured the same way: torch-int8 (torch.ao dynamic int8, per-channel, the feed-forward linears only, as the
judge's cross-encoders) and onnx-int8 (torch.onnx export, onnxruntime's BERT graph fusions, quantize_dynamic
per-channel int8; needs the `onnx` package, else `unmeasured`). Samples: the bundled corpus's chunks (default
chunking) and SciFact's chunks (chunk_size 256, as bench/retrieval.py). nDCG needs every SciFact chunk embedded per
variant (minutes at fp32 on 2 cores; the backends' vectors are cached by text hash, so reruns skip it).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python bench/embeddings.py` from anywhere
    sys.path.insert(0, str(ROOT))

from rag.offline import set_offline_env  # noqa: E402

set_offline_env()

from bench.retrieval import CHUNKING, doc_ranking, load_dataset, numpy_topk, quality  # noqa: E402
from corpora.bundled import bundled_documents  # noqa: E402
from corpora.errors import InputError  # noqa: E402
from rag import embedding_backends, models  # noqa: E402
from rag.chunking import chunk_documents, embedding_text, hf_tokenizer  # noqa: E402
from rag.config import ChunkingConfig  # noqa: E402
from rag.embeddings import make_embedder  # noqa: E402
from rag.precision import native_bf16  # noqa: E402
from ragdoctor.table import fmt, render  # noqa: E402

Encode = Callable[[list[str]], np.ndarray]
LOAD_START = list(os.getloadavg())
_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


# --- the candidates that did not ship ------------------------------------------------------------------------------

def torch_int8_ffn(model_dir: str, batch_size: int) -> Encode:
    """sentence-transformers with its feed-forward linears dynamically quantised to int8 (per channel)."""
    import torch  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    st = SentenceTransformer(model_dir, device="cpu", local_files_only=True)
    inner = st[0]
    ffn = {n for n, m in inner.model.named_modules() if isinstance(m, torch.nn.Linear)
           and (n.endswith("intermediate.dense") or (n.endswith("output.dense") and "attention" not in n))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
        inner.model = torch.ao.quantization.quantize_dynamic(inner.model, dict.fromkeys(ffn, qconfig),
                                                             dtype=torch.qint8)
    return lambda texts: np.asarray(st.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                              convert_to_numpy=True), dtype=np.float32)


def onnx_int8(model_dir: str, batch_size: int, work: Path) -> Encode:
    """The model exported to ONNX, BERT-fused and dynamically quantised to int8; mean pooling and L2 in numpy."""
    import onnx  # noqa: PLC0415 - ImportError: the caller reports the candidate unmeasured
    import onnxruntime as ort  # noqa: PLC0415
    import torch  # noqa: PLC0415
    from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415
    from onnxruntime.transformers.optimizer import optimize_model  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    st = SentenceTransformer(model_dir, device="cpu", local_files_only=True)
    tok, max_len = st.tokenizer, st.max_seq_length

    class Body(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ex = tok(["an example sentence"], return_tensors="pt")
    raw, fused, quant = work / "model.onnx", work / "model-fused.onnx", work / "model-int8.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Body(st[0].model).eval(), tuple(ex[n] for n in names), str(raw), dynamo=False,
                          input_names=names, output_names=["hidden"], opset_version=17,
                          dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "hidden"]})
    cfg = st[0].model.config
    optimize_model(str(raw), model_type="bert", num_heads=cfg.num_attention_heads,
                   hidden_size=cfg.hidden_size).save_model_to_file(str(fused))
    quantize_dynamic(str(fused), str(quant), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    so = ort.SessionOptions()
    so.intra_op_num_threads = os.cpu_count() or 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # spinning threads lose badly under load
    sess = ort.InferenceSession(str(quant), so, providers=["CPUExecutionProvider"])

    def encode(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), cfg.hidden_size), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")  # as sentence-transformers: similar lengths
        for i in range(0, len(texts), batch_size):
            idx = order[i : i + batch_size]
            b = tok([texts[j] for j in idx], padding=True, truncation=True, max_length=max_len, return_tensors="np")
            hidden = sess.run(None, {n: b[n].astype(np.int64) for n in names})[0]
            mask = b["attention_mask"][..., None].astype(np.float32)
            vec = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
            out[idx] = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
        return out

    return encode


# --- measuring ------------------------------------------------------------------------------------------------------

def variants(batch_size: int, work: Path) -> tuple[dict[str, Encode], dict[str, str], dict[str, str]]:
    """name -> encoder (no embedding cache), name -> 'backend'/'candidate', name -> why it is unmeasured."""
    enc: dict[str, Encode] = {}
    kind: dict[str, str] = {}
    unmeasured: dict[str, str] = {}
    for backend in embedding_backends.BACKENDS:
        e = make_embedder("minilm", batch_size=batch_size, device="cpu", use_cache=False, backend=backend)
        e.dim  # noqa: B018 - load (and check) now, not inside the first timed round
        enc[backend], kind[backend] = e.embed, "backend"
    model_dir = str(models.minilm_path())
    for name, build in (("torch-int8", lambda: torch_int8_ffn(model_dir, batch_size)),
                        ("onnx-int8", lambda: onnx_int8(model_dir, batch_size, work))):
        try:
            enc[name], kind[name] = build(), "candidate"
        except ImportError as exc:
            unmeasured[name] = f"unmeasured: {exc.name or exc} is not installed"
            log(f"{name}: {unmeasured[name]}")
    return enc, kind, unmeasured


def throughput(enc: dict[str, Encode], texts: list[str], rounds: int) -> dict[str, dict]:
    """Every variant embeds ``texts`` once per round, rounds interleaved; the ratio to fp32 is the median over rounds
    of (fp32 seconds / variant seconds) of the same round."""
    ref = enc["torch"](texts)
    vecs = {name: f(texts) for name, f in enc.items()}  # warm-up, and the vectors compared
    secs: dict[str, list[float]] = {name: [] for name in enc}
    for r in range(rounds):
        for name, f in enc.items():
            t = time.perf_counter()
            f(texts)
            secs[name].append(max(time.perf_counter() - t, 1e-9))
        log(f"  round {r + 1}/{rounds}: " + ", ".join(f"{n} {len(texts) / s[-1]:.1f}/s" for n, s in secs.items()))
    out = {}
    for name, s in secs.items():
        cos = embedding_backends.agreement(ref, vecs[name])
        out[name] = {"passages": len(texts), "seconds": s, "passages_per_s": len(texts) / float(np.median(s)),
                     "speedup_vs_fp32": float(np.median(np.array(secs["torch"]) / np.array(s))),
                     "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean())}
    return out


def padding(texts: list[str], batch_size: int, max_len: int = 256) -> dict[str, float]:
    """Tokens per passage (MiniLM's tokenizer, truncated at ``max_len`` as the model is) and the share of padding in
    length-sorted batches, as sentence-transformers forms them: what a smarter batching could still save."""
    tok = hf_tokenizer(str(models.minilm_path()))
    lens = sorted((min(len(tok(t)) + 2, max_len) for t in texts), reverse=True)  # + [CLS] and [SEP]
    padded = sum(len(b) * b[0] for b in (lens[i : i + batch_size] for i in range(0, len(lens), batch_size)))
    return {"mean_tokens": float(np.mean(lens)), "share_truncated": float(np.mean(np.array(lens) >= max_len)),
            "padding_share": 1.0 - sum(lens) / padded}


def scifact_ndcg(names: list[str], enc: dict[str, Encode], data_dir: Path, max_docs: int | None,
                 batch_size: int) -> dict[str, dict]:
    """Dense nDCG@10 on SciFact train queries (chunks -> documents, first occurrence) for each variant."""
    docs, samples, _ = load_dataset(data_dir / "scifact", "train", max_docs, None)
    nodes = chunk_documents(docs, CHUNKING, hf_tokenizer(str(models.minilm_path())))
    texts = [embedding_text(n) for n in nodes]
    qrels = {s.id: s.metadata["qrels"] for s in samples}
    out = {}
    for name in names:
        t = time.perf_counter()
        if name in embedding_backends.BACKENDS:  # cached by text hash: a rerun skips the corpus
            cached = make_embedder("minilm", batch_size=batch_size, device="cpu", backend=name)
            vectors, queries = cached.embed(texts), cached.embed([s.question for s in samples])
        else:
            vectors, queries = enc[name](texts), enc[name]([s.question for s in samples])
        pos = numpy_topk(vectors, queries, 200)
        rankings = {s.id: doc_ranking(nodes, row) for s, row in zip(samples, pos)}
        out[name] = {**quality(qrels, rankings), "n_docs": len(docs), "n_chunks": len(nodes),
                     "n_queries": len(samples), "embed_s": time.perf_counter() - t}
        log(f"  {name}: nDCG@10 {fmt(out[name]['ndcg@10'])} ({len(nodes)} chunks, {out[name]['embed_s']:.0f}s)")
    return out


def print_table(results: dict) -> None:
    ndcg = results.get("scifact_ndcg") or {}
    base = (ndcg.get("torch") or {}).get("ndcg@10")
    rows = []
    names = list(results["kinds"]) + list(results["unmeasured"])
    for name in names:
        if name in results["unmeasured"]:
            rows.append([name, "candidate", results["unmeasured"][name], "", "", "", "", "", ""])
            continue
        b, s = results["throughput"]["bundled"][name], results["throughput"]["scifact"][name]
        q = (ndcg.get(name) or {}).get("ndcg@10")
        delta = "" if q is None or base is None else f"{q - base:+.4f}"
        rows.append([name, results["kinds"][name], f"{b['passages_per_s']:.1f}", f"{b['speedup_vs_fp32']:.2f}x",
                     f"{s['passages_per_s']:.1f}", f"{s['speedup_vs_fp32']:.2f}x",
                     f"{min(b['cosine_min'], s['cosine_min']):.5f}",
                     fmt(q) if q is not None else f"unmeasured ({results.get('ndcg_unmeasured') or 'no result'})",
                     delta])
    print(render(["variant", "kind", "bundled p/s", "vs fp32", "scifact p/s", "vs fp32", "cos min",
                  "nDCG@10", "vs fp32"], rows))
    for corpus, pad in results["padding"].items():
        print(f"{corpus}: {pad['mean_tokens']:.0f} tokens per passage, {pad['share_truncated']:.0%} truncated at 256, "
              f"{pad['padding_share']:.1%} of batch positions are padding")
    print(f"load average start {results['machine']['load_start']}, end {results['machine']['load_end']} "
          f"({results['machine']['cpus']} CPUs)")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds")
    p.add_argument("--sample", type=int, default=256, help="passages per corpus sample timed")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-docs", type=int, default=None, help="SciFact docs for nDCG (judged docs first)")
    p.add_argument("--no-ndcg", action="store_true", help="skip SciFact nDCG (speed and cosine only)")
    p.add_argument("--ndcg-candidates", action="store_true", help="nDCG for the candidates too (embeds SciFact again)")
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "embeddings.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.rounds < 1 or args.sample < 1 or args.batch_size < 1:
        print("error: --rounds, --sample and --batch-size must be at least 1", file=sys.stderr)
        return 2
    if not (args.data_dir / "scifact").is_dir():
        print(f"error: {args.data_dir / 'scifact'}: no SciFact folder (BEIR layout)", file=sys.stderr)
        return 2
    tokenize = hf_tokenizer(str(models.minilm_path()))
    samples = {"bundled": [embedding_text(n) for n in chunk_documents(bundled_documents(), ChunkingConfig(),
                                                                       tokenize)][: args.sample]}
    try:
        docs, _, _ = load_dataset(args.data_dir / "scifact", "train", None, None)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    samples["scifact"] = [embedding_text(n) for n in chunk_documents(docs[: args.sample * 2], CHUNKING,
                                                                      tokenize)][: args.sample]
    with tempfile.TemporaryDirectory(prefix="ragdoctor-bench-emb-") as tmp:
        log("loading the variants (onnx-int8: export + quantise)")
        enc, kinds, unmeasured = variants(args.batch_size, Path(tmp))
        results: dict = {"kinds": kinds, "unmeasured": unmeasured, "throughput": {}}
        results["padding"] = {corpus: padding(texts, args.batch_size) for corpus, texts in samples.items()}
        for corpus, texts in samples.items():
            log(f"{corpus}: {len(texts)} passages x {args.rounds} rounds, interleaved; {results['padding'][corpus]}")
            results["throughput"][corpus] = throughput(enc, texts, args.rounds)
        if not args.no_ndcg:
            names = [n for n in enc if kinds[n] == "backend" or args.ndcg_candidates]
            log(f"SciFact nDCG@10 for {', '.join(names)}")
            results["scifact_ndcg"] = scifact_ndcg(names, enc, args.data_dir, args.max_docs, args.batch_size)
        results["ndcg_unmeasured"] = ("--no-ndcg" if args.no_ndcg else None if args.ndcg_candidates else
                                      "candidates: pass --ndcg-candidates")
    import torch  # noqa: PLC0415 - loaded by now

    results["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
                          "torch_threads": torch.get_num_threads(), "cpu_capability":
                          torch.backends.cpu.get_cpu_capability(), "fast_bf16": native_bf16(),
                          "load_start": LOAD_START, "load_end": list(os.getloadavg()),
                          "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print_table(results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
