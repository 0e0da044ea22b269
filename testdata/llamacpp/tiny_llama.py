#!/usr/bin/env python3
"""Writes a tiny llama-architecture model as a GGUF file, random weights.

Usage: tiny_llama.py OUT.gguf [--seed N] [--layers N]

The file is a complete model for llama.cpp's `llama` architecture: the
hyperparameters it reads (context, embedding and feed-forward lengths, block
and head counts, RMS-norm epsilon, RoPE dimensions), a SentencePiece-style
vocabulary (`tokenizer.ggml.model = "llama"`: control tokens <unk>, <s>,
</s>, the 256 byte tokens <0x00>..<0xFF> its byte fallback looks up, and a
few hundred word pieces with their prefixes, with scores), a chat template, and every tensor of
each block in float32. The weights are random (seeded): the model loads,
tokenizes and generates for real, and what it says is noise.

Used by the llama.cpp server tests (e2e/llamacpp); needs the `gguf` and
`numpy` packages (scripts/llama-deps.sh installs them with the server).
"""

import argparse

import numpy as np
import gguf

N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 2
N_FF = 128
N_CTX = 256

# Word pieces of the vocabulary besides the control and byte tokens ("▁" is
# SentencePiece's word start): digits, letters, and the words of the
# questions the tests ask, so that real text tokenizes into pieces longer
# than single bytes.
WORDS = (
    "what is the a an of to and plus minus times answer with number only "
    "question model tiny llama server test hello world yes no one two three "
    "four five six seven eight nine ten"
).split()
PIECES = (
    ["▁"]
    + [str(d) for d in range(10)]
    + ["▁" + str(d) for d in range(10)]
    + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    + ["?", "!", ".", ",", "+", "-", "=", ":"]
    + ["▁" + w for w in WORDS]
    + ["▁" + w.capitalize() for w in WORDS]
)

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def vocabulary():
    tokens, scores, types = [], [], []

    def add(text, score, typ):
        tokens.append(text)
        scores.append(score)
        types.append(typ)

    add("<unk>", 0.0, gguf.TokenType.UNKNOWN)
    add("<s>", 0.0, gguf.TokenType.CONTROL)
    add("</s>", 0.0, gguf.TokenType.CONTROL)
    for b in range(256):
        add(f"<0x{b:02X}>", 0.0, gguf.TokenType.BYTE)
    # The tokenizer merges two adjacent pieces only into a piece of the
    # vocabulary: every word's prefixes are pieces too ("▁W", "▁Wh",
    # "▁Wha", "▁What"), longer ones scoring higher, so that the merges reach
    # the whole word.
    seen = set()
    i = 0
    for p in PIECES:
        for k in range(1, len(p) + 1):
            piece = p[:k]
            if piece in seen:
                continue
            seen.add(piece)
            add(piece, -1000.0 + 10.0 * len(piece) - i * 1e-3, gguf.TokenType.NORMAL)
            i += 1
    return tokens, scores, types


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=2)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    tokens, scores, types = vocabulary()
    n_vocab = len(tokens)
    head_dim = N_EMBD // N_HEAD

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("cairn-tiny-llama")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(n_vocab)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(args.layers)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_chat_template(CHAT_TEMPLATE)

    def rand(*shape):
        # numpy's shape is GGUF's reversed: (rows = outputs, columns = inputs).
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    w.add_tensor("token_embd.weight", rand(n_vocab, N_EMBD))
    w.add_tensor("output_norm.weight", ones(N_EMBD))
    w.add_tensor("output.weight", rand(n_vocab, N_EMBD))
    for i in range(args.layers):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", ones(N_EMBD))
        w.add_tensor(b + "attn_q.weight", rand(N_HEAD * head_dim, N_EMBD))
        w.add_tensor(b + "attn_k.weight", rand(N_HEAD_KV * head_dim, N_EMBD))
        w.add_tensor(b + "attn_v.weight", rand(N_HEAD_KV * head_dim, N_EMBD))
        w.add_tensor(b + "attn_output.weight", rand(N_EMBD, N_HEAD * head_dim))
        w.add_tensor(b + "ffn_norm.weight", ones(N_EMBD))
        w.add_tensor(b + "ffn_gate.weight", rand(N_FF, N_EMBD))
        w.add_tensor(b + "ffn_up.weight", rand(N_FF, N_EMBD))
        w.add_tensor(b + "ffn_down.weight", rand(N_EMBD, N_FF))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
