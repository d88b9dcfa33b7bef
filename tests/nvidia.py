"""NVIDIA's OpenCL device for the tests that need one (they skip without it: CI has pocl
only, and these run on the GPU machine)."""

from __future__ import annotations

import pytest


def nvidia():
    """NVIDIA's OpenCL device handle (tlgpu.runtime.devices.handle), or skip."""
    from tlgpu.runtime.devices import handle
    from tlinterp import BackendError

    try:
        return handle("nvidia")
    except BackendError:
        pytest.skip("no NVIDIA OpenCL device")


def nvidia_mma_rows() -> int:
    """Rows of the largest FP64 mma tile NVIDIA's device runs (runtime.fp64_mma_rows), or
    skip when it has no FP64 tensor cores."""
    from tlgpu.runtime.launch import fp64_mma_rows

    rows = fp64_mma_rows(nvidia().device)
    if not rows:
        pytest.skip("NVIDIA device without FP64 tensor cores")
    return rows
