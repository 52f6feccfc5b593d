#!/usr/bin/env python3
"""Builds the shipped-format LLM IRs irun is tested on: small random-initialised decoders
(Llama, Qwen3, Phi-3) exported by optimum-intel as stateful models (KV cache in
ReadValue/Assign), their weights compressed by NNCF in each weight format, with the
tokenizer.json optimum writes beside them, and OpenVINO CPU's answers as goldens.

    venv/bin/pip install openvino nncf optimum-intel transformers torch
    venv/bin/python tools/make_llm_irs.py models/llm            # the committed set
    venv/bin/python tools/make_llm_irs.py /tmp/llm100m --big    # ~100M-parameter INT4 Llama

Each model directory holds openvino_model.xml/.bin, config.json, generation_config.json,
tokenizer.json (+ tokenizer_config.json) and expected.npz:
  prompt_ids      i64 [L]      the prompt, tokenized by the tokenizer
  prefill_logits  f32 [L, V]   logits of the prompt run on a fresh state
  tokens          i64 [N]      OpenVINO's greedy tokens (the loop openvino.genai runs)
  margins         f32 [N]      top-1 minus top-2 logit at each step (how safe the golden is)

OpenVINO runs with f32 inference precision, an f32 KV cache and dynamic quantization off:
the reference configuration under which its weight decompression is exact in f32.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

CORPUS = """
The quick brown fox jumps over the lazy dog. A small model reads the weights as they are stored.
Scatter operations write values into a tensor at the positions the indices give. Every layer of an
intermediate representation has ports, and every port has dimensions. Quantized networks keep their
weights in four or eight bits with a scale for each group of values along the reduction axis.
The decoder runs the prompt once, then one token per step, keeping keys and values in its cache.
""" * 4

ARCHS = ("llama", "qwen3", "phi3")
MODES = ("f32", "int4_asym", "int4_sym", "int8_asym", "int8_sym", "nf4", "fp8_e4m3", "mxfp4")
PROMPT = "The quick brown fox reads the weights"
NEW_TOKENS = 8
OV_CONFIG = {
    "INFERENCE_PRECISION_HINT": "f32",
    "KV_CACHE_PRECISION": "f32",
    "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0",
    "INFERENCE_NUM_THREADS": "2",
}


def tokenizer(vocab):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


def hf_model(arch, big):
    import torch
    import transformers as tf

    torch.manual_seed({"llama": 1, "qwen3": 2, "phi3": 3}[arch])
    if big:
        dims = dict(vocab_size=32000, hidden_size=768, intermediate_size=2048,
                    num_hidden_layers=8, num_attention_heads=12, num_key_value_heads=4)
    else:
        dims = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2)
    # A wide initialisation: random decoders with the usual 0.02 give near-uniform logits, whose
    # argmax a rounding difference could flip; the goldens record the margins.
    common = dict(max_position_embeddings=256, bos_token_id=1, eos_token_id=2,
                  initializer_range=0.02 if big else 0.3, tie_word_embeddings=False, **dims)
    if arch == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(**common))
    if arch == "qwen3":
        return tf.Qwen3ForCausalLM(tf.Qwen3Config(head_dim=dims["hidden_size"] // dims[
            "num_attention_heads"], **common))
    return tf.Phi3ForCausalLM(tf.Phi3Config(pad_token_id=0, **common))


def compress(ov_model, mode, big):
    import nncf

    if mode == "f32":
        return ov_model
    m = nncf.CompressWeightsMode
    kinds = {"int4_asym": m.INT4_ASYM, "int4_sym": m.INT4_SYM, "int8_asym": m.INT8_ASYM,
             "int8_sym": m.INT8_SYM, "nf4": m.NF4, "fp8_e4m3": m.FP8_E4M3, "mxfp4": m.MXFP4}
    kwargs = {}
    # The int8 modes quantize per output channel: no group size.
    if mode == "mxfp4":
        kwargs["group_size"] = 32
    elif not mode.startswith("int8"):
        kwargs["group_size"] = 128 if big else 16
        kwargs["ratio"] = 1.0
    return nncf.compress_weights(ov_model, mode=kinds[mode], **kwargs)


def greedy(compiled, prompt_ids, new_tokens, eos):
    """openvino.genai's greedy loop on one infer request: prefill, then one token per step;
    the mask grows by one column, positions count on, argmax takes the lowest id on ties."""
    request = compiled.create_infer_request()
    request.reset_state()
    n = len(prompt_ids)
    out = request.infer({
        "input_ids": np.array([prompt_ids], dtype=np.int64),
        "attention_mask": np.ones((1, n), dtype=np.int64),
        "position_ids": np.arange(n, dtype=np.int64)[None],
        "beam_idx": np.zeros(1, dtype=np.int32),
    })
    prefill = np.array(out["logits"][0], dtype=np.float32)
    logits = prefill[-1]
    tokens, margins = [], []
    for step in range(new_tokens):
        top = np.sort(logits)[-2:]
        margins.append(top[1] - top[0])
        token = int(np.argmax(logits))
        tokens.append(token)
        if token == eos:
            break
        out = request.infer({
            "input_ids": np.array([[token]], dtype=np.int64),
            "attention_mask": np.ones((1, n + step + 1), dtype=np.int64),
            "position_ids": np.array([[n + step]], dtype=np.int64),
            "beam_idx": np.zeros(1, dtype=np.int32),
        })
        logits = np.array(out["logits"][0, -1], dtype=np.float32)
    return prefill, np.array(tokens, dtype=np.int64), np.array(margins, dtype=np.float32)


def build(out_root, arch, modes, big):
    import openvino as ov
    from optimum.intel import OVModelForCausalLM

    hf_dir = os.path.join(out_root, f".hf_{arch}")
    model = hf_model(arch, big)
    model.save_pretrained(hf_dir)
    tok = tokenizer(model.config.vocab_size if not big else 8000)
    tok.save_pretrained(hf_dir)
    exported = OVModelForCausalLM.from_pretrained(hf_dir, export=True, stateful=True,
                                                  compile=False)
    export_dir = os.path.join(out_root, f".ov_{arch}")
    exported.save_pretrained(export_dir)
    core = ov.Core()
    prompt_ids = tok(PROMPT)["input_ids"]
    for mode in modes:
        name = f"{arch}_{mode}"
        dst = os.path.join(out_root, name)
        os.makedirs(dst, exist_ok=True)
        ov_model = compress(core.read_model(os.path.join(export_dir, "openvino_model.xml")),
                            mode, big)
        xml = os.path.join(dst, "openvino_model.xml")
        ov.save_model(ov_model, xml, compress_to_fp16=False)
        for f in ("config.json", "generation_config.json"):
            shutil.copy(os.path.join(export_dir, f), dst)
        tok.save_pretrained(dst)
        special = os.path.join(dst, "special_tokens_map.json")
        if os.path.exists(special):
            os.remove(special)
        compiled = core.compile_model(core.read_model(xml), "CPU", OV_CONFIG)
        prefill, tokens, margins = greedy(compiled, prompt_ids, NEW_TOKENS, eos=2)
        np.savez(os.path.join(dst, "expected.npz"), prompt_ids=np.array(prompt_ids, np.int64),
                 prefill_logits=prefill, tokens=tokens, margins=margins)
        size = os.path.getsize(os.path.join(dst, "openvino_model.bin"))
        print(f"{name}: {size} bytes of weights, prompt {len(prompt_ids)} tokens, "
              f"greedy {tokens.tolist()}, smallest margin {margins.min():.3g}")
    shutil.rmtree(hf_dir)
    shutil.rmtree(export_dir)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--big", action="store_true", help="one ~100M-parameter INT4_ASYM Llama")
    p.add_argument("--arch", choices=ARCHS, action="append")
    p.add_argument("--mode", choices=MODES, action="append")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.big:
        build(args.out, "llama", args.mode or ["int4_asym"], big=True)
        return
    for arch in args.arch or ARCHS:
        build(args.out, arch, args.mode or MODES, big=False)
    if not args.arch and not args.mode:
        names = sorted(d for d in os.listdir(args.out) if not d.startswith("."))
        with open(os.path.join(args.out, "manifest.json"), "w") as f:
            json.dump({"about": "Every LLM golden case: tests/llm.rs runs exactly these "
                                "directories and fails if one is missing or another appears "
                                "unlisted.", "goldens": names}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
