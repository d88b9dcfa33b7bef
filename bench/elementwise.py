"""Batched elementwise collectives (axpby, hadamard, ger): the default lowering against a baseline
config and a device copy, all measured in one run.

    python bench/elementwise.py [--device nvidia] [--baseline 'load_batch=1']
                                [--bytes 4e8] [--reps 10] [--json OUT]

One work-group per matrix, each collective alone in its kernel, on matrices of DG shapes
(56 x 9 and 35 x 9, the ADER chain's) and 32 x 32, f64 and f32. The matrix count fills about
`--bytes` of operands. Reported per case: our kernel time (median of OpenCL profiling events)
with the default config and with the baseline config, their ratio, and the bytes the kernel
must move over the copy bandwidth measured in this run. Both results are checked against NumPy.
The default baseline is `load_batch=1`, one element per step, the GPU default before that knob's
default became 8.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gpu import OpenCLTimer, check, comparison_parser, config_text, program, write_json  # noqa: E402

from tlgpu.lowering.config import LoweringConfig  # noqa: E402
from tlgpu.tuning.tuner import changes  # noqa: E402

# (collective, T, M, N)
CASES = (("axpby", "f64", 56, 9), ("axpby", "f64", 35, 9), ("axpby", "f32", 32, 32),
         ("hadamard", "f64", 56, 9), ("hadamard", "f32", 32, 32),
         ("ger", "f64", 35, 9), ("ger", "f32", 32, 32))


def source(kind: str, T: str, M: int, N: int) -> str:
    m = f"memref<{T}x{M}x{N}"
    v = {"a": f"memref<{T}x{M}", "b": f"memref<{T}x{N}"}
    if kind == "axpby":
        args, inst = [("A", m)], f"axpby.n 2.0, %a, 0.5, %c : {T}, {m}>, {T}, {m}>"
    elif kind == "hadamard":
        args = [("A", m), ("B", m)]
        inst = f"hadamard 2.0, %a, %b, 0.5, %c : {T}, {m}>, {m}>, {T}, {m}>"
    else:
        args = [("A", v["a"]), ("B", v["b"])]
        inst = f"ger 2.0, %a, %b, 0.5, %c : {T}, {v['a']}>, {v['b']}>, {T}, {m}>"
    params = ", ".join(f"%{n}: {t}x?>" for n, t in args + [("C", m)])
    views = "\n".join(f"  %{n.lower()} = subview %{n}[{':,' * t.count('x')}%e] : {t}x?>"
                      for n, t in args + [("C", m)])
    return f"func @k({params}) {{\n  %e = group_id\n{views}\n  {inst}\n}}\n"


def arguments(kind: str, T: str, M: int, N: int, E: int, rng) -> dict:
    dt = np.float64 if T == "f64" else np.float32
    shapes = {"axpby": {"A": (M, N, E)}, "hadamard": {"A": (M, N, E), "B": (M, N, E)},
              "ger": {"A": (M, E), "B": (N, E)}}[kind]
    a = {k: rng.standard_normal(s).astype(dt) for k, s in shapes.items()}
    a["C"] = rng.standard_normal((M, N, E)).astype(dt)
    return a


def reference(kind: str, a: dict, n: int) -> np.ndarray:
    A, C = a["A"][..., :n].astype(np.float64), a["C"][..., :n].astype(np.float64)
    if kind == "axpby":
        prod = A
    elif kind == "hadamard":
        prod = A * a["B"][..., :n]
    else:
        prod = np.einsum("ie,je->ije", A, a["B"][..., :n].astype(np.float64))
    return 2.0 * prod + 0.5 * C


def measure(case: tuple, device: str, baseline: LoweringConfig, nbytes: float, reps: int,
            rng) -> dict:
    kind, T, M, N = case
    size = 8 if T == "f64" else 4
    reads = {"axpby": M * N, "hadamard": 2 * M * N, "ger": M + N}[kind] + M * N
    per = size * (reads + M * N)  # operands and C read, C written
    E = max(1, int(nbytes // per))
    a = arguments(kind, T, M, N, E, rng)
    ref = reference(kind, a, 200)
    prog = program(source(kind, T, M, N), f"{kind}_{T}_{M}x{N}.tl")
    row: dict = {"case": f"{kind} {T} {M}x{N}", "E": E}
    for label, cfg in (("default", LoweringConfig()), ("baseline", baseline)):
        t = OpenCLTimer(prog, "k", a, device, cfg, groups=E)
        check(f"{row['case']} {label}", t.result()["C"][..., :200], ref,
              1e-12 if T == "f64" else 1e-5)
        row[label + "_s"], row[label + "_wg"] = t.time(reps), t.wg
        if "copy_s" not in row:
            row["copy_s"] = t.copy_time(per * E // 2, reps)
    row["ratio"] = row["baseline_s"] / row["default_s"]
    row["of_copy"] = row["copy_s"] / row["default_s"]
    return row


def show(rows: list[dict], baseline: str, device: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"batched elementwise collectives on {device} (median kernel times)")
    for col in ("case", "matrices", "wg", "default", f"baseline ({baseline})", "speed-up",
                "of copy BW"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["case"], str(r["E"]), r["default_wg"], f"{r['default_s'] * 1e3:.3f} ms",
                      f"{r['baseline_s'] * 1e3:.3f} ms", f"{r['ratio']:.2f}x",
                      f"{r['of_copy']:.0%}")
    Console(width=140).print(table)


def main(argv=None) -> int:
    ns = comparison_parser(__doc__, "load_batch=1", "case").parse_args(argv)
    baseline = LoweringConfig.from_overrides(ns.baseline.split())
    rng = np.random.default_rng(0)
    rows = [measure(c, ns.device, baseline, ns.bytes, ns.reps, rng) for c in CASES]
    show(rows, config_text(changes(baseline)), ns.device)
    write_json(rows, ns.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
