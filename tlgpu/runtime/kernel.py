"""Compile once, launch many: a built kernel for one function, bound to arguments once and
launched any number of times, with OpenCL profiling-event timing.

    k = tlgpu.compile(program, "f", device="pocl")
    b = k.bind(args)            # marshalled to device buffers once
    seconds = k.launch(b).seconds   # waits; device time of the launch
    out = b.read()              # the .npz convention, like tlgpu.run
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Optional

import numpy as np

from tlgpu.lowering.callconv import Convention, launch_sizes
from tlgpu.lowering.config import LoweringConfig
from tlgpu.runtime.buildlog import without_saved_source
from tlgpu.runtime.devices import DeviceHandle, handle
from tlgpu.runtime.launch import BUILD_OPTIONS, _Marshal, prepare
from tlinterp.io.args import BoundArgs, Groups, bind, unbind
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import BackendError, ExecutionError

# other compilers' programs (OpenCL C text or SPIR-V bytes), by code, device and build options
_BUILT: dict[tuple[object, str, str], object] = {}


class ForeignCodeError(BackendError):
    """OpenCL C from another compiler cannot be used: it does not build, lacks the kernel, or
    its work-group size is unknown or too large."""


class Binding:
    """Arguments marshalled to device buffers for one kernel; launches update them in place."""

    def __init__(self, kernel: Kernel, bound: BoundArgs, grid: tuple[int, int, int],
                 guard: bool = False):
        self.kernel, self.bound, self.grid = kernel, bound, grid
        self.groups = grid[0] * grid[1] * grid[2]
        # the grid must have a launch under the kernel's convention, before any buffer exists
        self.sizes = launch_sizes(kernel.convention, kernel.work_group_size, grid)
        self._marshal = _Marshal(kernel.device, guard=guard, convention=kernel.convention)
        try:
            self.values = self._marshal.args(kernel.function, bound)
        except kernel.cl.Error as e:
            raise ExecutionError(f"cannot place the arguments of @{kernel.function.name} on "
                                 f"'{kernel.device_name}': {e}") from None

    def check_guards(self, culprit: str) -> None:
        """ExecutionError when a launch stored outside an argument (guarded bindings only);
        `culprit` says whose code did it."""
        if self._marshal.guards is not None:
            self._marshal.guards.check(self.kernel.function.name, culprit)

    def read(self) -> dict[str, np.ndarray]:
        """The arguments after the launches so far, in the input's keys and layout."""
        try:
            self._marshal.read_back()
        except self.kernel.cl.Error as e:
            raise ExecutionError(f"reading back the results of @{self.kernel.function.name} "
                                 f"failed: {e}") from None
        return unbind(self.bound)


class Launch:
    """One enqueued launch; `seconds` waits for it and is its profiled device time."""

    def __init__(self, event):
        self.event = event

    def wait(self) -> None:
        if self.event is not None:
            self.event.wait()

    @property
    def seconds(self) -> float:
        if self.event is None:  # zero work-groups: nothing ran
            return 0.0
        self.event.wait()
        return (self.event.profile.end - self.event.profile.start) * 1e-9


class Kernel:
    """A built OpenCL kernel for `function`, taking its arguments and launched as calling
    convention `convention` says (tlgpu.lowering.callconv: v0.3 on (wg0, wg1, groups)
    work-items, v0.4 on the grid times the work-group size) in work-groups of (wg0, wg1, 1)."""

    def __init__(self, function: ir.Function, device: DeviceHandle, cl_kernel,
                 work_group_size: tuple[int, int], source: str,
                 convention: Convention = "v0.3"):
        import pyopencl as cl

        self.cl = cl
        self.function, self.device, self.cl_kernel = function, device, cl_kernel
        self.work_group_size, self.source = work_group_size, source
        self.convention = convention

    @property
    def device_name(self) -> str:
        return self.device.device.name

    @property
    def context(self):
        return self.device.context

    @property
    def queue(self):
        return self.device.queue

    def bind(self, args: Mapping[str, np.ndarray], groups: Optional[Groups] = None,
             guard: bool = False) -> Binding:
        """Validate and copy `args` (the .npz convention) to the device for a launch of
        `groups` work-groups (a count or a v0.4 grid); `guard`: surround the writable buffers
        with guard zones (tlgpu.runtime.guards)."""
        bound = bind(self.function, args)
        return Binding(self, bound, bound.grid(groups), guard)

    def launch(self, binding: Binding, wait: bool = True) -> Launch:
        if binding.kernel is not self:
            raise ValueError("this binding belongs to another kernel")
        if binding.groups == 0:
            return Launch(None)
        global_size, local_size = binding.sizes
        try:
            event = self.cl_kernel(self.device.queue, global_size, local_size, *binding.values)
            launch = Launch(event)
            if wait:
                launch.wait()
        except self.cl.Error as e:
            raise ExecutionError(f"OpenCL launch of @{self.function.name} on "
                                 f"'{self.device_name}' failed: {e}") from None
        return launch

    def run(self, args: Mapping[str, np.ndarray], groups: Optional[Groups] = None,
            guard: Optional[str] = None) -> dict[str, np.ndarray]:
        """Bind, launch once and read back: what `tlgpu.run` returns. `guard` names whose
        code runs: the buffers then get guard zones, and a store outside them is an
        ExecutionError blaming it instead of results."""
        binding = self.bind(args, groups, guard=guard is not None)
        self.launch(binding)
        if guard is not None:
            binding.check_guards(guard)
        return binding.read()


