"""Attention on the GPU: our v0.4 kernels through the OpenCL lowering against PyTorch's
scaled_dot_product_attention, measured in the same run (issue 43 item 7).

    python bench/attention_gpu.py [--device nvidia] [--T 2048 8192] [--H 4] [--repeat 10]

Kernels: bench/flash_attention.tl (ours, f32) and bench/flash_attention_f16.tl (the same
online-softmax flash attention with f16 Q, K, V and f32 accumulation, head dimension 64, as
tinytc's flash-attention example expands it); the `-split` kinds (bench/flash_attention_split.tl
and its f16 twin) cut the keys of each (query block, head) into S ranges, one work-group each,
and join the partial results in a second kernel (their time is the sum of both): the
parallelism one work-group per query block lacks at small T x H. Baselines, on the same
shapes (batch 1, H heads, T tokens, D = 64) and the same GPU: torch's math backend
(SDPBackend.MATH) and its fastest backend (the best of flash, memory-efficient and cuDNN that
accepts the inputs). Times are medians of --repeat runs: OpenCL profiling events for ours,
CUDA events for torch. The table gives each time, ours / baseline ratios (speed-up: baseline
time / our time), the achieved TFLOP/s (4 T^2 D H flops) and its fraction of the device's f16
tensor-core peak (--peak, dense TFLOP/s; default the H200's 989). The outputs are checked
against torch's math backend in f32.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

HERE = Path(__file__).resolve().parent
KERNELS = {"f32": HERE / "flash_attention.tl", "f16": HERE / "flash_attention_f16.tl",
           "f32-split": HERE / "flash_attention_split.tl",
           "f16-split": HERE / "flash_attention_split_f16.tl"}
D, ROWS = 64, 64  # the kernels' head dimension and query rows per work-group
KEY_BLOCK = 32  # the kernels' keys per step
# the split kernels cut each (query block, head) into S key ranges until there are this many
# work-groups of the first kernel (an H200 has 132 multiprocessors; two warps per group)
SPLIT_GROUPS = 1024


def splits(T: int, H: int) -> int:
    """Key ranges per (query block, head): the smallest power of two giving SPLIT_GROUPS
    work-groups, with at least four key blocks per range."""
    blocks = -(-T // ROWS) * H
    s = 1
    while blocks * s < SPLIT_GROUPS and T // (KEY_BLOCK * s * 2) >= 4:
        s *= 2
    return s


def _inputs(T: int, H: int, dtype, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((T, D, H)).astype(dtype) for _ in range(3))
    return {"Q": q, "K": k, "V": v, "O": np.zeros((T, D, H), np.float32),
            "scale": np.float32(1 / np.sqrt(D))}


def _timed(kernel, args: dict, groups: int, repeat: int) -> tuple[float, dict]:
    binding = kernel.bind(args, groups=groups)
    kernel.launch(binding)  # warm-up
    times = [kernel.launch(binding).seconds for _ in range(repeat)]
    return statistics.median(times), binding.read()


def ours(kind: str, args: dict, device: str, repeat: int) -> tuple[float, np.ndarray, str]:
    """(seconds, O, how): one kernel, or for a split kind the sum of its two kernels' medians
    (the partial results pass from the first to the second through the host, untimed)."""
    import tlgpu
    from tlinterp.front.pipeline import parse

    path = KERNELS[kind]
    program = parse(path.read_text(), str(path), lang="v0.4")
    T, _, H = args["Q"].shape
    blocks = -(-T // ROWS) * H
    if not kind.endswith("-split"):
        t, out = _timed(tlgpu.compile(program, device=device), args, blocks, repeat)
        return t, out["O"], "1 kernel"
    S = splits(T, H)
    part = tlgpu.compile(program, "attention_part", device=device)
    join = tlgpu.compile(program, "attention_join", device=device)
    scratch = {"P": np.zeros((T, D, H * S), np.float32),
               "M": np.zeros((T, H * S), np.float32), "L": np.zeros((T, H * S), np.float32)}
    t1, out1 = _timed(part, {**{k: args[k] for k in ("Q", "K", "V", "scale")}, **scratch,
                             "S": np.int64(S)}, blocks * S, repeat)
    t2, out2 = _timed(join, {"P": out1["P"], "M": out1["M"], "L": out1["L"], "O": args["O"],
                             "S": np.int64(S)}, blocks, repeat)
    return t1 + t2, out2["O"], f"S={S}: {t1 * 1e3:.3f}+{t2 * 1e3:.3f} ms"


def _torch_time(fn, repeat: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def torch_baselines(args: dict, dtype, repeat: int) -> tuple[float, float, str, np.ndarray]:
    """(math backend seconds, fastest backend seconds, its name, math output T x D x H)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def tensor(x):  # T x D x H -> 1 x H x T x D
        return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None].to(
            "cuda", dtype)

    q, k, v = (tensor(args[n]) for n in ("Q", "K", "V"))
    scale = float(args["scale"])

    def call(backend):
        def fn():
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, scale=scale)
        return fn

    with sdpa_kernel([SDPBackend.MATH]):
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=scale)
    ref = ref[0].permute(1, 2, 0).cpu().numpy()
    t_math = _torch_time(call(SDPBackend.MATH), repeat)
    best, best_name = float("inf"), "none"
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                    getattr(SDPBackend, "CUDNN_ATTENTION", None)):
        if backend is None:
            continue
        try:
            t = _torch_time(call(backend), repeat)
        except RuntimeError:  # the backend does not take these inputs (f32 for flash, ...)
            continue
        if t < best:
            best, best_name = t, backend.name.lower()
    return t_math, best, best_name, ref


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="nvidia", help="OpenCL device string (default nvidia)")
    ap.add_argument("--T", type=int, nargs="+", default=[2048, 8192], help="token counts")
    ap.add_argument("--H", type=int, default=4, help="heads (default 4)")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per side (median)")
    ap.add_argument("--kinds", nargs="+", default=["f32", "f32-split", "f16", "f16-split"],
                    choices=sorted(KERNELS))
    ap.add_argument("--peak", type=float, default=989.0,
                    help="the device's dense f16 tensor-core peak in TFLOP/s (H200: 989)")
    ns = ap.parse_args(argv)
    if ns.H < 1 or ns.repeat < 1 or min(ns.T) < ROWS:
        ap.error("--H and --repeat must be positive, --T at least 16")
    try:
        import torch
    except ImportError:
        ap.error("needs torch with CUDA beside the OpenCL device")
    if not torch.cuda.is_available():
        ap.error("torch sees no CUDA device")
    print(f"attention, D={D}, H={ns.H}, device {ns.device}, medians of {ns.repeat} runs")
    header = (f"{'kernel':9} {'T':>6} {'ours ms':>9} {'math ms':>9} {'fast ms':>9} "
              f"{'vs math':>8} {'vs fast':>8} {'TFLOP/s':>8} {'of peak':>8} {'max err':>9}"
              "  fast, ours")
    print(header)
    for kind in ns.kinds:
        dtype = np.float16 if kind.startswith("f16") else np.float32
        tdtype = torch.float16 if kind.startswith("f16") else torch.float32
        for T in ns.T:
            args = _inputs(T, ns.H, dtype)
            t_ours, out, how = ours(kind, args, ns.device, ns.repeat)
            t_math, t_fast, fast_name, ref = torch_baselines(args, tdtype, ns.repeat)
            flops = 4.0 * T * T * D * ns.H
            tflops = flops / t_ours / 1e12
            err = float(np.abs(out - ref).max())
            print(f"{kind:9} {T:6d} {t_ours * 1e3:9.3f} {t_math * 1e3:9.3f} {t_fast * 1e3:9.3f} "
                  f"{t_math / t_ours:7.2f}x {t_fast / t_ours:7.2f}x {tflops:8.2f} "
                  f"{tflops / ns.peak:7.2%} {err:9.2e}  {fast_name}, {how}", flush=True)
    print("vs math / vs fast: the baseline's time over ours (above 1: ours is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
