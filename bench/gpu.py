"""Speed of the OpenCL backend (issue 4).

    python bench/gpu.py [--only gpu|pocl] [--device nvidia] [--json OUT] [--quick]

Part "gpu" (an NVIDIA GPU with torch on CUDA beside it):
  1. the spec's sample kernel, f32, N = 1,000,000, against torch (two bmm and an add) and
     against a device-to-device copy of the bytes the kernel must move, measured in this run;
  2. batched GEMM 32x32x32, f64, N = 100,000, against torch.bmm.
Part "pocl": the same two kernels on pocl against the reference interpreter (smaller N).
Kernel times are medians of OpenCL profiling events; build time is reported separately.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import tlgpu  # noqa: E402
import tlinterp  # noqa: E402
from tlgpu.lowering.config import LoweringConfig  # noqa: E402

# the spec's sample kernel
SAMPLE = (Path(__file__).resolve().parents[1] / "examples" / "fused_kernel.tl").read_text()

BGEMM = """
func @bgemm(%A: memref<f64x32x32x?>, %B: memref<f64x32x32x?>, %C: memref<f64x32x32x?>) {
  %g = group_id
  %a = subview %A[:,:,%g] : memref<f64x32x32x?>
  %b = subview %B[:,:,%g] : memref<f64x32x32x?>
  %c = subview %C[:,:,%g] : memref<f64x32x32x?>
  gemm.n.n 1.0, %a, %b, 0.0, %c : f64, memref<f64x32x32>, memref<f64x32x32>, f64,
    memref<f64x32x32>
}
"""


def program(src: str, name: str):
    return tlinterp.check(tlinterp.parse(src, name))


def sample_args(n: int, rng) -> dict:
    return {"alpha": np.float32(0.5),
            "A": rng.standard_normal((n, 16, 8), dtype=np.float32),
            "B": rng.standard_normal((8, 8), dtype=np.float32),
            "C": rng.standard_normal((8, 16), dtype=np.float32),
            "D": rng.standard_normal((16, 16, n), dtype=np.float32)}


def bgemm_args(n: int, rng) -> dict:
    return {k: rng.standard_normal((32, 32, n)) for k in "ABC"}


def sample_reference(a: dict) -> np.ndarray:
    t = np.einsum("eik,jk->eij", a["A"].astype(np.float64), a["B"])
    return a["D"] + a["alpha"] * np.einsum("eij,jl->ile", t, a["C"])


def bgemm_reference(a: dict) -> np.ndarray:
    return np.einsum("ike,kje->ije", a["A"], a["B"])


class OpenCLTimer:
    """Build once, bind once, then time only the kernel with profiling events."""

    def __init__(self, prog, fn_name: str, args: dict, device: str, config=None,
                 groups: int | None = None):
        import pyopencl as cl

        self.cl = cl
        t0 = time.perf_counter()
        self.kernel = tlgpu.compile(prog, fn_name, device=device, config=config)
        self.build_s = time.perf_counter() - t0
        self.binding = self.kernel.bind(args, groups)
        self.kernel.launch(self.binding)  # the first launch's result is the one to check
        self.first = self.binding.read()  # (D += ... accumulates over launches)

    @property
    def wg(self) -> str:
        return "x".join(str(w) for w in self.kernel.work_group_size)

    def time(self, reps: int) -> float:
        self.kernel.launch(self.binding)  # warm-up
        return statistics.median(self.kernel.launch(self.binding).seconds for _ in range(reps))

    def result(self) -> dict:
        return self.first

    def copy_time(self, nbytes: int, reps: int) -> float:
        cl = self.cl
        ctx, q = self.kernel.context, self.kernel.queue
        src = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
        dst = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
        cl.enqueue_fill_buffer(q, src, np.float32(1), 0, nbytes).wait()
        cl.enqueue_copy(q, dst, src).wait()
        times = []
        for _ in range(reps):
            ev = cl.enqueue_copy(q, dst, src)
            ev.wait()
            times.append((ev.profile.end - ev.profile.start) * 1e-9)
        return statistics.median(times)


def torch_time(fn, reps: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e-3)
    return statistics.median(times)


def check(name: str, got: np.ndarray, ref: np.ndarray, tol: float) -> float:
    err = float(np.max(np.abs(got - ref)) / max(1.0, float(np.max(np.abs(ref)))))
    if not err <= tol:
        raise SystemExit(f"{name}: wrong result (relative error {err:.2e})")
    return err


def part_gpu(device: str, quick: bool, config) -> list[dict]:
    import torch

    rows = []
    rng = np.random.default_rng(1)
    reps = 5 if quick else 20
    n = 100_000 if quick else 1_000_000
    a = sample_args(n, rng)
    t = OpenCLTimer(program(SAMPLE, "sample.tl"), "fused_kernel", a, device, config)
    k = t.time(reps)
    moved = n * (16 * 8 + 2 * 16 * 16) * 4  # A read, D read and written
    copy = t.copy_time(moved // 2, reps)  # a copy of moved/2 bytes reads and writes `moved`
    err = check("sample", t.result()["D"][:, :, :1000], sample_reference(
        {**a, "A": a["A"][:1000], "D": a["D"][:, :, :1000]}), 1e-4)
    dev = torch.device("cuda")
    A = torch.from_numpy(a["A"].transpose(0, 2, 1).copy()).to(dev)  # (n, 8, 16) row-major
    Bt = torch.from_numpy(a["B"]).to(dev).expand(n, 8, 8)
    C = torch.from_numpy(a["C"].T.copy()).to(dev).expand(n, 16, 8)
    D = torch.from_numpy(np.ascontiguousarray(a["D"].transpose(2, 1, 0))).to(dev)
    # column-major A (16x8) is row-major A^T (8x16): D^T += alpha C^T (B A^T)
    tt = torch_time(lambda: D.add_(torch.bmm(C, torch.bmm(Bt, A)), alpha=0.5), reps)
    rows.append(dict(part="gpu", case=f"sample f32 N={n}", device=t.kernel.device_name,
                     kernel_s=k, baseline="torch 2x bmm + add", baseline_s=tt,
                     speedup=tt / k, copy_s=copy, copy_fraction=copy / k,
                     bandwidth_GBs=moved / k / 1e9, copy_GBs=moved / copy / 1e9,
                     build_s=t.build_s, wg=t.wg, max_rel_err=err,
                     f32_denormals=t.kernel.device.keeps_f32_denormals))
    A = Bt = C = D = t = None  # free GPU memory before part 2
    n = 10_000 if quick else 100_000
    a = bgemm_args(n, rng)
    t = OpenCLTimer(program(BGEMM, "bgemm.tl"), "bgemm", a, device, config, groups=n)
    k = t.time(reps)
    err = check("bgemm", t.result()["C"][:, :, :500],
                bgemm_reference({x: a[x][:, :, :500] for x in "AB"}), 1e-12)
    At = torch.from_numpy(np.ascontiguousarray(a["A"].transpose(2, 1, 0))).to(dev)
    Bt = torch.from_numpy(np.ascontiguousarray(a["B"].transpose(2, 1, 0))).to(dev)
    out = torch.empty_like(At)
    tt = torch_time(lambda: torch.bmm(Bt, At, out=out), reps)  # (AB)^T = B^T A^T
    rows.append(dict(part="gpu", case=f"gemm 32x32x32 f64 N={n}", device=t.kernel.device_name,
                     kernel_s=k, baseline="torch.bmm", baseline_s=tt, speedup=tt / k,
                     gflops=2 * 32**3 * n / k / 1e9, build_s=t.build_s,
                     wg=t.wg, max_rel_err=err))
    return rows


def interp_time(prog, fn: str, args: dict, groups: int, reps: int) -> float | None:
    try:
        from tlinterp.interp import run
    except ImportError:
        return None
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run(prog, args, func=fn, groups=groups, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def part_pocl(quick: bool, config) -> list[dict]:
    rows = []
    rng = np.random.default_rng(2)
    for src, name, fn, make, n in ((SAMPLE, "sample f32", "fused_kernel", sample_args,
                                    2_000 if quick else 20_000),
                                   (BGEMM, "gemm 32x32x32 f64", "bgemm", bgemm_args,
                                    500 if quick else 5_000)):
        prog = program(src, name)
        a = make(n, rng)
        t = OpenCLTimer(prog, fn, a, "pocl", config, groups=n)
        k = t.time(3)
        base = interp_time(prog, fn, a, n, 3)
        rows.append(dict(part="pocl", case=f"{name} N={n}", device=t.kernel.device_name,
                         kernel_s=k, baseline="interpreter (check=False)", baseline_s=base,
                         speedup=None if base is None else base / k, build_s=t.build_s,
                         wg=t.wg))
    return rows


def comparison_parser(doc: str, baseline: str, per: str) -> argparse.ArgumentParser:
    """The options of a bench that times the default lowering against a --baseline config
    (`baseline` by default): --device, --baseline, --bytes (operand bytes per `per`), --reps,
    --json; the bench adds its own after them."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--baseline", default=baseline, metavar="'K=V K=V'",
                    help="the config to compare the default with")
    ap.add_argument("--bytes", type=float, default=4e8, help=f"operand bytes per {per}")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", metavar="OUT")
    return ap


