"""Interpreter speed against direct NumPy, measured in the same run (issue 3, "Speed").

    python bench/interp.py [--n 100000] [--repeat 3]

1. The spec's sample kernel, f32, N work-groups, with and without checks, against the same
   computation in NumPy on the same buffers; peak memory (tracemalloc) vs the arguments' size.
2. A foreach-heavy kernel (foreach over 1,024 elements doing load/cmp/if/arith/store), N=1,000.
3. A fully divergent kernel (every work-group takes a different path): cost per group.
4. A one-lane scalar loop (one work-group, three scalar instructions per iteration, with
   checks): instructions per second with the single-lane fast path and, in the same run, with
   it switched off (the general path every loop used before); target >= 200,000/s.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

import tlinterp
from tlinterp.interp import run_bound
from tlinterp.io.args import bind

# the spec's sample kernel
SAMPLE = (Path(__file__).resolve().parents[1] / "examples" / "fused_kernel.tl").read_text()

FOREACH = """
func @fe(%x: memref<f32x1024x?>, %y: memref<f32x1024x?>) {
  %g = group_id
  foreach %i = 0, 1024 {
    %v = load %x[%i, %g] : memref<f32x1024x?>
    %p = cmp.gt %v, 0.0 : f32
    %r = if %p -> (f32) {
      %a = arith.mul %v, 2.0 : f32
      yield %a : f32
    } else {
      %b = arith.sub %v, 1.0 : f32
      yield %b : f32
    }
    store %r, %y[%i, %g] : memref<f32x1024x?>
  }
}
"""


def divergent_source(levels: int) -> str:
    """`levels` ifs on the bits of the group id (each group a different path through them),
    then a loop whose trip count is the group id."""
    lines = ["func @dv(%y: memref<indexx?>) {", "  %g = group_id",
             "  %a0 = arith.add %g, 0 : index"]
    for k in range(levels):
        lines += [f"  %s{k} = arith.shr %g, {k} : index",
                  f"  %b{k} = arith.and %s{k}, 1 : index",
                  f"  %c{k} = cmp.eq %b{k}, 1 : index",
                  f"  %a{k + 1} = if %c{k} -> (index) {{",
                  f"    %t{k} = arith.mul %a{k}, 3 : index",
                  f"    yield %t{k} : index",
                  "  } else {",
                  f"    %e{k} = arith.add %a{k}, 1 : index",
                  f"    yield %e{k} : index",
                  "  }"]
    lines += [f"  store %a{levels}, %y[%g] : memref<indexx?>",
              "  for %i = 0, %g {",
              "    %v = load %y[%g] : memref<indexx?>",
              "    %w = arith.xor %v, %i : index",
              "    store %w, %y[%g] : memref<indexx?>",
              "  }", "}"]
    return "\n".join(lines)


def divergent_numpy(g: np.ndarray, levels: int) -> np.ndarray:
    acc = g.copy()
    for k in range(levels):
        bit = (g >> k) & 1
        acc = np.where(bit == 1, acc * 3, acc + 1)
    for i in range(int(g.max())):  # the same masked loop, written directly
        live = i < g
        acc[live] ^= i
    return acc


def compare(direct, program, args, groups, check, repeat) -> tuple[float, float]:
    """Best-of-`repeat` times of direct NumPy and of the interpreter, measured alternately so
    that load from other processes affects both alike."""
    function = program.function()
    t_np, t_in = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        direct()
        t_np.append(time.perf_counter() - t)
        bound = bind(function, args)
        t = time.perf_counter()
        run_bound(program, function, bound, groups, check=check)
        t_in.append(time.perf_counter() - t)
    return min(t_np), min(t_in)


def peak_memory(program, args, groups, check) -> int:
    function = program.function()
    bound = bind(function, args)
    tracemalloc.start()
    run_bound(program, function, bound, groups, check=check)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--loop-steps", type=int, default=1_000_000)
    ns = ap.parse_args()
    rng = np.random.default_rng(0)
    table = Table(title="tlinterp vs direct NumPy (same run, measured alternately; best of "
                        f"{ns.repeat}; baseline: the fastest NumPy time of the benchmark)")
    for col in ("benchmark", "numpy", "interp", "ratio", "run peak mem / args"):
        table.add_column(col, justify="right" if col != "benchmark" else "left")

    # 1. sample kernel
    n = ns.n
    prog = tlinterp.check(tlinterp.parse(SAMPLE))
    args = {"alpha": np.float32(0.5),
            "A": rng.standard_normal((n, 16, 8), dtype=np.float32),
            "B": rng.standard_normal((8, 8), dtype=np.float32),
            "C": rng.standard_normal((8, 16), dtype=np.float32),
            "D": rng.standard_normal((16, 16, n), dtype=np.float32)}
    arg_bytes = sum(np.asarray(a).nbytes for a in args.values())
    bound = bind(prog.function(), args)
    abuf = bound.values["A"].members[0].buffer
    dbuf = bound.values["D"].buffer
    bmat, cmat = args["B"], args["C"]

    def direct():  # the same computation on the same (column-major) buffers
        a = abuf[:n * 128].reshape(n, 8, 16).transpose(0, 2, 1)
        d = dbuf[:n * 256].reshape(n, 16, 16).transpose(0, 2, 1)
        tmp = a @ bmat.T
        d += np.float32(0.5) * (tmp @ cmat)

    runs = {check: compare(direct, prog, args, n, check, ns.repeat) for check in (False, True)}
    t_np = min(r[0] for r in runs.values())  # the fastest NumPy of the run is the baseline
    for check in (False, True):
        t = runs[check][1]
        peak = peak_memory(prog, args, n, check)
        table.add_row(f"sample kernel f32, N={n:,}, {'checks' if check else 'no checks'}",
                      f"{t_np * 1e3:.1f} ms", f"{t * 1e3:.1f} ms", f"{t / t_np:.2f}",
                      f"{peak / arg_bytes:.2f}")

    # 2. foreach-heavy
    m = 1000
    prog = tlinterp.check(tlinterp.parse(FOREACH))
    x = rng.standard_normal((1024, m), dtype=np.float32)
    args = {"x": x, "y": np.zeros_like(x)}

    def direct_fe():
        return np.where(x > 0, x * np.float32(2), x - np.float32(1))

    runs = {check: compare(direct_fe, prog, args, m, check, ns.repeat) for check in (False, True)}
    t_np = min(r[0] for r in runs.values())
    for check in (False, True):
        t = runs[check][1]
        table.add_row(f"foreach-heavy, 1,024 x N={m:,}, {'checks' if check else 'no checks'}",
                      f"{t_np * 1e3:.1f} ms", f"{t * 1e3:.1f} ms", f"{t / t_np:.2f}", "")

    # 3. fully divergent
    levels = 10
    groups = 1 << levels
    prog = tlinterp.check(tlinterp.parse(divergent_source(levels)))
    args = {"y": np.zeros(groups, np.int64)}
    g = np.arange(groups, dtype=np.int64)
    runs = {check: compare(lambda: divergent_numpy(g, levels), prog, args, groups, check,
                           ns.repeat) for check in (False, True)}
    t_np = min(r[0] for r in runs.values())
    for check in (False, True):
        t = runs[check][1]
        table.add_row(f"fully divergent, {groups:,} paths, {'checks' if check else 'no checks'}",
                      f"{t_np * 1e3:.2f} ms", f"{t * 1e3:.1f} ms ({t / groups * 1e6:.0f} "
                      "us/group)", f"{t / t_np:.1f}", "")

    # 4. one-lane scalar loop
    prog = tlinterp.check(tlinterp.parse(SCALAR_LOOP))
    rates = {fast: scalar_loop_rate(prog, ns.loop_steps, fast, ns.repeat) for fast in (True, False)}
    table.add_row(f"one-lane scalar loop, {ns.loop_steps:,} instructions, checks",
                  f"general path {rates[False]:,.0f} instr/s",
                  f"{rates[True]:,.0f} instr/s", f"{rates[True] / rates[False]:.1f}x faster",
                  "")
    Console().print(table)


SCALAR_LOOP = """
func @loop(%y: memref<indexx1>) {
  for %i = 0, 1000000000 : index {
    %a = arith.add %i, 1 : index
    %b = arith.mul %a, 3 : index
    store %b, %y[0] : memref<indexx1>
  }
}
"""


def scalar_loop_rate(program, steps: int, fast: bool, repeat: int) -> float:
    """Best instructions/s of `steps` instructions of SCALAR_LOOP (stopped by the budget)."""
    from tlinterp.interp import fastpath
    from tlinterp.lang.diagnostics import ExecutionError

    real = fastpath.eligible
    if not fast:
        fastpath.eligible = lambda inst, cache: False
    try:
        best = float("inf")
        for _ in range(repeat if fast else 1):  # the general path is slow: once is enough
            n = steps if fast else max(steps // 20, 1000)
            t = time.perf_counter()
            try:
                tlinterp.run(program, {"y": np.zeros(1, np.int64)}, groups=1, max_steps=n)
            except ExecutionError:
                pass
            best = min(best, (time.perf_counter() - t) / n)
        return 1 / best
    finally:
        fastpath.eligible = real


if __name__ == "__main__":
    main()
