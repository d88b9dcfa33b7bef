"""Write arguments for examples/small_gemm.tl: small_gemm.npz (@gemm) and
small_gemm_beta0.npz (@gemm_beta0), a batch of E = 6 entries.

    python examples/small_gemm_args.py
    tlrun examples/small_gemm.tl --func gemm --args examples/small_gemm.npz --groups 6
    tlrun examples/small_gemm.tl --func gemm_beta0 --args examples/small_gemm_beta0.npz \
        --groups 6

Arrays have the logical shapes (8x6xE, 6x5xE, 8x5xE); the padding of the strided layout is
added when the arguments are bound. No argument is a group, so the work-group count does not
follow from the arguments: pass --groups E (one work-group per batch entry).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

E = 6


def make_args(rng: np.random.Generator, batch: int = E, beta0: bool = False) -> dict:
    args = {
        "alpha": np.float32(1.5),
        "A": rng.standard_normal((8, 6, batch)).astype(np.float32),
        "B": rng.standard_normal((6, 5, batch)).astype(np.float32),
        "C": rng.standard_normal((8, 5, batch)).astype(np.float32),
    }
    if beta0:
        args["C"][:] = np.nan  # never read with beta = 0
    else:
        args["beta"] = np.float32(-0.5)
    return args


def reference(args: dict) -> np.ndarray:
    """The expected C, in float64."""
    a, b = args["A"].astype(np.float64), args["B"].astype(np.float64)
    ab = np.einsum("mkb,knb->mnb", a, b)
    if "beta" not in args:
        return float(args["alpha"]) * ab
    return float(args["alpha"]) * ab + float(args["beta"]) * args["C"].astype(np.float64)


if __name__ == "__main__":
    here = Path(__file__).parent
    np.savez(here / "small_gemm.npz", **make_args(np.random.default_rng(0)))
    np.savez(here / "small_gemm_beta0.npz", **make_args(np.random.default_rng(1), beta0=True))
