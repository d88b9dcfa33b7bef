"""Compile once, launch many: a built kernel for one function, bound to arguments once and
launched any number of times, with OpenCL profiling-event timing.

    k = tlgpu.compile(program, "f", device="pocl")
    b = k.bind(args)            # marshalled to device buffers once
    seconds = k.launch(b).seconds   # waits; device time of the launch
    out = b.read()              # the .npz convention, like tlgpu.run
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

import numpy as np

from tlgpu.lowering.config import LoweringConfig
from tlgpu.runtime.devices import DeviceHandle, handle
from tlgpu.runtime.launch import BUILD_OPTIONS, _Marshal, prepare
from tlinterp import ir
from tlinterp.args import BoundArgs, bind, unbind
from tlinterp.diagnostics import BackendError, ExecutionError

_BUILT: dict[tuple[str, str], object] = {}  # external OpenCL C sources, by source and device


class ForeignCodeError(BackendError):
    """OpenCL C from another compiler cannot be used: it does not build, lacks the kernel, or
    its work-group size is unknown or too large."""


class Binding:
    """Arguments marshalled to device buffers for one kernel; launches update them in place."""

    def __init__(self, kernel: Kernel, bound: BoundArgs, groups: int):
        self.kernel, self.bound, self.groups = kernel, bound, groups
        self._marshal = _Marshal(kernel.device)
        try:
            self.values = self._marshal.args(kernel.function, bound)
        except kernel.cl.Error as e:
            raise ExecutionError(f"cannot place the arguments of @{kernel.function.name} on "
                                 f"'{kernel.device_name}': {e}") from None

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
    """A built OpenCL kernel for `function`, launched on (wg0, wg1, groups) work-items in
    work-groups of (wg0, wg1, 1)."""

    def __init__(self, function: ir.Function, device: DeviceHandle, cl_kernel,
                 work_group_size: tuple[int, int], source: str):
        import pyopencl as cl

        self.cl = cl
        self.function, self.device, self.cl_kernel = function, device, cl_kernel
        self.work_group_size, self.source = work_group_size, source

    @property
    def device_name(self) -> str:
        return self.device.device.name

    @property
    def context(self):
        return self.device.context

    @property
    def queue(self):
        return self.device.queue

    def bind(self, args: Mapping[str, np.ndarray], groups: Optional[int] = None) -> Binding:
        """Validate and copy `args` (the .npz convention) to the device."""
        bound = bind(self.function, args)
        return Binding(self, bound, bound.num_groups(groups))

    def launch(self, binding: Binding, wait: bool = True) -> Launch:
        if binding.kernel is not self:
            raise ValueError("this binding belongs to another kernel")
        if binding.groups == 0:
            return Launch(None)
        w0, w1 = self.work_group_size
        try:
            event = self.cl_kernel(self.device.queue, (w0, w1, binding.groups), (w0, w1, 1),
                                   *binding.values)
            launch = Launch(event)
            if wait:
                launch.wait()
        except self.cl.Error as e:
            raise ExecutionError(f"OpenCL launch of @{self.function.name} on "
                                 f"'{self.device_name}' failed: {e}") from None
        return launch

    def run(self, args: Mapping[str, np.ndarray], groups: Optional[int] = None
            ) -> dict[str, np.ndarray]:
        """Bind, launch once and read back: what `tlgpu.run` returns."""
        binding = self.bind(args, groups)
        self.launch(binding)
        return binding.read()


def compile(program: ir.Program, func: Optional[str] = None, device: Optional[str] = None,
            config: Optional[LoweringConfig] = None) -> Kernel:
    """Lower and build `func` of a checked program once (builds are cached by source and
    device)."""
    from tlgpu.runtime.launch import _function

    function = _function(program, func)
    dev, cl_kernel, geo = prepare(program, function, device, config)
    return Kernel(function, dev, cl_kernel, (geo.wg0, geo.wg1), "")


def from_source(source: str, function: ir.Function, kernel_name: str,
                device: Optional[str] = None,
                work_group_size: Optional[tuple[int, int]] = None) -> Kernel:
    """Build OpenCL C that someone else generated for `function` under the calling convention
    (docs/conformance.md). The work-group size is the kernel's reqd_work_group_size, else
    `work_group_size`. ForeignCodeError when it does not build or the size is unknown."""
    import pyopencl as cl

    dev = handle(device)
    key = (source, dev.key)
    if key not in _BUILT:
        try:
            _BUILT[key] = cl.Program(dev.context, source).build(options=BUILD_OPTIONS)
        except cl.Error as e:  # the build log is in the message
            raise ForeignCodeError(f"the OpenCL C does not build on '{dev.device.name}':\n"
                               f"{str(e).strip()}") from None
    prog = _BUILT[key]
    try:
        cl_kernel = cl.Kernel(prog, kernel_name)
    except cl.Error:
        names = prog.get_info(cl.program_info.KERNEL_NAMES) or "none"
        raise ForeignCodeError(f"the OpenCL C has no kernel '{kernel_name}' for @{function.name} "
                           f"(kernels: {names.replace(';', ', ')})") from None
    info = cl.kernel_work_group_info
    reqd = tuple(cl_kernel.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, dev.device))
    if any(reqd):
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
                           f"exceeds the {limit} work-items it allows on '{dev.device.name}'")
    return Kernel(function, dev, cl_kernel, size, source)
