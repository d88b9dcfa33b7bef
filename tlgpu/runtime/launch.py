"""Run a lowered function through pyopencl: build (cached by source, device and options;
known device bugs steered around per kernel, tlgpu.runtime.workarounds), marshal the
bound arguments (one cl.Buffer per argument buffer; group pointer arrays built on the device),
launch with global (wg0, wg1, N) and local (wg0, wg1, 1), read the buffers back."""

from __future__ import annotations

import contextlib
import dataclasses
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Optional, Union

import numpy as np

from tlgpu.lowering.callconv import Param, argument_params
from tlgpu.lowering.config import LoweringConfig
from tlgpu.lowering.ctypes_map import ctype
from tlgpu.lowering.program import Lowered, lower_program
from tlgpu.runtime import workarounds
from tlgpu.runtime.buildlog import map_log, without_saved_source
from tlgpu.runtime.devices import DeviceHandle, handle
from tlgpu.runtime.guards import Guards
from tlgpu.runtime.oclgrind import captured_stderr, is_oclgrind, raise_reports, without_query_noise
from tlgpu.runtime.prelaunch import check_launch
from tlinterp import ir
from tlinterp.args import BoundArgs, GroupArg, MemrefArg, bind, unbind
from tlinterp.diagnostics import ArgumentError, BackendError, Diagnostic, ExecutionError
from tlinterp.types import GroupType, MemrefType

BUILD_OPTIONS = ["-cl-fp32-correctly-rounded-divide-sqrt"]
_PROGRAMS: dict[tuple[str, str, tuple[str, ...]], object] = {}
# Self-test hook for the fuzzer's mutation bench (fuzz.campaign.mutations): rewrites the OpenCL C
# just before the build, as a miscompiling driver would. Always None outside those self-tests.
SOURCE_FILTER: Optional[Callable[[str], str]] = None
# Lowerings per live program object. Keyed by id() for speed, but an id can be reused once its
# program is garbage-collected: the entry keeps a weak reference and is dropped with the program.
_LOWERED: dict[tuple[int, str, LoweringConfig], tuple[weakref.ref, Lowered]] = {}


def _as_program(program: Union[ir.Program, str]) -> ir.Program:
    from tlinterp.frontend import lowerable

    if isinstance(program, str):
        import tlinterp

        return lowerable(tlinterp.check(tlinterp.parse(program)))
    return lowerable(program)


def fp64_mma_rows(device) -> int:
    """Rows of the largest f64 `mma.sync` tile the device runs (lower_mma.py): 16 (m16n8k4)
    from compute capability 9.0, 8 (m8n8k4) from 8.0, else 0; NVIDIA only (its OpenCL compiler
    accepts inline PTX)."""
    if "nvidia" not in device.platform.name.lower() or "cl_khr_fp64" not in device.extensions:
        return 0
    try:
        major = int(device.compute_capability_major_nv)
    except Exception:  # no cl_nv_device_attribute_query: cannot tell, stay portable
        return 0
    return 16 if major >= 9 else 8 if major >= 8 else 0


def device_config(dev: DeviceHandle, config: Optional[LoweringConfig]) -> LoweringConfig:
    """The config with the automatic choices capped by the device's limits."""
    config = config or LoweringConfig()
    d = dev.device
    import pyopencl as cl

    rows = fp64_mma_rows(d)  # None: the most the device has; a value: at most that
    config = dataclasses.replace(config, tensor_cores=rows if config.tensor_cores is None
                                 else min(config.tensor_cores, rows))
    return dataclasses.replace(
        config.for_device(bool(d.type & cl.device_type.GPU)),
        max_work_group_size=min(config.max_work_group_size, d.max_work_group_size),
        local_memory_bytes=min(config.local_memory_bytes, d.local_mem_size),
        # only pocl accepts `global T*global*` parameters (OpenCL C 1.2 forbids them; NVIDIA
        # and Oclgrind enforce that): elsewhere pass the same bytes as `global ulong*`
        group_pointers_as_ulong=config.group_pointers_as_ulong
        or "portable computing language" not in d.platform.name.lower(),
        # Oclgrind tracks uninitialised values only in local memory passed as an argument
        local_slab_argument=config.local_slab_argument or is_oclgrind(d))


