"""Batched f64 GEMMs of discontinuous-Galerkin shapes: the default lowering against a baseline
config, torch.bmm and a device copy, all measured in one run.

    python bench/gemm_shapes.py [--device nvidia] [--baseline 'narrow_columns=0']
                                [--shapes 35x9x56 ...] [--bytes 4e8] [--reps 10] [--json OUT]

One work-group per matrix: C = A B with A (M x K), B (K x N) and C (M x N) its own slices of
3-D memrefs. The matrix count fills about `--bytes` of operands. Reported per shape: our kernel
time (median of OpenCL profiling events) with the default config and with the baseline
config, their ratio, torch.bmm on the same data (when CUDA is there), and the kernel's bytes
over the copy bandwidth measured in this run. Both results are checked against NumPy. The
default baseline is `narrow_columns=0`, the tensor-core lowering before that knob: N = 9 (nine
quantities, the common case in DG codes) leaves a last tile column of 1 of 8 columns.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gpu import OpenCLTimer, check, comparison_parser, config_text, program, torch_time, write_json  # noqa: E402

from tlgpu.lowering.config import LoweringConfig  # noqa: E402
from tlgpu.tuning.tuner import changes  # noqa: E402

SHAPES = ("35x9x56", "56x9x35", "20x9x35", "32x9x32", "64x9x64", "16x9x64", "48x10x48",
          "32x17x32", "32x32x32")


def source(M: int, N: int, K: int) -> str:
    a, b, c = (f"memref<f64x{M}x{K}", f"memref<f64x{K}x{N}", f"memref<f64x{M}x{N}")
    return f"""
func @g(%A: {a}x?>, %B: {b}x?>, %C: {c}x?>) {{
  %e = group_id
  %a = subview %A[:,:,%e] : {a}x?>
  %b = subview %B[:,:,%e] : {b}x?>
  %c = subview %C[:,:,%e] : {c}x?>
  gemm.n.n 1.0, %a, %b, 0.0, %c : f64, {a}>, {b}>, f64, {c}>
}}
"""


def measure(shape: str, device: str, baseline: LoweringConfig, nbytes: float, reps: int,
            torch_ok: bool, rng) -> dict:
    M, N, K = (int(x) for x in shape.split("x"))
    per = 8 * (M * K + K * N + M * N)
    E = max(1, int(nbytes // per))
    a = {"A": rng.standard_normal((M, K, E)), "B": rng.standard_normal((K, N, E)),
         "C": np.zeros((M, N, E))}
    ref = np.einsum("ike,kje->ije", a["A"][:, :, :200], a["B"][:, :, :200])
    prog = program(source(M, N, K), f"gemm_{shape}.tl")
    row: dict = {"shape": shape, "E": E}
    for label, cfg in (("default", LoweringConfig()), ("baseline", baseline)):
        t = OpenCLTimer(prog, "g", a, device, cfg, groups=E)
        check(f"{shape} {label}", t.result()["C"][:, :, :200], ref, 1e-12)
        row[label + "_s"], row[label + "_wg"] = t.time(reps), t.wg
        if "copy_s" not in row:  # the kernel reads A and B and writes C: copy per/2 each way
            row["copy_s"] = t.copy_time(per * E // 2, reps)
    row["ratio"] = row["baseline_s"] / row["default_s"]
    row["of_copy"] = row["copy_s"] / row["default_s"]
    if torch_ok:
        import torch

        dev = torch.device("cuda")
        At, Bt = (torch.from_numpy(np.ascontiguousarray(np.moveaxis(a[x], 2, 0))).to(dev)
                  for x in "AB")
        Ct = torch.empty((E, M, N), dtype=torch.float64, device=dev)
        row["torch_s"] = torch_time(lambda: torch.bmm(At, Bt, out=Ct), reps)
    return row


def show(rows: list[dict], baseline: str, device: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"batched f64 GEMM on {device} (median kernel times; build excluded)")
    for col in ("M x N x K", "matrices", "wg", "default", f"baseline ({baseline})", "speed-up",
                "torch.bmm", "vs torch", "of copy BW"):
        table.add_column(col)
    for r in rows:
        t = r.get("torch_s")
        table.add_row(r["shape"], str(r["E"]), r["default_wg"], f"{r['default_s'] * 1e3:.3f} ms",
                      f"{r['baseline_s'] * 1e3:.3f} ms", f"{r['ratio']:.2f}x",
                      "-" if t is None else f"{t * 1e3:.3f} ms",
                      "-" if t is None else f"{t / r['default_s']:.2f}x", f"{r['of_copy']:.0%}")
    Console(width=160).print(table)


def main(argv=None) -> int:
    ap = comparison_parser(__doc__, "narrow_columns=0", "shape")
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), metavar="MxNxK")
    ap.add_argument("--no-torch", action="store_true")
    ns = ap.parse_args(argv)
    baseline = LoweringConfig.from_overrides(ns.baseline.split())
    torch_ok = False
    if not ns.no_torch:
        try:
            import torch

            torch_ok = torch.cuda.is_available()
        except ImportError:
            pass
    rng = np.random.default_rng(0)
    rows = [measure(s, ns.device, baseline, ns.bytes, ns.reps, torch_ok, rng)
            for s in ns.shapes]
    show(rows, config_text(changes(baseline)), ns.device)
    write_json(rows, ns.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
