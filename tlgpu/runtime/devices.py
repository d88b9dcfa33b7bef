"""OpenCL device choice (`--device pocl|nvidia|oclgrind|intel|PLATFORM:DEVICE`, PYOPENCL_CTX) and
the context/queue cache."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from tlinterp.diagnostics import BackendError


def _is_intel_cpu(platform, device) -> bool:
    # Intel's CPU runtime, not its GPU runtime or FPGA emulator; matched on the platform,
    # since pocl's device name on an Intel machine holds "Intel" too
    import pyopencl as cl

    return (platform.name.lower().startswith("intel")
            and bool(device.type & cl.device_type.CPU))


def _platform_named(*words: str):
    return lambda platform, device: any(w in platform.name.lower() for w in words)


_ALIASES = {"pocl": _platform_named("portable computing language", "pocl"),
            "nvidia": _platform_named("nvidia"), "oclgrind": _platform_named("oclgrind"),
            "intel": _is_intel_cpu}


@dataclass
class DeviceHandle:
    device: object  # pyopencl.Device
    context: object
    queue: object  # a profiling-enabled in-order queue

    @property
    def key(self) -> str:
        d = self.device
        return f"{d.platform.name}|{d.name}|{d.driver_version}"

    @property
    def keeps_f32_denormals(self) -> bool:
        import pyopencl as cl

        return bool(self.device.single_fp_config & cl.device_fp_config.DENORM)


_CACHE: dict[str, DeviceHandle] = {}


def _cl():
    try:
        import pyopencl as cl
    except ImportError as e:  # pragma: no cover - pyopencl is a dependency
        raise BackendError(f"pyopencl is not installed ({e})") from None
    return cl


def _all_devices():
    cl = _cl()
    from tlgpu.runtime.icd import register

    register()  # before the process's first platform query, when the loader reads its ICDs
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        raise BackendError(f"no OpenCL platform found ({e}); install pyopencl[pocl] for a "
                           "CPU device") from None
    out = []
    from tlgpu.runtime.oclgrind import without_query_noise

    for p in platforms:
        try:
            with without_query_noise("oclgrind" in p.name.lower()):
                out += [(p, d) for d in p.get_devices()]
        except cl.Error:
            continue
    return out


def _describe(devs) -> str:
    return "; ".join(f"{p.name}: {d.name}" for p, d in devs) or "none"


def find_device(spec: Optional[str] = None):
    """The pyopencl device a device string names (see module doc); BackendError if none."""
    devs = _all_devices()
    if not devs:
        raise BackendError("no OpenCL device found; install pyopencl[pocl] for a CPU device")
    if spec is None and os.environ.get("PYOPENCL_CTX"):
        cl = _cl()
        try:
            ctx = cl.create_some_context(interactive=False)
        except (cl.Error, RuntimeError, ValueError) as e:
            raise BackendError(f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']!r} selects no "
                               f"device ({e}); available: {_describe(devs)}") from None
        return ctx.devices[0]
    spec = spec or "pocl"
    low = spec.lower()
    if low in _ALIASES:
        for p, d in devs:
            if _ALIASES[low](p, d):
                return d
        if low == "intel":
            raise BackendError(_no_intel(devs))
    elif ":" in spec:
        plat, _, dev = low.partition(":")
        for p, d in devs:
            if plat in p.name.lower() and dev in d.name.lower():
                return d
    else:
        for p, d in devs:
            if low in p.name.lower() or low in d.name.lower():
                return d
    raise BackendError(f"no OpenCL device matches '{spec}'; available: {_describe(devs)}")


def _no_intel(devs) -> str:
    from tlgpu.runtime.icd import INSTALL, register

    reg = register()
    if reg.library is None:
        return ("no Intel CPU OpenCL device: Intel's runtime (the 'intel' extra) is not "
                f"installed; install it with {INSTALL}")
    if reg.problem:
        return f"no Intel CPU OpenCL device: {reg.library} is installed but {reg.problem}"
    # e.g. a dependency missing, or pyopencl asked for platforms before tlgpu registered it
    return (f"no Intel CPU OpenCL device: {reg.library} is installed but its platform did not "
            f"load (OCL_ICD_DEBUG=7 shows the loader's reasons); available: {_describe(devs)}")


def handle(spec: Optional[str] = None) -> DeviceHandle:
    """One context and queue per device, however it was named."""
    cl = _cl()
    dev = find_device(spec)
    cache_key = f"{dev.platform.name}|{dev.name}|{dev.int_ptr}"
    if cache_key not in _CACHE:
        from tlgpu.runtime.oclgrind import enable_checks, is_oclgrind, without_query_noise

        if is_oclgrind(dev):
            enable_checks()  # read by Oclgrind when the context is created
        with without_query_noise(is_oclgrind(dev)):
            ctx = cl.Context([dev])
            queue = cl.CommandQueue(ctx,
                                    properties=cl.command_queue_properties.PROFILING_ENABLE)
        _CACHE[cache_key] = DeviceHandle(dev, ctx, queue)
    return _CACHE[cache_key]