def lowered_for(program: ir.Program, dev: DeviceHandle, config: LoweringConfig) -> Lowered:
    key = (id(program), dev.key, config)
    entry = _LOWERED.get(key)
    if entry is not None and entry[0]() is program:
        return entry[1]

    def forget(ref: weakref.ref, key=key) -> None:
        if _LOWERED.get(key, (None,))[0] is ref:
            del _LOWERED[key]

    lowered = lower_program(program, None, config)
    _LOWERED[key] = (weakref.ref(program, forget), lowered)
    return lowered


def _require_extensions(source: str, dev: DeviceHandle) -> None:
    ext = dev.device.extensions.split()
    if "double" in source and "cl_khr_fp64" not in ext:
        raise BackendError(f"device '{dev.device.name}' lacks cl_khr_fp64 (f64 support)")
    if "atom_" in source and "cl_khr_int64_base_atomics" not in ext:
        raise BackendError(f"device '{dev.device.name}' lacks cl_khr_int64_base_atomics "
                           "(needed for 64-bit atomic updates)")


def build(lowered: Lowered, dev: DeviceHandle, program: Optional[ir.Program] = None,
          kernel: Optional[str] = None):
    """The built cl.Program, from the cache when this source was built for this device with
    the same options. `kernel`: the kernel to be taken from it; when a known device bug
    (tlgpu.runtime.workarounds) is triggered by that kernel's shape, the build gets the entry's
    options and a `DeviceWorkaround` warning says so."""
    import pyopencl as cl

    source = lowered.source if SOURCE_FILTER is None else SOURCE_FILTER(lowered.source)
    found = workarounds.applicable(workarounds.kernel_text(source, kernel), dev.device) \
        if kernel else ()
    options = list(BUILD_OPTIONS) + list(workarounds.options(found))
    if found:  # compile just this kernel with the options, not the whole batch again
        source = workarounds.only_kernel(source, kernel)
    for w in found:
        warnings.warn(DeviceWorkaround(
            f"kernel {kernel} on '{dev.device.name.strip()}': built with "
            f"{' '.join(w.options)} (known device bug {w.name}: {w.bug}; reproducer "
            f"{w.reproducer})"), stacklevel=2)
    key = (source, dev.key, tuple(options))
    if key in _PROGRAMS:
        return _PROGRAMS[key]
    _require_extensions(source, dev)
    try:
        with without_query_noise(is_oclgrind(dev.device)):
            prog = cl.Program(dev.context, source).build(options=options)
    except cl.RuntimeError as e:
        log = without_saved_source(str(e))  # pyopencl puts the build log in the message
        filename = program.filename if program else "<input>"
        diags = map_log(log, lowered.line_spans, filename)
        diags.append(Diagnostic(f"the OpenCL C compiler of '{dev.device.name}' rejected the "
                                f"generated code; its log:\n{log.strip()}", None, filename))
        raise BackendError(diags, program.source if program else "") from None
    _PROGRAMS[key] = prog
    return prog


class DeviceWorkaround(UserWarning):
    """A kernel was built around a known device-compiler bug (tlgpu.runtime.workarounds)."""


_HELPERS: dict[tuple[str, str], object] = {}


def _pointer_kernel(dev: DeviceHandle, elem: str):
    """A kernel filling a group's pointer array: out[i] = base + offsets[i] (on the device,
    since host code cannot form device pointers)."""
    import pyopencl as cl

    key = (dev.key, elem)
    if key not in _HELPERS:
        src = ("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
               f"kernel void tl_pointers(global {elem}* base, global long* offsets, "
               "global ulong* out) {\n"  # ulong: OpenCL C 1.2 has no pointer-to-pointer args
               "    size_t i = get_global_id(0);\n    out[i] = (ulong)(base + offsets[i]);\n}\n")
        _HELPERS[key] = cl.Program(dev.context, src).build().tl_pointers
    return _HELPERS[key]


