#!/usr/bin/env python3
# Measures the kernel rates the compute model is built on, on one CUDA GPU with PyTorch: GEMMs
# over a grid of shapes (BF16, and FP8 where the GPU has it), fused attention forward and
# backward, HBM-bound kernels (copy, add, GELU, LayerNorm, softmax, dropout), the gap between
# back-to-back kernels (eager and in a CUDA graph), and a 16384^3 BF16 GEMM held for several
# seconds (the sustained rate). GEMMs are timed from CUDA graphs, free of the CPU's launch rate.
# Writes one CSV row per measurement to the file named by the first argument (default
# gpu_kernels.csv). Usage: python3 tests/bench/gpu_kernels.py OUT.csv [--quick]
import csv
import itertools
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "gpu_kernels.csv"
QUICK = "--quick" in sys.argv
DEV = torch.device("cuda")
rows = []


def timed(fn, min_seconds=0.03, max_reps=200):
    """Mean seconds per call of fn over enough back-to-back calls to fill min_seconds."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    once = max(start.elapsed_time(end) / 1e3, 1e-6)
    reps = int(min(max_reps, max(3, min_seconds / once)))
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / reps


def graph_timed(fn, calls=20):
    """Mean seconds per call of fn, replayed from a CUDA graph of `calls` back-to-back calls, so
    that the CPU's launch rate (~10 us per eager PyTorch op) does not bound short kernels."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return timed(graph.replay) / calls


def record(kind, dtype, m, n, k, batch, seconds, flops=0.0, nbytes=0.0, note=""):
    rows.append(dict(kind=kind, dtype=dtype, m=m, n=n, k=k, batch=batch, seconds=f"{seconds:.9g}",
                     tflops=f"{flops / seconds / 1e12:.2f}" if flops else "",
                     gbps=f"{nbytes / seconds / 1e9:.1f}" if nbytes else "", note=note))
    print(rows[-1], flush=True)


def gemm_bf16(m, n, k, batch=1, note="linear"):
    # nn.Linear's layout: y[m,n] = x[m,k] W[n,k]^T (cuBLAS TN); batched as bmm.
    if batch == 1:
        x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=DEV, dtype=torch.bfloat16)
        fn = lambda: F.linear(x, w)
    else:
        x = torch.randn(batch, m, k, device=DEV, dtype=torch.bfloat16)
        w = torch.randn(batch, k, n, device=DEV, dtype=torch.bfloat16)
        fn = lambda: torch.bmm(x, w)
    record("gemm", "bf16", m, n, k, batch, graph_timed(fn), flops=2.0 * m * n * k * batch, note=note)


def gemm_fp8(m, n, k):
    x = torch.randn(m, k, device=DEV).to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device=DEV).to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device=DEV)
    fn = lambda: torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    record("gemm", "fp8", m, n, k, 1, graph_timed(fn), flops=2.0 * m * n * k, note="scaled_mm")


