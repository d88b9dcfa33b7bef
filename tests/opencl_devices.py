"""The devices the OpenCL tests ask for by name. CI installs pocl and Intel's CPU runtime
(.ci/run), so there a missing one fails the test; elsewhere it skips, with the reason."""

from __future__ import annotations

import os

import pytest

CI_DEVICES = ("pocl", "intel")


def require_device(name: str) -> str:
    """`name` (a --device string) when this machine has a device it picks; else fail under CI
    for the devices CI installs, skip otherwise."""
    from tlgpu.runtime.devices import find_device

    try:
        find_device(name)
    except Exception as e:  # noqa: BLE001 - any lookup failure: the device is not here
        if os.environ.get("CI") and name in CI_DEVICES:
            pytest.fail(f"CI installs a {name} device, but: {e}")
        pytest.skip(f"no {name} device: {e}")
    return name
