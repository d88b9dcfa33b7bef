"""Write examples/tall_and_skinny.npz: arguments for examples/tall_and_skinny.tl with
M = 150 rows, so 3 work-groups of 64 rows, the last one ragged (22 rows).

    python examples/tall_and_skinny_args.py
    tlrun examples/tall_and_skinny.tl --args examples/tall_and_skinny.npz --groups 3
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

M = 150
BLOCK = 64  # rows per work-group, as in the kernel


def groups_for(m: int) -> int:
    return -(-m // BLOCK)


def make_args(rng: np.random.Generator, m: int = M) -> dict:
    return {
        "alpha": np.float32(0.5),
        "A": rng.standard_normal((m, 8)).astype(np.float32),
        "B": rng.standard_normal((8, 4)).astype(np.float32),
        "beta": np.float32(2.0),
        "C": rng.standard_normal((m, 4)).astype(np.float32),
    }


def reference(args: dict) -> np.ndarray:
    """The expected C, in float64."""
    a, b = args["A"].astype(np.float64), args["B"].astype(np.float64)
    return float(args["alpha"]) * a @ b + float(args["beta"]) * args["C"].astype(np.float64)


if __name__ == "__main__":
    np.savez(Path(__file__).with_name("tall_and_skinny.npz"),
             **make_args(np.random.default_rng(0)))