def attention(batch, heads, seq, dim):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        q, k, v = (torch.randn(batch, heads, seq, dim, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        causal_flops = 4.0 * batch * heads * seq * seq * dim / 2
        try:
            with sdpa_kernel(backend):
                fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                t_fwd = timed(fwd)
                out = fwd()
                grad = torch.randn_like(out)
                both = lambda: torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                                   (q, k, v), grad)
                t_both = timed(both)
        except RuntimeError as e:
            print(f"attention {name} {batch}x{heads}x{seq}x{dim}: {e}".splitlines()[0], flush=True)
            continue
        record("attention_fwd", "bf16", seq, seq, dim, batch * heads, t_fwd, flops=causal_flops, note=name)
        record("attention_bwd", "bf16", seq, seq, dim, batch * heads, t_both - t_fwd,
               flops=2.5 * causal_flops, note=name)


def memory_bound(elements):
    x = torch.randn(elements, device=DEV, dtype=torch.bfloat16)
    y = torch.randn(elements, device=DEV, dtype=torch.bfloat16)
    z = torch.empty_like(x)
    e2 = 2.0 * elements
    record("copy", "bf16", elements, 0, 0, 1, timed(lambda: z.copy_(x)), nbytes=2 * e2)
    record("add", "bf16", elements, 0, 0, 1, timed(lambda: torch.add(x, y, out=z)), nbytes=3 * e2)
    record("gelu", "bf16", elements, 0, 0, 1, timed(lambda: F.gelu(x)), nbytes=2 * e2)
    rows2d = x.view(-1, 8192)
    ln_w = torch.ones(8192, device=DEV, dtype=torch.bfloat16)
    record("layernorm", "bf16", elements, 0, 0, 1, timed(lambda: F.layer_norm(rows2d, (8192,), ln_w, ln_w)),
           nbytes=2 * e2)
    record("softmax", "bf16", elements, 0, 0, 1, timed(lambda: torch.softmax(rows2d, dim=-1)), nbytes=2 * e2)
    # Training-mode dropout: reads x, writes the output and a one-byte mask.
    record("dropout", "bf16", elements, 0, 0, 1, timed(lambda: torch.native_dropout(x, 0.1, True)),
           nbytes=2 * e2 + elements)


def launch_gap():
    x = torch.zeros(1, device=DEV)
    n = 2000

    def chain():
        for _ in range(n):
            x.add_(1)
    record("launch_gap", "fp32", 1, 0, 0, n, timed(chain, max_reps=5) / n, note="eager PyTorch, CPU-bound")
    record("launch_gap", "fp32", 1, 0, 0, n, graph_timed(lambda: x.add_(1), calls=n), note="CUDA graph")


def sustained(size=16384, seconds=8.0):
    a = torch.randn(size, size, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=DEV, dtype=torch.bfloat16)
    flops = 2.0 * size ** 3
    begin = time.time()
    last = 0.0
    while time.time() - begin < seconds:
        last = timed(lambda: a @ b, min_seconds=0.5)
    record("gemm_sustained", "bf16", size, size, size, 1, last, flops=flops, note=f"after {seconds:.0f} s")


def main():
    props = torch.cuda.get_device_properties(0)
    print(f"{props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}", flush=True)
    try:
        print(subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit",
                              "--format=csv"], capture_output=True, text=True).stdout, flush=True)
    except OSError:
        pass
    sizes_m = [512, 2048, 8192] if QUICK else [256, 512, 1024, 2048, 4096, 8192, 16384]
    sizes_nk = [1024, 4096, 16384] if QUICK else [1024, 1536, 2304, 4096, 6656, 12288, 16384]
    for m, n, k in itertools.product(sizes_m, sizes_nk, sizes_nk):
        gemm_bf16(m, n, k, note="grid")
    # Sizes off the tile grid, and layer shapes: GPT-3 175B at TP 8 (s 2048), Llama 3 405B at
    # TP 8 (s 8192), each as forward, input-gradient and weight-gradient GEMM.
    for m, n, k in [(2048, 1000, 4096), (2048, 3000, 4096), (3000, 5000, 3000), (2048, 4608, 12288),
                    (2048, 12288, 1536), (2048, 6144, 12288), (2048, 12288, 6144), (12288, 4608, 2048),
                    (8192, 2304, 16384), (8192, 16384, 2048), (8192, 13312, 16384), (8192, 16384, 6656),
                    (16384, 6656, 8192), (8192, 16032, 16384)]:
        gemm_bf16(m, n, k, note="layer")
    # Attention without a fused kernel: per-head score and context GEMMs.
    for heads, seq, dim in [(16, 2048, 128), (12, 2048, 128), (32, 1024, 64), (16, 8192, 128)]:
        gemm_bf16(seq, seq, dim, heads, note="scores")
        gemm_bf16(seq, dim, seq, heads, note="context")
    if props.major >= 9 or (props.major, props.minor) == (8, 9):
        for m, n, k in itertools.product([2048, 8192] if QUICK else [1024, 2048, 4096, 8192, 16384],
                                         [2304, 6656, 16384], [2048, 6656, 16384]):
            try:
                gemm_fp8(m, n, k)
            except (RuntimeError, TypeError) as e:
                print(f"fp8 GEMM not run: {e}".splitlines()[0], flush=True)
                break
    for batch, heads, seq, dim in [(1, 16, 8192, 128), (1, 16, 2048, 128), (4, 12, 2048, 128),
                                   (2, 32, 4096, 64), (1, 32, 2048, 64), (1, 16, 4096, 256)]:
        attention(batch, heads, seq, dim)
    memory_bound(1 << 28 if QUICK else 1 << 30)
    launch_gap()
    sustained(seconds=2.0 if QUICK else 8.0)


if __name__ == "__main__":
    try:
        main()
    finally:
        if rows:
            with open(OUT, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
                w.writeheader()
                w.writerows(rows)
            print(f"{len(rows)} rows -> {OUT}")