def compile(program: ir.Program, func: Optional[str] = None, device: Optional[str] = None,
            config: Optional[LoweringConfig] = None) -> Kernel:
    """Lower and build `func` of a checked program once (builds are cached by source and
    device)."""
    from tlgpu.runtime.launch import _function

    function = _function(program, func)
    dev, cl_kernel, geo = prepare(program, function, device, config)
    return Kernel(function, dev, cl_kernel, (geo.wg0, geo.wg1), "",
                  (config or LoweringConfig()).convention)  # type: ignore[arg-type]


# what OpenCL C that needs sub-groups mentions: the built-ins, the extensions, the attribute
_SUB_GROUPS = re.compile(r"\b(?:intel_sub_group_\w+|get_(?:max_|num_|enqueued_num_)?sub_group_\w+"
                         r"|sub_group_\w+|cl_intel_subgroups\w*|cl_khr_subgroups"
                         r"|intel_reqd_sub_group_size)\b")
SUB_GROUP_EXTENSIONS = ("cl_khr_subgroups", "cl_intel_subgroups")
SPIRV_MAGIC = bytes.fromhex("03022307")  # 0x07230203, little-endian


class MissingFeatureError(ForeignCodeError):
    """The code needs something the device does not have (sub-groups, SPIR-V input): no bug of
    the code, and no run can tell anything about it on this device."""


def has_sub_groups(device) -> bool:
    return any(e in device.extensions.split() for e in SUB_GROUP_EXTENSIONS)


def il_versions(device) -> str:
    """The intermediate languages the device builds programs from (e.g. 'SPIR-V_1.2'); empty
    for devices without clCreateProgramWithIL (OpenCL < 2.1 and no cl_khr_il_program)."""
    import pyopencl as cl

    try:
        return (device.get_info(cl.device_info.IL_VERSION) or "").strip()
    except (cl.Error, AttributeError, ValueError):
        return ""


def _device_words(dev: DeviceHandle) -> str:
    return f"'{dev.device.platform.name.strip()}: {dev.device.name.strip()}'"


def build_options_of(extra: str) -> list[str]:
    """The runtime's own build options plus a user's (`--build-options`), split like a shell,
    each once: what another compiler's code is built with (its triage rebuilds it so too)."""
    try:
        return list(dict.fromkeys([*BUILD_OPTIONS, *shlex.split(extra)]))
    except ValueError as e:
        raise ForeignCodeError(f"--build-options does not split like a command line ({e}): "
                               f"{extra}") from None


