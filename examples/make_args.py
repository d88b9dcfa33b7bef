"""Write examples/fused_kernel.npz: arguments for the sample kernel with 4 work-groups."""

from pathlib import Path

import numpy as np

rng = np.random.default_rng(0)
E = 4
args = {
    "alpha": np.float32(0.5),
    "A": rng.standard_normal((E, 16, 8)).astype(np.float32),  # group: leading axis = members
    "B": rng.standard_normal((8, 8)).astype(np.float32),
    "C": rng.standard_normal((8, 16)).astype(np.float32),
    "D": rng.standard_normal((16, 16, E)).astype(np.float32),
}
np.savez(Path(__file__).with_name("fused_kernel.npz"), **args)