def _padded(host: np.ndarray) -> np.ndarray:
    """A copy padded to a multiple of 8 bytes: 8/16-bit atomics touch the containing word."""
    nbytes = max(8, (host.nbytes + 7) // 8 * 8)
    out = np.zeros(nbytes // host.itemsize, host.dtype)
    out[:host.size] = host
    return out


class _Marshal:
    def __init__(self, dev: DeviceHandle, guard: bool = False):
        import pyopencl as cl

        self.cl = cl
        self.dev = dev
        self.readback: list[tuple[object, np.ndarray, np.ndarray]] = []  # (buf, padded, dst)
        self.keep: list[object] = []
        self.guards = Guards(dev) if guard else None  # runtime.guards: stores outside arguments

    def buffer(self, host: np.ndarray, writable: bool = True, name: Optional[str] = None):
        cl = self.cl
        pad = _padded(host)
        if self.guards is not None and writable:
            buf = self.guards.buffer(pad, name)
        else:
            buf = cl.Buffer(self.dev.context,
                            cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=pad)
        if writable:
            self.readback.append((buf, pad, host))
        self.keep.append(buf)
        return buf

    def memref(self, v: MemrefArg, name: Optional[str] = None):
        """The view's buffer from its first element. When the bound buffer has room before
        that element (the fuzzer's red zones, tlinterp.args.red_zones) and the offset is
        aligned for the device, pass a sub-buffer of the whole, so that a write before the
        first element lands in the guard instead of outside any allocation."""
        start = v.offset * v.buffer.itemsize
        if self.guards is not None:  # tlrun's guard zones (runtime.guards) bring their own room
            return self.buffer(v.buffer[v.offset:], name=name)
        if start and start % max(1, self.dev.device.mem_base_addr_align // 8) == 0:
            whole = self.buffer(v.buffer)
            sub = whole.get_sub_region(start, v.buffer.nbytes - start)
            self.keep.append(sub)
            return sub
        return self.buffer(v.buffer[v.offset:])

    def longs(self, values) -> object:
        return self.buffer(np.asarray(list(values) or [0], np.int64), writable=False)

    def args(self, fn: ir.Function, bound: BoundArgs) -> list:
        """The kernel's argument values, in the order of `callconv.argument_params`: the
        order the lowering declares them in, and the one foreign code must follow."""
        return [self.value(p, bound.values[a.value.name], a.type)
                for a in fn.args for p in argument_params(a.value.name, a.type)]

    def value(self, p: Param, v, t) -> object:
        """What is passed for parameter `p` of an argument bound to `v`, of type `t`."""
        if p.role == "value":
            return v
        if isinstance(v, MemrefArg):
            if p.role == "data":
                return self.memref(v, p.arg)
            return np.int64((v.shape if p.role == "shape" else v.strides)[p.mode])
        assert isinstance(v, GroupArg) and isinstance(t, GroupType)
        if p.role == "data":
            return self.pointers(v, t.memref, p.arg)
        if p.role == "offset":
            return np.int64(v.offset)
        return self.longs((mm.shape if p.role == "shape" else mm.strides)[p.mode]
                          for mm in v.members)

    def pointers(self, g: GroupArg, m: MemrefType, name: str):
        """The group's member pointer array, filled on the device."""
        n = len(g.members)
        base = g.members[0].buffer if g.members else np.zeros(1, m.element.dtype)
        base_buf = self.buffer(base, name=name)
        # zero-filled from the host although the kernel below writes every entry: after
        # earlier launches in the same process, Oclgrind forgets that a kernel initialised
        # a buffer the host never wrote and reports "Uninitialized address" at every member
        # access (findings 4291361bde61, ee423f97aac1 of the pocl campaign)
        ptrs = self.cl.Buffer(self.dev.context,
                              self.cl.mem_flags.READ_WRITE | self.cl.mem_flags.COPY_HOST_PTR,
                              hostbuf=np.zeros(max(1, n) * self.dev.device.address_bits // 8,
                                               np.uint8))
        self.keep.append(ptrs)
        if n:
            offs = self.longs(mm.offset - g.offset for mm in g.members)
            _pointer_kernel(self.dev, ctype(m.element))(self.dev.queue, (n,), None,
                                                        base_buf, offs, ptrs)
        return ptrs

    def restore(self) -> None:
        """Upload the inputs again (the device copies may have been written by a launch)."""
        for buf, pad, _ in self.readback:
            self.cl.enqueue_copy(self.dev.queue, buf, pad)

    def read_back(self) -> None:
        for buf, pad, _ in self.readback:
            self.cl.enqueue_copy(self.dev.queue, pad, buf)
        self.dev.queue.finish()
        for _, pad, dst in self.readback:
            dst[...] = pad[:dst.size]


def prepare(program: ir.Program, function: ir.Function, device: Optional[str],
            config: Optional[LoweringConfig]):
    """(device, kernel, geometry) for a function: lowered and built once per program."""
    dev = handle(device)
    cfg = device_config(dev, config)
    lowered = lowered_for(program, dev, cfg)
    kname, geo = lowered.kernels[function.name]
    if geo.size > dev.device.max_work_group_size:
        raise BackendError([Diagnostic(
            f"work-group size {geo.wg0}x{geo.wg1} = {geo.size} exceeds the maximum "
            f"{dev.device.max_work_group_size} of '{dev.device.name}'", function.span,
            program.filename)], program.source)
    prog = build(lowered, dev, program, kname)
    import pyopencl as cl

    with without_query_noise(is_oclgrind(dev.device)):
        kernel = cl.Kernel(prog, kname)

    limit = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev.device)
    if geo.size > limit:
        raise BackendError([Diagnostic(
            f"work-group size {geo.size} exceeds the {limit} work-items the compiled kernel "
            f"allows on '{dev.device.name}'", function.span, program.filename)],
            program.source)
    return dev, kernel, geo


def _kernel_seconds(event, wall: float) -> float:
    """The event's profiled duration; the wall time when the device does not profile."""
    import pyopencl as cl

    try:
        return (event.profile.end - event.profile.start) * 1e-9
    except cl.Error:
        return wall


def run_bound(program: ir.Program, function: ir.Function, bound: BoundArgs, groups: int,
              device: Optional[str] = None, config: Optional[LoweringConfig] = None,
              repeat: int = 1, guard: bool = False) -> list[float]:
    """Launch `repeat` times on the same inputs (the results are those of one launch); returns
    each launch's kernel time in seconds, from the queue's profiling events. `guard`: surround
    the argument buffers with guard zones and raise ExecutionError when the kernel stored
    into one (tlgpu.runtime.guards)."""
    import pyopencl as cl

    dev, kernel, geo = prepare(program, function, device, config)
    check_launch(program, function, bound, groups, geo.size, dev.device.address_bits)
    if groups == 0:
        return []
    lowered = lowered_for(program, dev, device_config(dev, config))
    extra = []
    slab = lowered.local_args.get(function.name, 0)
    if slab:  # Oclgrind tracks uninitialised local memory only in kernel arguments
        extra.append(cl.LocalMemory(slab))
    grind = is_oclgrind(dev.device)
    times = []
    try:
        with captured_stderr() if grind else _nothing() as cap:
            marshal = _Marshal(dev, guard=guard and not grind)
            args = marshal.args(function, bound)
            for k in range(max(1, repeat)):
                if k:
                    marshal.restore()
                start = time.perf_counter()
                event = kernel(dev.queue, (geo.wg0, geo.wg1, groups), (geo.wg0, geo.wg1, 1),
                               *args, *extra)
                event.wait()
                times.append(_kernel_seconds(event, time.perf_counter() - start))
            if marshal.guards is not None:
                marshal.guards.check(function.name)
            marshal.read_back()
    except cl.Error as e:
        raise ExecutionError(f"OpenCL launch of @{function.name} on '{dev.device.name}' "
                             f"failed: {e}") from None
    if grind:
        raise_reports(cap.text, lowered.line_spans, program.filename, program.source)
    return times


@contextlib.contextmanager
def _nothing():
    yield None


def run(program: Union[ir.Program, str], args, func: Optional[str] = None,
        groups: Optional[int] = None, device: Optional[str] = None,
        config: Optional[LoweringConfig] = None) -> dict[str, np.ndarray]:
    program = _as_program(program)
    function = _function(program, func)
    bound = bind(function, args)
    run_bound(program, function, bound, bound.num_groups(groups), device=device, config=config)
    return unbind(bound)


def _function(program: ir.Program, func: Optional[str]) -> ir.Function:
    try:
        return program.function(func)
    except KeyError as e:  # same message and exit status as the interpreter
        names = ", ".join("@" + f.name for f in program.functions) or "none"
        raise ArgumentError(f"{e.args[0]} (functions in {program.filename}: {names})") from None
