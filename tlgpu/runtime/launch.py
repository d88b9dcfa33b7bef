"""Run a lowered function through pyopencl: build (cached by source, device and options;
known device bugs steered around per kernel, tlgpu.runtime.workarounds), marshal the
bound arguments (one cl.Buffer per argument buffer; group pointer arrays built on the device)
in the calling convention of tlgpu.lowering.callconv, launch as it says (v0.3: global
(wg0, wg1, N), local (wg0, wg1, 1)), read the buffers back."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Optional, Union

import numpy as np

from tlgpu.lowering.callconv import Convention, Param, argument_params, launch_sizes
from tlgpu.lowering.config import LoweringConfig
from tlgpu.lowering.program import Lowered, lower_program
from tlgpu.lowering.v04.subgroups import NoSubgroups
from tlgpu.runtime import workarounds
from tlgpu.runtime.buildlog import map_log, without_saved_source
from tlgpu.runtime.devices import DeviceHandle, handle, subgroup_strategy
from tlgpu.runtime.guards import Guards
from tlgpu.runtime.oclgrind import captured_stderr, is_oclgrind, raise_reports, without_query_noise
from tlgpu.runtime.prelaunch import check_launch
from tlinterp.io.args import BoundArgs, GroupArg, Groups, MemrefArg, bind, grid_of, unbind
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import ArgumentError, BackendError, Diagnostic, ExecutionError
from tlinterp.lang.types import GroupType, MemrefType, ScalarType

BUILD_OPTIONS = ["-cl-fp32-correctly-rounded-divide-sqrt"]
_PROGRAMS: dict[tuple[str, str, tuple[str, ...]], object] = {}
# Self-test hook for the fuzzer's mutation bench (fuzz.mutants.lowering_v03): rewrites the OpenCL C
# just before the build, as a miscompiling driver would. Always None outside those self-tests.
SOURCE_FILTER: Optional[Callable[[str], str]] = None
# Lowerings per live program object. Keyed by id() for speed, but an id can be reused once its
# program is garbage-collected: the entry keeps a weak reference and is dropped with the program.
_LOWERED: dict[tuple[int, str, LoweringConfig], tuple[weakref.ref, Lowered]] = {}


def _as_program(program: Union[ir.Program, str]) -> ir.Program:
    from tlinterp.front.pipeline import lowerable

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
    cl20 = opencl_c_20(d)
    config = dataclasses.replace(config, atomics_cl20=cl20 if config.atomics_cl20 is None
                                 else config.atomics_cl20 and cl20)
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
        local_slab_argument=config.local_slab_argument or is_oclgrind(d),
        subgroups=subgroup_strategy(d, config.subgroups))


def opencl_c_20(d) -> bool:
    """Whether the device compiles OpenCL C 2.0 (its atomics with memory orders and scopes;
    lowering/atomics.py): its OpenCL C version is 2.0 or later."""
    m = re.match(r"OpenCL C (\d+)\.(\d+)", d.opencl_c_version or "")
    return m is not None and (int(m.group(1)), int(m.group(2))) >= (2, 0)


# OpenCL C 2.0 atomics in a source (lowering/atomics.py: each an `atomic_*_explicit(` call;
# no other text of a kernel has a name ending so before a bracket) need the 2.0 language
CL20_MARK = "_explicit("


def lowered_for(program: ir.Program, dev: DeviceHandle, config: LoweringConfig) -> Lowered:
    key = (id(program), dev.key, config)
    entry = _LOWERED.get(key)
    if entry is not None and entry[0]() is program:
        return entry[1]

    def forget(ref: weakref.ref, key=key) -> None:
        if _LOWERED.get(key, (None,))[0] is ref:
            del _LOWERED[key]

    try:
        lowered = lower_program(program, None, config)
    except NoSubgroups as e:  # in the device's words
        label = f"'{dev.device.platform.name.strip()}: {dev.device.name.strip()}'"
        raise BackendError([dataclasses.replace(d, message=d.message.replace(
            "this device", f"the device {label}")) for d in e.diagnostics], e.source) from None
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
    if CL20_MARK in source:
        options.append("-cl-std=CL2.0")
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


_HELPERS: dict[str, object] = {}


def _pointer_kernel(dev: DeviceHandle):
    """A kernel filling a group's pointer array: out[i] = base + offsets[i] bytes (on the
    device, since host code cannot form device pointers)."""
    import pyopencl as cl

    if dev.key not in _HELPERS:
        src = ("kernel void tl_pointers(global uchar* base, global long* offsets, "
               "global ulong* out) {\n"  # ulong: OpenCL C 1.2 has no pointer-to-pointer args
               "    size_t i = get_global_id(0);\n    out[i] = (ulong)(base + offsets[i]);\n}\n")
        _HELPERS[dev.key] = cl.Program(dev.context, src).build().tl_pointers
    return _HELPERS[dev.key]


def _padded(host: np.ndarray) -> np.ndarray:
    """A copy padded to a multiple of 8 bytes: 8/16-bit atomics touch the containing word."""
    nbytes = max(8, (host.nbytes + 7) // 8 * 8)
    out = np.zeros(nbytes // host.itemsize, host.dtype)
    out[:host.size] = host
    return out


def aligned_layout(starts: list[int], align: int) -> list[tuple[int, int]]:
    """(byte position, shift) per distinct start, in increasing order: the buffer is cut at
    the starts of its members and each piece moved up by its shift (never less than the
    previous piece's), so that every member starts at a multiple of `align` while the bytes
    before, between and after the members (red zones, gaps) stay where they were relative to
    them. Group members share one host buffer at whatever offsets the arguments gave
    (tlinterp.io.args); a kernel may assume each member's base pointer aligned."""
    out: list[tuple[int, int]] = []
    shift = 0
    for start in sorted(set(starts)):
        shift += -(start + shift) % align
        out.append((start, shift))
    return out


def _moved(raw: np.ndarray, layout: list[tuple[int, int]]) -> np.ndarray:
    """`raw` (bytes) with its pieces moved as `layout` says; the gaps opened are zero."""
    if not layout:
        return raw.copy()
    out = np.zeros(raw.size + layout[-1][1], np.uint8)
    cuts = [p for p, _ in layout[1:]] + [raw.size]
    out[layout[0][1]:layout[0][1] + cuts[0]] = raw[:cuts[0]]  # the prefix moves with piece 0
    for (start, shift), end in zip(layout[1:], cuts[1:]):
        out[start + shift:end + shift] = raw[start:end]
    return out


def _restored(moved: np.ndarray, raw: np.ndarray, layout: list[tuple[int, int]]) -> None:
    """The inverse of `_moved`: the pieces copied back into `raw`."""
    if not layout:
        raw[...] = moved[:raw.size]
        return
    cuts = [p for p, _ in layout[1:]] + [raw.size]
    raw[:cuts[0]] = moved[layout[0][1]:layout[0][1] + cuts[0]]
    for (start, shift), end in zip(layout[1:], cuts[1:]):
        raw[start:end] = moved[start + shift:end + shift]


def _as_bytes(a: np.ndarray) -> np.ndarray:
    """The array's bytes: what OpenCL copies (bf16, an ml_dtypes type, has no buffer
    protocol of its own; c32/c64 are complex64/complex128, float2/double2 in memory)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


class _Marshal:
    """Arguments to kernel parameters under a calling convention (callconv.py). Every base
    pointer passed is aligned to the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN, as the v0.4
    convention requires: buffers and sub-buffers are, and group members are moved apart to
    such boundaries (`aligned_layout`)."""

    def __init__(self, dev: DeviceHandle, guard: bool = False, convention: Convention = "v0.3"):
        import pyopencl as cl

        self.cl = cl
        self.dev = dev
        self.convention = convention
        self.align = max(16, dev.device.mem_base_addr_align // 8)  # bits -> bytes
        # (buffer, bytes on the host, put them back into the argument)
        self.readback: list[tuple[object, np.ndarray, Callable[[np.ndarray], None]]] = []
        self.keep: list[object] = []
        self.guards = Guards(dev) if guard else None  # runtime.guards: stores outside arguments

    def buffer(self, host: np.ndarray, writable: bool = True, name: Optional[str] = None,
               put: Optional[Callable[[np.ndarray], None]] = None):
        """A device buffer holding `host`'s bytes; `put` takes them back after the launch
        (default: into `host` itself)."""
        cl = self.cl
        pad = _as_bytes(_padded(host))
        if self.guards is not None and writable:
            buf = self.guards.buffer(pad, name)
        else:
            buf = cl.Buffer(self.dev.context,
                            cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=pad)
        if writable:
            if put is None:
                flat = host.reshape(-1)

                def put(data: np.ndarray, flat=flat) -> None:  # contiguous: in place
                    flat.view(np.uint8)[...] = data[:flat.nbytes]
            self.readback.append((buf, pad, put))
        self.keep.append(buf)
        return buf

    def memref(self, v: MemrefArg, name: Optional[str] = None):
        """The view's buffer from its first element. When the bound buffer has room before
        that element (the fuzzer's red zones, tlinterp.io.args.red_zones) and the offset is
        aligned for the device, pass a sub-buffer of the whole, so that a write before the
        first element lands in the guard instead of outside any allocation."""
        start = v.offset * v.buffer.itemsize
        if self.guards is not None:  # tlrun's guard zones (runtime.guards) bring their own room
            return self.buffer(v.buffer[v.offset:], name=name)
        if start and start % self.align == 0:
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
        return [self.value(p, bound.values[a.value.name], a)
                for a in fn.args
                for p in argument_params(a.value.name, a.type, self.convention)]

    def value(self, p: Param, v, a: ir.Argument) -> object:
        """What is passed for parameter `p` of argument `a`, bound to `v`."""
        t = a.type
        if p.role == "value":
            return _scalar(v, t, a)
        if isinstance(v, MemrefArg):
            if p.role == "data":
                return self.memref(v, p.arg)
            return np.int64((v.shape if p.role == "shape" else v.strides)[p.mode])
        assert isinstance(v, GroupArg) and isinstance(t, GroupType)
        if p.role == "data":
            return self.pointers(v, t.memref, p.arg, a.attributes.get("alignment"))
        if p.role == "offset":
            return np.int64(v.offset)
        if p.role == "size":
            return np.int64(len(v.members))
        return self.longs((mm.shape if p.role == "shape" else mm.strides)[p.mode]
                          for mm in v.members)

    def pointers(self, g: GroupArg, m: MemrefType, name: str, alignment: object = None):
        """The group's member pointer array, filled on the device; every member's first
        element at a multiple of the alignment (the device's, or the argument's `alignment`
        attribute when larger)."""
        n = len(g.members)
        item = m.element.dtype.itemsize
        base = g.members[0].buffer if g.members else np.zeros(1, m.element.dtype)
        align = max(self.align, alignment if isinstance(alignment, int) else 0)
        flat = base.reshape(-1)
        raw = flat.view(np.uint8)
        layout = aligned_layout([mm.offset * item for mm in g.members], align)
        shift = dict(layout)

        def put(data: np.ndarray) -> None:
            _restored(data, raw, layout)

        base_buf = self.buffer(_moved(raw, layout), name=name, put=put)
        # zero-filled from the host although the kernel below writes every entry: after
        # earlier launches in the same process, Oclgrind forgets that a kernel initialised
        # a buffer the host never wrote and reports "Uninitialized address" at every member
        # access (findings 4291361bde61, ee423f97aac1 of the pocl campaign)
        ptrs = self.cl.Buffer(self.dev.context,
                              self.cl.mem_flags.READ_WRITE | self.cl.mem_flags.COPY_HOST_PTR,
                              hostbuf=np.zeros(max(1, n) * self.dev.device.address_bits // 8,
                                               np.uint8))
        self.keep.append(ptrs)
        if n:  # a member's pointer is its first element less the group offset (`a[i] + off`)
            offs = self.longs(mm.offset * item + shift[mm.offset * item] - g.offset * item
                              for mm in g.members)
            _pointer_kernel(self.dev)(self.dev.queue, (n,), None, base_buf, offs, ptrs)
        return ptrs

    def restore(self) -> None:
        """Upload the inputs again (the device copies may have been written by a launch)."""
        for buf, pad, _ in self.readback:
            self.cl.enqueue_copy(self.dev.queue, buf, pad)

    def read_back(self) -> None:
        for buf, pad, _ in self.readback:
            self.cl.enqueue_copy(self.dev.queue, pad, buf)
        self.dev.queue.finish()
        for _, pad, put in self.readback:
            put(pad)


def _scalar(v, t, a: ir.Argument):
    """A scalar argument as the kernel takes it: its own bytes (f16 half, c32/c64 float2/
    double2 as complex64/complex128), bf16 as its 16 bits; an i1 cannot be passed."""
    if getattr(t, "is_bool", False):
        raise ArgumentError(f"argument '{a.value.name}' is a bool (i1): the calling convention "
                            "cannot pass it, since an OpenCL kernel takes no bool parameter")
    if t is ScalarType.bf16:
        return np.asarray(v, t.dtype).reshape(1).view(np.uint16)[0]
    return v


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


def run_bound(program: ir.Program, function: ir.Function, bound: BoundArgs, groups: Groups,
              device: Optional[str] = None, config: Optional[LoweringConfig] = None,
              repeat: int = 1, guard: bool = False) -> list[float]:
    """Launch `repeat` times on the same inputs (the results are those of one launch); returns
    each launch's kernel time in seconds, from the queue's profiling events. `groups`: a
    count, or a grid (x, y, z), which needs the v0.4 convention when y or z > 1. `guard`:
    surround the argument buffers with guard zones and raise ExecutionError when the kernel
    stored into one (tlgpu.runtime.guards)."""
    import pyopencl as cl

    grid = grid_of(groups)
    dev, kernel, geo = prepare(program, function, device, config)
    check_launch(program, function, bound, grid, geo.size, dev.device.address_bits)
    if grid[0] * grid[1] * grid[2] == 0:
        return []
    cfg = device_config(dev, config)
    lowered = lowered_for(program, dev, cfg)
    global_size, local_size = launch_sizes(cfg.convention,  # type: ignore[arg-type]
                                           (geo.wg0, geo.wg1), grid)
    extra = []
    slab = lowered.local_args.get(function.name, 0)
    if slab:  # Oclgrind tracks uninitialised local memory only in kernel arguments
        extra.append(cl.LocalMemory(slab))
    grind = is_oclgrind(dev.device)
    times = []
    try:
        with captured_stderr() if grind else _nothing() as cap:
            marshal = _Marshal(dev, guard=guard and not grind,
                               convention=cfg.convention)  # type: ignore[arg-type]
            args = marshal.args(function, bound)
            for k in range(max(1, repeat)):
                if k:
                    marshal.restore()
                start = time.perf_counter()
                event = kernel(dev.queue, global_size, local_size, *args, *extra)
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
        groups: Optional[Groups] = None, device: Optional[str] = None,
        config: Optional[LoweringConfig] = None) -> dict[str, np.ndarray]:
    program = _as_program(program)
    function = _function(program, func)
    bound = bind(function, args)
    run_bound(program, function, bound, bound.grid(groups), device=device, config=config)
    return unbind(bound)


def _function(program: ir.Program, func: Optional[str]) -> ir.Function:
    try:
        return program.function(func)
    except KeyError as e:  # same message and exit status as the interpreter
        names = ", ".join("@" + f.name for f in program.functions) or "none"
        raise ArgumentError(f"{e.args[0]} (functions in {program.filename}: {names})") from None