def write_json(rows: list[dict], path: str | None) -> None:
    """--json OUT: the benchmarks' rows as one JSON list (nothing when OUT is not given)."""
    if path:
        with open(path, "w") as f:
            json.dump(rows, f, indent=1)


def config_text(changed: dict) -> str:
    """The lowering settings a run changed, as `KEY=VALUE KEY=VALUE`."""
    return " ".join(f"{k}={v}" for k, v in changed.items())


def show(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="tlgpu speed (median kernel times; build excluded)")
    for col in ("case", "device", "wg", "kernel", "baseline", "baseline time", "speed-up",
                "of copy BW", "GB/s", "build"):
        table.add_column(col)
    for r in rows:
        def ms(x):
            return "-" if x is None else f"{x * 1e3:.3f} ms"
        table.add_row(r["case"], r["device"], r["wg"], ms(r["kernel_s"]), r["baseline"],
                      ms(r["baseline_s"]),
                      "-" if r.get("speedup") is None else f"{r['speedup']:.2f}x",
                      f"{r['copy_fraction']:.0%}" if "copy_fraction" in r else "-",
                      f"{r['bandwidth_GBs']:.0f} (copy {r['copy_GBs']:.0f})"
                      if "bandwidth_GBs" in r else
                      (f"{r['gflops']:.0f} GFLOP/s" if "gflops" in r else "-"),
                      f"{r['build_s']:.2f} s")
    Console(width=200).print(table)
    for r in rows:
        if r.get("f32_denormals") is False:
            print(f"note: {r['device']} flushes f32 denormals (no CL_FP_DENORM): f32 results "
                  "with subnormal values differ from the interpreter there")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("gpu", "pocl"))
    ap.add_argument("--device", default="nvidia", help="OpenCL device of the gpu part")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--quick", action="store_true", help="smaller N (smoke test)")
    ap.add_argument("--lowering", action="append", default=[], metavar="KEY=VALUE")
    ns = ap.parse_args(argv)
    config = LoweringConfig.from_overrides(ns.lowering)
    rows = []
    if ns.only in (None, "gpu"):
        rows += part_gpu(ns.device, ns.quick, config)
    if ns.only in (None, "pocl"):
        rows += part_pocl(ns.quick, config)
    show(rows)
    write_json(rows, ns.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
