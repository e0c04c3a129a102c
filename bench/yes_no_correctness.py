#!/usr/bin/env python
"""Answer correctness on yes/no questions answered in words, not with a yes or no: 20 hand-written questions about
LLM systems, each with a reference, a right answer in other words and a wrong answer that states the opposite without
opening with "yes" or "no" (the planted-conflict shape: a stale fact repeated as a statement). Prints, per judge, how
many right answers it calls wrong and how many wrong answers it calls right (answer correctness at its 0.5 cut), and
writes JSON.

    .venv/bin/python bench/yes_no_correctness.py [--judges nli,lexical] [--out bench/results/yes_no_correctness.json]

Written in session 38 to measure one change (METRICS_VERSION 27: a yes/no question no longer leads an answer that
states words of its own, and a claim is read without the yes or no it opens with); 20 pairs is a probe, not a
benchmark to choose a judge on.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import ragdoctor  # noqa: E402
from ragdoctor.table import render  # noqa: E402

# (question, reference, right answer in other words, wrong answer stating the opposite without a leading yes/no)
CASES = [
    ("Is FlashAttention exact?", "Yes, it is exact.", "FlashAttention computes exact attention without approximation.",
     "FlashAttention is an approximate attention method."),
    ("Does LoRA freeze the base weights?", "Yes, the base weights are frozen.",
     "The pretrained weights stay frozen and only adapters train.", "LoRA updates all the base weights."),
    ("Should a tensor-parallel group span two nodes?", "No; keep tensor parallelism within one node.",
     "Tensor parallelism should stay inside a single node.", "A tensor-parallel group spans two nodes for best throughput."),
    ("Is PagedAttention enabled by default in vLLM?", "Yes, vLLM always uses PagedAttention.",
     "vLLM uses PagedAttention for every request.", "PagedAttention must be turned on with a flag."),
    ("Can QLoRA train a 65B model on one 48GB GPU?", "Yes, QLoRA fits a 65B model on a single 48GB GPU.",
     "A single 48GB GPU is enough for QLoRA on a 65B model.", "QLoRA needs several GPUs for a 65B model."),
    ("Does ZeRO stage 3 partition the parameters?", "Yes, stage 3 partitions parameters, gradients and optimizer states.",
     "Stage 3 shards the parameters across ranks along with gradients and optimizer states.",
     "ZeRO stage 3 keeps a full copy of the parameters on every GPU."),
    ("Is the KV cache stored on the CPU by default?", "No, it lives in GPU memory.", "The KV cache is kept in GPU memory.",
     "The KV cache is kept in CPU memory by default."),
    ("Does gradient checkpointing reduce memory use?", "Yes, it trades extra compute for lower activation memory.",
     "It lowers activation memory at the cost of recomputation.", "Gradient checkpointing increases memory use."),
    ("Is bfloat16 range the same as float32?", "Yes, bfloat16 keeps float32's 8 exponent bits and so its range.",
     "bfloat16 has 8 exponent bits like float32, giving it the same range.",
     "bfloat16 has a much smaller range than float32."),
    ("Does speculative decoding change the output distribution?", "No, it preserves the target model's distribution.",
     "The target model's distribution is preserved exactly.",
     "Speculative decoding changes the output distribution of the target model."),
    ("Can FlashAttention-2 use a head dimension of 256?", "Yes, it supports head dimensions up to 256.",
     "Head dimensions up to 256 are supported by FlashAttention-2.",
     "FlashAttention-2 only supports head dimensions up to 128."),
    ("Is data parallelism communication-free during the forward pass?",
     "Yes, gradients are only synchronised in the backward pass.",
     "Data-parallel ranks exchange nothing in the forward pass; gradients are all-reduced during backward.",
     "Data parallelism all-reduces activations during the forward pass."),
    ("Does 1F1B shrink the pipeline bubble compared with GPipe?",
     "No, the bubble stays the same; it only saves activation memory.",
     "1F1B keeps GPipe's bubble and reduces activation memory.", "1F1B removes the pipeline bubble that GPipe has."),
    ("Was the transformer introduced in 2017?", "Yes, in the 2017 paper Attention Is All You Need.",
     "Attention Is All You Need introduced it in 2017.", "The transformer was introduced in 2015."),
    ("Does AWQ need calibration data?", "Yes, a small calibration set picks the salient channels.",
     "AWQ uses a small calibration set to find salient weight channels.",
     "AWQ quantizes weights without any calibration data."),
    ("Is NCCL used for GPU all-reduce in PyTorch DDP?", "Yes, NCCL is the default backend for GPUs.",
     "On GPUs DDP uses the NCCL backend by default.", "PyTorch DDP uses Gloo for GPU all-reduce by default."),
    ("Does continuous batching wait for a batch to finish before adding requests?",
     "No, new requests join at every iteration.", "Requests are added at each decoding step as others finish.",
     "Continuous batching waits for the whole batch to finish before adding requests."),
    ("Is the Adam optimizer state twice the size of the parameters?", "Yes, two moments per parameter.",
     "Adam keeps a first and a second moment for every parameter.", "Adam keeps no extra state per parameter."),
    ("Can tensor parallelism split attention heads across GPUs?", "Yes, heads are divided among the ranks.",
     "Attention heads are partitioned across the tensor-parallel ranks.",
     "Tensor parallelism cannot split attention heads across GPUs."),
    ("Is GPTQ a post-training quantization method?", "Yes, it quantizes a trained model without retraining.",
     "GPTQ works after training, with no retraining.", "GPTQ requires quantization-aware training from scratch."),
]


def rows() -> list[dict]:
    return [{"id": f"yn{i:02d}-{kind}", "question": q, "reference": ref, "answer": answer}
            for i, (q, ref, right, wrong) in enumerate(CASES) for kind, answer in (("right", right), ("wrong", wrong))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--judges", default="nli,lexical")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "yes_no_correctness.json"))
    args = ap.parse_args(argv)
    judges = [j.strip() for j in args.judges.split(",") if j.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        result = ragdoctor.evaluate(rows(), judges=judges, metrics=["answer_correctness"], out=Path(tmp) / "run")
        frame = result.to_pandas(long=True)
        values = {(r.sample_id, r.judge): (None if r.status != "ok" else float(r.value))
                  for r in frame[frame["metric"] == "answer_correctness"].itertuples()}
    table, out = [], {}
    for judge in judges:
        right = [values.get((f"yn{i:02d}-right", judge)) for i in range(len(CASES))]
        wrong = [values.get((f"yn{i:02d}-wrong", judge)) for i in range(len(CASES))]
        row = {"right_called_wrong": sum(v is not None and v < 0.5 for v in right),
               "wrong_called_right": sum(v is not None and v >= 0.5 for v in wrong),
               "unmeasured": sum(v is None for v in right + wrong), "pairs": len(CASES)}
        out[judge] = row
        table.append((judge, row["pairs"], row["right_called_wrong"], row["wrong_called_right"], row["unmeasured"]))
    print(render(["judge", "questions", "right answers called wrong", "wrong answers called right", "unmeasured"],
                 table, title="answer correctness on yes/no questions answered in words"))
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"judges": out}, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
