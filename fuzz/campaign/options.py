"""Validation of `tlfuzz` options before a campaign starts: every bad value is a message and
exit status 2, never a traceback and never a campaign that saves false findings."""

from __future__ import annotations

import os
from typing import Optional

from tlinterp.impl.flags import positive_seconds  # noqa: F401 - one argparse type for seconds

__all__ = ["positive_seconds", "check_out_dir", "check_device", "chosen_device",
           "keep_hypothesis_under"]


def check_out_dir(path: str) -> Optional[str]:
    """Create the findings directory if needed; the reason it cannot be used, or None."""
    if os.path.exists(path) and not os.path.isdir(path):
        return f"--out {path}: exists and is not a directory"
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        return f"--out {path}: cannot create the directory ({e.strerror or e})"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"--out {path}: the directory is not writable"
    return None


# the implementations that build and run OpenCL on --device; the rest need no device
_ON_A_DEVICE = ("opencl", "opencl-c", "spirv")


def runs_on_a_device(spec: Optional[str]) -> bool:
    """Whether the implementation `spec` (None: our lowering) builds OpenCL on --device."""
    return spec is None or spec.partition(":")[0] in _ON_A_DEVICE


def check_device(device: str) -> Optional[str]:
    """Why the OpenCL device string names no device, or None (checked once, up front, so a
    wrong name is not mistaken for a backend failure of every generated kernel)."""
    from tlinterp.lang.diagnostics import TLError

    try:
        from tlgpu.runtime.devices import find_device

        find_device(device)
    except TLError as e:
        return "\n".join(d.message for d in e.diagnostics)
    except ImportError as e:  # pragma: no cover - pyopencl is a dependency
        return f"the OpenCL backend is not available ({e})"
    return None


def check_known_good(spec: Optional[str], options) -> Optional[str]:
    """For an opencl-c: or spirv: implementation (`spec` with its ImplOptions): why a
    known-good kernel does not build and run on its device through its workers, or None;
    after check_device, before the first case (a device failure is no finding)."""
    if not spec or not runs_on_a_device(spec) or spec.partition(":")[0] == "opencl":
        return None
    from tlinterp.impl import SpecError, resolve
    from tlinterp.lang.diagnostics import TLError

    try:
        impl = resolve(spec, options)
    except (SpecError, TLError):
        return None  # the tool reports a bad spec in its own words
    try:
        return impl.self_test()
    finally:
        impl.close()


def chosen_device(device: Optional[str]) -> str:
    """The device a device string picks, as every tool prints it (after check_device)."""
    from tlgpu.runtime.devices import find_device, label

    return label(find_device(device))


def keep_hypothesis_under(out: str) -> None:
    """Hypothesis' own files (its constants cache) go under --out, not into the current
    directory; set before the jobs start so that they inherit it."""
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.abspath(os.path.join(out, ".hypothesis"))
