#!/usr/bin/python3
"""An independent PyTorch implementation of the reference Token Turing Machine.

It follows scenic's projects/token_turing/model.py (JAX/Flax) module by module,
reading the Flax parameter names straight from a safetensors checkpoint, and
is the oracle for the Go port's parity tests and the PyTorch speed baseline.

  trace: ttm_reference.py trace --weights W.safetensors --inputs IN.safetensors --out OUT.safetensors [--float32]
  bench: ttm_reference.py bench --weights W.safetensors [--steps N] [--threads T]

Only Debian's python3-torch and python3-numpy are needed; safetensors files
are read and written with the few lines below.
"""
import argparse
import json
import math
import statistics
import struct
import sys
import time

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", (name, e["dtype"])
        b, end = e["data_offsets"]
        tensors[name] = np.frombuffer(data[b:end], dtype="<f4").reshape(e["shape"])
    return meta, tensors


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    js = json.dumps(header).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))


class Params:
    """Flax parameters under a prefix, as torch tensors of one dtype."""

    def __init__(self, tensors, prefix, dtype):
        self.t = {k[len(prefix):]: torch.tensor(np.array(v), dtype=dtype)
                  for k, v in tensors.items() if k.startswith(prefix)}
        self.used = set()

    def __call__(self, path):
        self.used.add(path)
        return self.t[path]


def gelu(x):  # flax.linen.gelu, approximate=True
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(p, path, x, eps):  # flax.linen.LayerNorm
    mean = x.mean(-1, keepdim=True)
    var = torch.clamp((x * x).mean(-1, keepdim=True) - mean * mean, min=0)
    return (x - mean) * torch.rsqrt(var + eps) * p(path + "/scale") + p(path + "/bias")


def dense(p, path, x):
    return x @ p(path + "/kernel") + p(path + "/bias")


def mlp_block(p, path, x):  # scenic attention_layers.MlpBlock
    return dense(p, path + "/Dense_1", gelu(dense(p, path + "/Dense_0", x)))


def mha(p, path, q_in, kv_in):  # flax.linen.MultiHeadDotProductAttention, no mask
    wq = p(path + "/query/kernel")  # (d, H, dh)
    heads, dh = wq.shape[1], wq.shape[2]
    q = torch.einsum("nd,dhk->hnk", q_in, wq) + p(path + "/query/bias")[:, None, :]
    k = torch.einsum("nd,dhk->hnk", kv_in, p(path + "/key/kernel")) + p(path + "/key/bias")[:, None, :]
    v = torch.einsum("nd,dhk->hnk", kv_in, p(path + "/value/kernel")) + p(path + "/value/bias")[:, None, :]
    q = q / math.sqrt(dh)
    w = torch.softmax(q @ k.transpose(1, 2), dim=-1)
    o = w @ v  # (H, nq, dh)
    return torch.einsum("hnk,hkd->nd", o, p(path + "/out/kernel")) + p(path + "/out/bias")


def token_learner_v11(p, path, x, eps):  # scenic TokenLearnerModuleV11
    sel = mlp_block(p, path + "/token_masking", layer_norm(p, path + "/LayerNorm_0", x, eps))  # (N, K)
    sel = torch.softmax(sel.T, dim=-1)  # (K, N)
    return sel @ x


def token_learner_mha(p, path, x):
    return mha(p, path + "/attn", p(path + "/tokens")[0], x)


def pool(x, k):  # the Go port's parameter-free summariser: adaptive average pooling over rows
    return torch.nn.functional.adaptive_avg_pool1d(x.T[None], k)[0].T


def add_erase_write(p, path, memory, control, eps):  # TokenAddEraseWrite
    sel = mlp_block(p, path + "/MlpBlock_0", layer_norm(p, path + "/LayerNorm_0", memory, eps))  # (m, Kw)
    sel = torch.softmax(sel.T, dim=-1)  # (Kw, m)
    et = layer_norm(p, path + "/LayerNorm_1", control, eps).T  # (d, r)
    et = mlp_block(p, path + "/MlpBlock_1", et).T  # (Kw, d)
    et = mlp_block(p, path + "/MlpBlock_2", et)
    wet = torch.prod(1 - sel[:, :, None] * et[:, None, :], dim=0)  # (m, d)
    out = memory * wet
    at = layer_norm(p, path + "/LayerNorm_2", control, eps).T
    at = mlp_block(p, path + "/MlpBlock_3", at).T
    at = mlp_block(p, path + "/MlpBlock_4", at)
    wat = torch.mean(1 - sel[:, :, None] * at[:, None, :], dim=0)
    return out + wat


