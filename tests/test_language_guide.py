"""docs/language.md: every kernel in it checks, and the worked kernels compute what the guide
says (against NumPy), also through tlrun and its .npz files."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from tlinterp.cli import tlrun as cli

GUIDE = (Path(__file__).resolve().parents[1] / "docs" / "language.md").read_text()
BLOCKS = re.findall(r"```tl\n(.*?)```", GUIDE, re.S)


def _kernel(name: str) -> str:
    found = [b for b in BLOCKS if f"func @{name}(" in b]
    assert len(found) == 1, f"the guide has no single @{name} kernel"
    return found[0]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: re.search(r"func @(\w+)", b)[1])
def test_every_kernel_in_the_guide_checks(block):
    tlinterp.check(tlinterp.parse(block))


def test_batched_matvec():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 8, 5), dtype=np.float32)
    x = rng.standard_normal((8, 5), dtype=np.float32)
    out = tlinterp.run(_kernel("matvec"), {"A": A, "x": x, "y": np.zeros((8, 5), np.float32)},
                       groups=5)
    np.testing.assert_allclose(out["y"], np.einsum("ije,je->ie", A, x), rtol=1e-5, atol=1e-5)


def test_row_reduction_with_foreach_for_and_if(tmp_path):
    rng = np.random.default_rng(1)
    M = rng.standard_normal((16, 7, 3))
    (tmp_path / "rowsum.tl").write_text(_kernel("rowsum"))
    np.savez(tmp_path / "in.npz", M=M, s=np.full((16, 3), np.nan))
    rc = cli.main([str(tmp_path / "rowsum.tl"), "--args", str(tmp_path / "in.npz"),
                   "--groups", "3", "--out", str(tmp_path / "out.npz")])
    assert rc == 0
    with np.load(tmp_path / "out.npz") as f:
        np.testing.assert_allclose(f["s"], np.where(M > 0, M, 0).sum(axis=1), rtol=1e-12)
