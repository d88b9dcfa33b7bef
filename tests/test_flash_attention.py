"""Our flash-attention kernel (bench/flash_attention.tl, v0.4: parallel, cooperative matrices,
apply, row reductions, extract, a loop carrying coopmatrices) against NumPy softmax(QK^T)V, at
sizes that are multiples of the tiles (64 query rows in four sub-groups, 32 keys) and sizes
that are not; and the split kernels (bench/flash_attention_split.tl: key ranges in separate
work-groups, joined by a second kernel) on the interpreter and on our OpenCL lowering."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from opencl_devices import require_device

# loaded by path: bench/ on sys.path would shadow the fuzz package with bench/fuzz.py
_SPEC = importlib.util.spec_from_file_location(
    "flash_attention", Path(__file__).resolve().parents[1] / "bench" / "flash_attention.py")
fa = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fa)


@pytest.mark.parametrize("T,H", [(128, 1), (256, 2), (100, 3), (200, 2), (17, 2), (1, 1)])
def test_flash_attention_matches_numpy(T, H):
    args = fa.inputs(T, H, seed=T)
    out = fa.run_kernel(args)
    ref = fa.numpy_attention(args["Q"], args["K"], args["V"], float(args["scale"]))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("T,H", [(128, 1), (100, 2)])
def test_flash_attention_f16_within_its_bound(T, H):
    args = fa.inputs(T, H, seed=T, f16=True)
    out = fa.run_kernel(args)
    ref = fa.numpy_attention(args["Q"], args["K"], args["V"], float(args["scale"]))
    bound = 2.0**-11 * float(np.abs(args["V"].astype(np.float32)).max()) + 1e-5
    assert np.abs(out - ref).max() <= bound
    assert np.abs(out - ref).max() > 0  # the f16 probabilities do round


# S key ranges: (40, 4) leaves the last two ranges without keys (kc = 32: they start at 64, 96)
@pytest.mark.parametrize("T,H,S", [(128, 1, 2), (100, 2, 3), (40, 1, 4), (1, 1, 1)])
def test_flash_attention_split_matches_numpy(T, H, S):
    args = fa.inputs(T, H, seed=T + S)
    ref = fa.numpy_attention(args["Q"], args["K"], args["V"], float(args["scale"]))
    np.testing.assert_allclose(fa.run_split(args, S), ref, rtol=1e-5, atol=2e-6)


@pytest.mark.opencl
@pytest.mark.parametrize("f16", [False, True])
def test_flash_attention_split_on_opencl(f16):
    require_device("pocl")
    args = fa.inputs(100, 2, seed=5, f16=f16)
    ref = fa.numpy_attention(args["Q"], args["K"], args["V"], float(args["scale"]))
    bound = 2.0**-11 * float(np.abs(args["V"].astype(np.float32)).max()) + 1e-5 if f16 else 2e-6
    assert np.abs(fa.run_split(args, 3, device="pocl") - ref).max() <= bound
