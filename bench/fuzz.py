"""Differential fuzzing throughput on pocl: cases per second by batch size.

    python bench/fuzz.py [--cases 48] [--device pocl] [--batches 1,4,8,16]

Each row runs fresh generated cases (so neither tlgpu's nor pocl's build caches help)
through the sandboxed differential run the campaign uses (interpreter + one OpenCL build per
batch + comparison). The baseline is batch size 1 (one build per case), measured in the same
run. Generation (draw + print + parse + check) is timed separately. Target: >= 5 cases/s.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

# this file is named like the `fuzz` package: keep its directory off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


def generate(n: int, seed_value: int, name_prefix: str = "k") -> list:
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st

    from fuzz.strategies import kernels

    out: list = []

    @seed(seed_value)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draw(data):
        out.append(data.draw(kernels(name=f"{name_prefix}{len(out)}")))

    draw()
    return out[:n]


def main(argv=None) -> int:
    from rich.console import Console
    from rich.table import Table

    from fuzz.campaign.sandbox import Sandbox

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=48)
    p.add_argument("--device", default="pocl")
    p.add_argument("--batches", default="1,4,8,16")
    p.add_argument("--seed", type=int, default=None,
                   help="generation seed (default: the clock, so pocl's on-disk kernel "
                        "cache cannot serve earlier runs' builds)")
    ns = p.parse_args(argv)
    base_seed = ns.seed if ns.seed is not None else int(time.time())
    warnings.filterwarnings("ignore")
    sizes = [int(s) for s in ns.batches.split(",")]
    console = Console()
    rows = []
    with Sandbox(ns.device, timeout=300) as box:
        box.run(generate(1, 999))  # start the child and its OpenCL context outside timing
        t0 = time.perf_counter()
        gen_cases = generate(ns.cases, base_seed)
        gen_rate = len(gen_cases) / (time.perf_counter() - t0)
        for i, size in enumerate(sizes):
            cases = generate(ns.cases, base_seed + 100 + i)
            findings = 0
            t0 = time.perf_counter()
            for k in range(0, len(cases), size):
                batch = cases[k:k + size]
                for j, c in enumerate(batch):  # distinct names within one program
                    c.program.functions[0].name = f"k{j}"
                    c.func = f"k{j}"
                findings += len(box.run(batch))
            dt = time.perf_counter() - t0
            rows.append((size, len(cases), dt, len(cases) / dt, findings))
    base = rows[0][3]
    t = Table(title=f"differential fuzzing on {ns.device} (interpreter vs OpenCL), "
                    f"seed {base_seed}")
    for col in ("batch size", "cases", "seconds", "cases/s", "vs batch 1", "findings"):
        t.add_column(col, justify="right")
    for size, n, dt, rate, found in rows:
        t.add_row(str(size), str(n), f"{dt:.1f}", f"{rate:.2f}", f"{rate / base:.2f}x",
                  str(found))
    t.add_row("generation only", str(len(gen_cases)), "", f"{gen_rate:.1f}", "", "")
    console.print(t)
    best = max(r[3] for r in rows)
    console.print(f"best: {best:.2f} cases/s (target >= 5)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
