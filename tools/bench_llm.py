#!/usr/bin/env python3
"""irun generate beside OpenVINO on the same stateful LLM exports, in one sitting, alternating
(each side in its own process, so that peak RSS is its own):

    venv/bin/python tools/bench_llm.py /tmp/llm100m/llama_int4_asym [--threads 2] [--rounds 3]

Per side: load (read + compile) ms, prefill ms (the prompt after one untimed run of it, state
reset between), decode ms/token (median step), peak RSS; medians over the rounds, and the
ratio irun / OpenVINO. OpenVINO runs with f32 inference precision, an f32 KV cache and dynamic
quantization off (the configuration whose decompression irun matches), on one infer request
with openvino.genai's greedy loop. Both must produce the same tokens.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IRUN = os.path.join(HERE, "..", "target", "release", "irun")


def ov_worker(model_dir, prompt, new_tokens, threads):
    import openvino as ov

    t0 = time.perf_counter()
    core = ov.Core()
    compiled = core.compile_model(
        core.read_model(os.path.join(model_dir, "openvino_model.xml")), "CPU",
        {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32",
         "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0", "INFERENCE_NUM_THREADS": str(threads)})
    load = time.perf_counter() - t0
    request = compiled.create_infer_request()

    def infer(ids, total, start):
        n = len(ids)
        return request.infer({
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, total), dtype=np.int64),
            "position_ids": np.arange(start, start + n, dtype=np.int64)[None],
            "beam_idx": np.zeros(1, dtype=np.int32),
        })["logits"]

    request.reset_state()
    infer(prompt, len(prompt), 0)  # warm-up
    request.reset_state()
    t0 = time.perf_counter()
    logits = infer(prompt, len(prompt), 0)
    prefill = time.perf_counter() - t0
    tokens, steps = [], []
    n = len(prompt)
    for step in range(new_tokens):
        token = int(np.argmax(logits[0, -1]))
        tokens.append(token)
        if step + 1 == new_tokens:
            break
        t0 = time.perf_counter()
        logits = infer([token], n + step + 1, n + step)
        steps.append(time.perf_counter() - t0)
    print(json.dumps({"tokens": tokens, "load_ms": load * 1e3, "prefill_ms": prefill * 1e3,
                      "decode_ms_per_token": statistics.median(steps) * 1e3}))


def measured(cmd):
    """Runs `cmd` under /usr/bin/time; its JSON line and its peak RSS in MB."""
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True,
                       check=True)
    rss_kb = int(r.stderr.strip().splitlines()[-1])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["rss_mb"] = rss_kb / 1024
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model_dir")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--ov-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    prompt = [int(x) for x in np.random.default_rng(0).integers(3, 500, args.prompt_len)]
    if args.ov_worker:
        return ov_worker(args.model_dir, prompt, args.new_tokens, args.threads)
    ov_cmd = [sys.executable, os.path.abspath(__file__), args.model_dir, "--ov-worker",
              "--threads", str(args.threads), "--new-tokens", str(args.new_tokens),
              "--prompt-len", str(args.prompt_len)]
    irun_cmd = [IRUN, "generate", args.model_dir, "--json", "--threads", str(args.threads),
                "--max-new-tokens", str(args.new_tokens),
                "--prompt-ids", ",".join(map(str, prompt))]
    runs = {"irun": [], "openvino": []}
    for _ in range(args.rounds):
        runs["openvino"].append(measured(ov_cmd))
        runs["irun"].append(measured(irun_cmd))
    same = runs["irun"][0]["tokens"][:len(runs["openvino"][0]["tokens"])] == \
        runs["openvino"][0]["tokens"]
    bin_mb = os.path.getsize(os.path.join(args.model_dir, "openvino_model.bin")) / 2**20
    print(f"{args.model_dir}: .bin {bin_mb:.1f} MB, prompt {args.prompt_len} tokens, "
          f"{args.new_tokens} new, {args.threads} thread(s), medians of {args.rounds} rounds; "
          f"same tokens: {same}")
    print(f"{'':22}{'irun':>10}{'OpenVINO':>10}{'ratio':>8}")
    for key, label in [("load_ms", "load ms"), ("prefill_ms", "prefill ms"),
                       ("decode_ms_per_token", "decode ms/token"), ("rss_mb", "peak RSS MB")]:
        a = statistics.median(r[key] for r in runs["irun"])
        b = statistics.median(r[key] for r in runs["openvino"])
        print(f"{label:22}{a:10.2f}{b:10.2f}{a / b:8.2f}x")
    if not same:
        print("irun:    ", runs["irun"][0]["tokens"])
        print("OpenVINO:", runs["openvino"][0]["tokens"])


if __name__ == "__main__":
    sys.exit(main())
