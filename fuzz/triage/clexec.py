"""Run a given OpenCL C source (generated, or a reducer's candidate) with a finding's arguments.

Triage and reduction work below the tensor language: they rebuild the same or an edited
source with other build options and on other devices. `Target` names where that happens; a
`RewritingTarget` simulates a device compiler bug (it edits the source only when optimisation
is on) so that the triage can be tested without one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from tlgpu.runtime.buildlog import without_saved_source
from tlinterp.io.args import bind, unbind
from tlinterp.lang.diagnostics import TLError

OPT_DISABLE = "-cl-opt-disable"


@dataclass
class Prepared:
    """A finding lowered for one device: what clexec.run_source needs."""

    source: str
    kernel: str
    geometry: object
    local_bytes: int
    function: object



@dataclass(frozen=True)
class Target:
    """A tlgpu device string (pocl, nvidia, oclgrind, PLATFORM:DEVICE)."""

    device: str

    @property
    def label(self) -> str:
        return self.device

    def source_for(self, source: str, options: tuple[str, ...]) -> str:
        """The source the device's compiler effectively sees."""
        return source


@dataclass(frozen=True)
class RewritingTarget(Target):
    """A simulated device-compiler bug: `pattern` becomes `replacement` (a regular expression
    substitution) unless the build disables optimisation."""

    pattern: str = ""
    replacement: str = ""

    @property
    def label(self) -> str:
        return f"{self.device} (simulated compiler bug)"

    def source_for(self, source: str, options: tuple[str, ...]) -> str:
        if OPT_DISABLE in options:
            return source
        return re.sub(self.pattern, self.replacement, source)


@dataclass(frozen=True)
class Size:
    """A work-group size in the shape of tlgpu's geometry (what `_launch` reads)."""

    wg0: int
    wg1: int


@dataclass
class Outcome:
    """One run: the outputs (None when it failed), the failure, Oclgrind's reports."""

    outputs: Optional[dict[str, np.ndarray]]
    error: Optional[str] = None
    reports: tuple[str, ...] = ()
    size: Optional[Size] = None  # the kernel's reqd_work_group_size, when that was used




def device_info(target: Target) -> dict[str, str]:
    """Platform, device, driver and OpenCL C version: what a vendor needs to know."""
    from tlgpu.runtime.devices import handle

    d = handle(target.device).device
    return {"platform": d.platform.name.strip(), "device": d.name.strip(),
            "driver": d.driver_version.strip(), "opencl": d.version.strip(),
            "opencl_c": getattr(d, "opencl_c_version", "").strip()}


def run_source(target: Target, source: str, kernel: str, function, args: dict,
               groups: int, geometry, local_bytes: int = 0,
               options: tuple[str, ...] = ()) -> Outcome:
    """Build `source` for `target` with `options`, launch `kernel` like tlgpu does and return
    the arguments after the run (the .npz convention). `geometry` (.wg0, .wg1) None: the
    kernel's reqd_work_group_size, as for another compiler's code (docs/conformance.md)."""
    import pyopencl as cl

    from tlgpu.runtime.devices import handle
    from tlgpu.runtime.oclgrind import captured_stderr, is_oclgrind, parse, without_query_noise

    try:
        dev = handle(target.device)
    except TLError as e:
        return Outcome(None, str(e))
    grind = is_oclgrind(dev.device)
    text = target.source_for(source, options)
    try:
        with without_query_noise(grind):
            prog = cl.Program(dev.context, text).build(options=list(options))
            k = getattr(prog, kernel)
    except (cl.Error, AttributeError) as e:
        return Outcome(None, f"build failed: {without_saved_source(str(e)).strip()[:2000]}")
    size = None
    if geometry is None:
        geometry = size = required_size(k, dev.device)
        if geometry is None:
            return Outcome(None, f"kernel '{kernel}' has no reqd_work_group_size(W0, W1, 1)")
    bound = bind(function, args)
    extra = [cl.LocalMemory(local_bytes)] if local_bytes else []
    cap = None
    try:
        if grind:
            with captured_stderr() as cap:
                _launch(dev, k, function, bound, groups, geometry, extra)
        else:
            _launch(dev, k, function, bound, groups, geometry, extra)
    except cl.Error as e:
        return Outcome(None, f"launch failed: {e}")
    reports = tuple(r.what + (f" (line {r.line})" if r.line else "")
                    for r in parse(cap.text)) if cap is not None else ()
    return Outcome(unbind(bound), None, reports, size)


def required_size(kernel, device) -> Optional[Size]:
    """The kernel's reqd_work_group_size (W0, W1, 1), or None when it has none."""
    import pyopencl as cl

    reqd = tuple(kernel.get_work_group_info(
        cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, device))
    if not any(reqd) or reqd[2] != 1:
        return None
    return Size(int(reqd[0]), int(reqd[1]))


def _launch(dev, kernel, function, bound, groups: int, geo, extra: list) -> None:
    from tlgpu.runtime.launch import _Marshal

    marshal = _Marshal(dev)
    kernel(dev.queue, (geo.wg0, geo.wg1, groups), (geo.wg0, geo.wg1, 1),
           *marshal.args(function, bound), *extra)
    marshal.read_back()


def differing(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per output key, the boolean mask of elements that differ (bitwise; NaN equals NaN)."""
    out = {}
    for key in a:
        x, y = np.asarray(a[key]), np.asarray(b.get(key))
        if y is None or x.shape != y.shape:
            out[key] = np.ones(x.shape, bool)
            continue
        if x.dtype.kind == "f":
            diff = ~((x == y) | (np.isnan(x) & np.isnan(y)))
        else:
            diff = x != y
        if diff.any():
            out[key] = diff
    return out


def count(masks: dict[str, np.ndarray]) -> int:
    return int(sum(m.sum() for m in masks.values()))


def _serve(conn) -> None:
    from fuzz.campaign.sandbox import quiet_child, serve

    quiet_child()  # Oclgrind's reports are captured per run, not read from fd 2
    serve(conn, lambda msg: run_source(*msg[0], **msg[1]))


class Isolated:
    """`run_source` in a child process with a time limit: a reducer's candidate may loop
    forever or crash the driver; that candidate fails and the child is restarted."""

    def __init__(self, timeout: float = 30.0):
        import multiprocessing as mp

        self.ctx = mp.get_context("spawn")  # OpenCL state must not be inherited
        self.timeout = timeout
        self.proc = self.conn = None
        self.restarts = 0

    def __call__(self, *args, **kwargs) -> Outcome:
        if self.proc is None or not self.proc.is_alive():
            parent, child = self.ctx.Pipe()
            self.proc = self.ctx.Process(target=_serve, args=(child,), daemon=True)
            self.proc.start()
            child.close()
            self.conn = parent
        try:
            self.conn.send((args, kwargs))
            if self.conn.poll(self.timeout):
                return self.conn.recv()
            problem = f"no answer within {self.timeout:.0f} s"
        except (EOFError, ConnectionError, OSError):
            problem = "the OpenCL side died"
        self.close()
        self.restarts += 1
        return Outcome(None, problem)

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(5)
        self.proc = self.conn = None
