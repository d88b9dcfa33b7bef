"""The examples/ kernels of the original compiler's recipes (small batched GEMM with @gemm
and @gemm_beta0; tall and skinny with a ragged last block) against NumPy, with the arguments
their make_args-style generators write."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from tlinterp.interp import run

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def module(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def program(name: str):
    path = EXAMPLES / f"{name}.tl"
    found: list = []
    p = tlinterp.check(tlinterp.parse(path.read_text(), str(path)), found)
    assert found == []  # no warnings either
    return p


@pytest.mark.parametrize("beta0", [False, True])
def test_small_batched_gemm(beta0):
    gen = module("small_gemm_args")
    args = gen.make_args(np.random.default_rng(3), batch=5, beta0=beta0)
    out = run(program("small_gemm"), args, func="gemm_beta0" if beta0 else "gemm", groups=5)
    np.testing.assert_allclose(out["C"], gen.reference(args), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out["A"], args["A"])


@pytest.mark.parametrize("m", [150, 128, 40])  # ragged last block, exact blocks, one block
def test_tall_and_skinny(m):
    gen = module("tall_and_skinny_args")
    args = gen.make_args(np.random.default_rng(m), m=m)
    out = run(program("tall_and_skinny"), args, groups=gen.groups_for(m))
    np.testing.assert_allclose(out["C"], gen.reference(args), rtol=1e-5, atol=1e-5)


def test_committed_arguments_are_what_the_generators_write():
    for gen_name, files in (("small_gemm_args", [("small_gemm", 0, {}),
                                                 ("small_gemm_beta0", 1, {"beta0": True})]),
                            ("tall_and_skinny_args", [("tall_and_skinny", 0, {})])):
        gen = module(gen_name)
        for stem, seed, kw in files:
            want = gen.make_args(np.random.default_rng(seed), **kw)
            with np.load(EXAMPLES / f"{stem}.npz") as got:
                assert sorted(got) == sorted(want)
                for k in want:
                    np.testing.assert_array_equal(got[k], want[k])