def unit(p, c, memory, inputs):
    """TokenTuringMachineUnit.__call__ for one example."""
    eps = c["layernorm_eps"]
    mode, pu = c["memory_mode"], c["processing_unit"]
    r, m = c["process_size"], c["memory_size"]
    all_tokens = torch.cat([memory, inputs], 0)
    if c["use_positional_embedding"]:
        all_tokens = all_tokens + p("read_pos_embed/pos_embedding")[0]
    if mode in ("TL", "TL-AddErase"):
        z = token_learner_v11(p, "TokenLearnerModuleV11_0", all_tokens, eps)
    elif mode == "TL-MHA":
        z = token_learner_mha(p, "TokenLearnerMHA_0", all_tokens)
    elif mode == "pool":
        z = pool(all_tokens, r)
    else:
        raise ValueError(mode)

    if pu == "transformer":
        x = z + p("Encoder_0/posembed_input/pos_embedding")[0]
        for l in range(c["num_layers"]):
            b = "Encoder_0/encoderblock_%d" % l
            y = layer_norm(p, b + "/LayerNorm_0", x, eps)
            x = x + mha(p, b + "/MultiHeadDotProductAttention_0", y, y)
            y = layer_norm(p, b + "/LayerNorm_1", x, eps)
            x = x + mlp_block(p, b + "/MlpBlock_0", y)
        out = layer_norm(p, "Encoder_0/encoder_norm", x, eps)
    elif pu == "mixer":
        x = z
        for l in range(c["num_layers"]):
            b = "MixerBlock_%d" % l
            y = layer_norm(p, b + "/LayerNorm_0", x, eps)
            x = x + mlp_block(p, b + "/token_mixing", y.T).T
            y = layer_norm(p, b + "/LayerNorm_1", x, eps)
            x = x + mlp_block(p, b + "/channel_mixing", y)
        out = layer_norm(p, "LayerNorm_0", x, eps)
    elif pu == "mlp":
        x = z
        for l in range(c["num_layers"]):
            x = layer_norm(p, "LayerNorm_%d" % l, x, eps)
            x = mlp_block(p, "MlpBlock_%d" % l, x)
        out = layer_norm(p, "LayerNorm_%d" % c["num_layers"], x, eps)
    else:
        raise ValueError(pu)

    mem_out = torch.cat([memory, inputs, out], 0)
    if c["use_positional_embedding"]:
        mem_out = mem_out + p("write_pos_embed/pos_embedding")[0]
    if mode == "TL":
        new_memory = token_learner_v11(p, "TokenLearnerModuleV11_1", mem_out, eps)
    elif mode == "TL-MHA":
        new_memory = token_learner_mha(p, "TokenLearnerMHA_1", mem_out)
    elif mode == "TL-AddErase":
        new_memory = add_erase_write(p, "TokenAddEraseWrite_0", memory, out, eps)
    else:
        new_memory = pool(mem_out, m)
    return new_memory, out


def load(weights, dtype):
    meta, tensors = read_safetensors(weights)
    c = json.loads(meta["ttm.config"])
    return c, Params(tensors, "ttm/", dtype)


def cmd_trace(a):
    dtype = torch.float32 if a.float32 else torch.float64
    c, p = load(a.weights, dtype)
    _, ins = read_safetensors(a.inputs)
    inputs = torch.tensor(np.array(ins["inputs"]), dtype=dtype)
    if "memory" in ins:
        memory = torch.tensor(np.array(ins["memory"]), dtype=dtype)
    else:
        memory = torch.zeros(c["memory_size"], c["dim"], dtype=dtype)
    outs, mems = [], []
    with torch.no_grad():
        for t in range(inputs.shape[0]):
            if c.get("no_memory"):
                memory = torch.zeros_like(memory)
            memory, out = unit(p, c, memory, inputs[t])
            outs.append(out)
            mems.append(memory)
    unused = set(p.t) - p.used
    # write_pos_embed exists but is unused in TL-AddErase, exactly as in the reference.
    unused.discard("write_pos_embed/pos_embedding")
    if unused:
        sys.exit("parameters never used: %s" % sorted(unused))
    write_safetensors(a.out, {
        "outputs": torch.stack(outs).numpy(),
        "memories": torch.stack(mems).numpy(),
        "memory": memory.numpy(),
    })


def cmd_bench(a):
    torch.set_num_threads(a.threads)
    c, p = load(a.weights, torch.float32)
    memory = torch.zeros(c["memory_size"], c["dim"])
    x = torch.randn(c["input_tokens"], c["dim"])
    times = []
    with torch.no_grad():
        for i in range(a.steps + 10):
            t0 = time.perf_counter()
            memory, out = unit(p, c, memory, x)
            if i >= 10:
                times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({
        "framework": "pytorch %s eager" % torch.__version__, "threads": a.threads, "steps": a.steps,
        "median_ms": statistics.median(times) * 1e3,
        "p99_ms": times[int(0.99 * (len(times) - 1))] * 1e3,
    }))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("trace")
    t.add_argument("--weights", required=True)
    t.add_argument("--inputs", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--float32", action="store_true")
    b = sub.add_parser("bench")
    b.add_argument("--weights", required=True)
    b.add_argument("--steps", type=int, default=200)
    b.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    {"trace": cmd_trace, "bench": cmd_bench}[a.cmd](a)


if __name__ == "__main__":
    main()