def from_source(source: str, function: ir.Function, kernel_name: str,
                device: Optional[str] = None,
                work_group_size: Optional[tuple[int, int]] = None,
                build_options: str = "", convention: Convention = "v0.3") -> Kernel:
    """Build OpenCL C that someone else generated for `function` under calling convention
    `convention` (docs/semantics.md), with the runtime's build options plus `build_options`.
    The work-group size is the function's work_group_size attribute, else the kernel's
    reqd_work_group_size, else `work_group_size`.
    ForeignCodeError when it does not build or the size is unknown; MissingFeatureError when
    it needs sub-groups the device lacks (checked first: the build log would only say that
    some name is undeclared)."""
    import pyopencl as cl

    dev = handle(device)
    options = build_options_of(build_options)
    key = (source, dev.key, " ".join(options))
    if key not in _BUILT:
        need = _SUB_GROUPS.search(source)
        if need and not has_sub_groups(dev.device):
            raise MissingFeatureError(
                f"the OpenCL C needs sub-groups ({need.group(0)}; cl_khr_subgroups / "
                f"cl_intel_subgroups): {_device_words(dev)} has none: use --device intel")
        try:
            _BUILT[key] = cl.Program(dev.context, source).build(options=options)
        except cl.Error as e:  # the build log is in the message
            raise ForeignCodeError(f"the OpenCL C does not build on {_device_words(dev)} "
                                   f"(options: {' '.join(options)}):\n"
                                   f"{without_saved_source(str(e)).strip()}"
                                   ) from None
    return _kernel(_BUILT[key], function, kernel_name, dev, work_group_size, "OpenCL C", source,
                   convention)


def from_il(il: bytes, function: ir.Function, kernel_name: str, device: Optional[str] = None,
            work_group_size: Optional[tuple[int, int]] = None,
            build_options: str = "", convention: Convention = "v0.3") -> Kernel:
    """Like `from_source`, for a SPIR-V module (clCreateProgramWithIL); MissingFeatureError on
    a device that takes no intermediate language."""
    import pyopencl as cl

    dev = handle(device)
    options = build_options_of(build_options)
    key = (il, dev.key, " ".join(options))
    if key not in _BUILT:
        if not il_versions(dev.device):
            raise MissingFeatureError(f"{_device_words(dev)} takes no SPIR-V (no "
                                      "CL_DEVICE_IL_VERSION): use --device intel")
        if il[:4] not in (SPIRV_MAGIC, SPIRV_MAGIC[::-1]):
            raise ForeignCodeError(f"the code is no SPIR-V module: it starts with {il[:16]!r}, "
                                   "not the magic number 0x07230203")
        try:
            _BUILT[key] = cl.Program(dev.context, il).build(options=options)
        except cl.Error as e:
            raise ForeignCodeError(f"the SPIR-V does not build on {_device_words(dev)} "
                                   f"(options: {' '.join(options)}):\n"
                                   f"{without_saved_source(str(e)).strip()}"
                                   ) from None
    return _kernel(_BUILT[key], function, kernel_name, dev, work_group_size, "SPIR-V", "",
                   convention)


def _kernel(prog, function: ir.Function, kernel_name: str, dev: DeviceHandle,
            work_group_size: Optional[tuple[int, int]], what: str, source: str,
            convention: Convention) -> Kernel:
    """The kernel of a built foreign program, with its work-group size checked."""
    import pyopencl as cl

    try:
        cl_kernel = cl.Kernel(prog, kernel_name)
    except cl.Error:
        names = prog.get_info(cl.program_info.KERNEL_NAMES) or "none"
        raise ForeignCodeError(f"the {what} has no kernel '{kernel_name}' for @{function.name} "
                               f"(kernels: {names.replace(';', ', ')})") from None
    info = cl.kernel_work_group_info
    reqd = tuple(cl_kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, dev.device))
    if function.work_group_size is not None:  # the program says it: what the code must take
        size = (int(function.work_group_size[0]), int(function.work_group_size[1]))
        if any(reqd) and tuple(reqd) != (*size, 1):
            raise ForeignCodeError(f"kernel '{kernel_name}': reqd_work_group_size{reqd} differs "
                                   f"from @{function.name}'s work_group_size attribute "
                                   f"[{size[0]},{size[1]}]")
    elif any(reqd):
        if reqd[2] != 1:
            raise ForeignCodeError(f"kernel '{kernel_name}': reqd_work_group_size{reqd} must have "
                                   "1 as its third size (work-groups are laid out along axis 2)")
        size = (int(reqd[0]), int(reqd[1]))
    elif work_group_size is not None:
        size = work_group_size
    else:
        raise ForeignCodeError(f"kernel '{kernel_name}' has no reqd_work_group_size attribute: "
                               "give the work-group size with --work-group-size W0xW1")
    limit = cl_kernel.get_work_group_info(info.WORK_GROUP_SIZE, dev.device)
    if size[0] * size[1] > limit:
        raise ForeignCodeError(f"kernel '{kernel_name}': work-group size {size[0]}x{size[1]} "
                               f"exceeds the {limit} work-items it allows on "
                               f"{_device_words(dev)}")
    return Kernel(function, dev, cl_kernel, size, source, convention)
