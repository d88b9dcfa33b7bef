"""The OpenCL implementations, registered as `opencl` (the reference lowering),
`opencl-c:COMMAND` (an external compiler that emits OpenCL C) and `spirv:COMMAND` (one that
emits SPIR-V); the code of the last two is built and launched in worker processes
(tlgpu.runtime.foreign)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
import time
from typing import Optional

from tlinterp.impl import Implementation, ImplOptions, Job, Outcome, SpecError, outcome_of_error
from tlinterp.impl.base import parse_work_group_size
from tlinterp.impl.command import (
    check_template,
    describe_exit,
    expand_template,
    rejection,
    run_command,
)
from tlinterp.impl.template import write_kernel
from tlinterp.io.args import Groups, groups_text
from tlinterp.lang.diagnostics import ArgumentError, BackendError, TLError

_LOCK = threading.Lock()  # one OpenCL queue at a time: the device parallelises itself


def _config(options: ImplOptions):
    from tlgpu.lowering.config import LoweringConfig

    try:
        return LoweringConfig.from_overrides(list(options.lowering))
    except BackendError as e:  # named by the flag that gave it, in every tool
        text = "; ".join(d.message for d in e.diagnostics)
        raise SpecError(text if text.startswith("--lowering") else f"--lowering: {text}"
                        ) from None


def _program(job: Job):
    from tlinterp.front.pipeline import lowerable

    if job.program is not None:
        return lowerable(job.program)
    # a v0.4 program runs in its v0.3 form, or is refused as not yet lowered
    return lowerable(_checked(job))


def _checked(job: Job):
    """The job's program checked in its own language (job.program, else the text checked),
    never lowered: what another compiler compiled (its signature and attributes decide the
    calling convention, the parameters and the launch)."""
    if job.program is not None:
        return job.program
    import tlinterp

    return tlinterp.check(tlinterp.parse(job.source, filename=job.filename, lang=job.lang))


def _one_dimensional(groups: Optional[Groups]) -> Optional[int]:
    """Our lowering launches a 1-D grid (work-groups along axis 2, callconv.launch_sizes):
    a count, or X,1,1; a grid with Y or Z > 1 is refused in words."""
    if not isinstance(groups, (tuple, list)):
        return groups
    if tuple(groups[1:]) != (1, 1):
        raise ArgumentError(f"--groups {groups_text(groups)}: the opencl implementation (our "
                            "lowering) launches a one-dimensional grid of work-groups; a grid "
                            "with Y or Z > 1 runs on interp, opencl-c: and spirv:")
    return groups[0]


class _OnADevice:
    """The device choice of the implementations that build OpenCL (options.device)."""

    options: ImplOptions

    def device(self) -> Optional[str]:
        from tlgpu.runtime.devices import find_device, label

        return label(find_device(self.options.device))

    def devices(self) -> Optional[list]:
        from tlgpu.runtime.devices import inventory

        return inventory()


class OpenCL(_OnADevice, Implementation):
    parallel = False
    front_end = True

    def __init__(self, spec: str, options: ImplOptions):
        self.spec, self.options = spec, options
        self.config = _config(options)

    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        from tlgpu import run

        try:
            program = _program(job)
            groups = _one_dimensional(job.groups)
            with _LOCK:
                config = self._tuned(program, job.args, job.func, groups)
                out = run(program, job.args, func=job.func, groups=groups,
                          device=self.options.device, config=config)
        except TLError as e:
            return outcome_of_error(e)
        except Exception as e:  # noqa: BLE001 - a bug of the backend is that case's result
            return Outcome("crashed", message=f"raised {type(e).__name__}: {e}")
        return Outcome("ok", outputs=out)

    def run_isolated(self, program, args, func: Optional[str], groups: Optional[Groups],
                     repeat: int = 1, timeout: Optional[float] = None):
        """Build and launch (`repeat` times) in a child process (tlgpu.runtime.isolated): what tlrun
        uses, so that a crash on the device is a result and never takes the tool down; past
        `timeout` seconds the child is killed (ExecutionError). (With
        `tune`, the search runs here first: it times configs the fuzzer checks.)"""
        from tlgpu.runtime.isolated import run_isolated

        groups = _one_dimensional(groups)
        config = self._tuned(program, args, func, groups)
        return run_isolated(program, args, func=func, groups=groups, device=self.options.device,
                            config=config, repeat=repeat, timeout=timeout)

    def _tuned(self, program, args, func: Optional[str], groups: Optional[int]):
        """With `tune`: the fastest config for these arguments (tlgpu.tune), --lowering
        applied on top; else the configured one."""
        if not self.options.tune:
            return self.config
        from tlgpu.lowering.config import LoweringConfig
        from tlgpu.tuning.tuner import print_table, tune

        result = tune(program, args, func=func, groups=groups, device=self.options.device)
        print_table(result)
        return LoweringConfig.from_overrides(list(self.options.lowering), result.best)

    def emit(self, program, func: Optional[str]) -> str:
        from tlgpu import lower

        return lower(program, func, self.config)


def opencl_factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """the OpenCL lowering of this package, on --device (pocl, nvidia, oclgrind, ...)"""
    if arg:  # opencl:DEVICE, the short form of --device
        options = dataclasses.replace(options, device=arg)
    return OpenCL("opencl", options)


FIELDS = ("tl", "out", "func")
# a bound for the device side of a job whose caller gives none (tlrun has no --timeout): a
# spinning kernel must not hang the tool
DEFAULT_TIMEOUT = 600.0


class _Foreign(_OnADevice, Implementation):
    """Runs COMMAND to turn the .tl file into code ({out} or its stdout), then builds and
    launches the kernel the calling convention names in a worker process
    (tlgpu.runtime.foreign) that the timeout reaches."""

    kind = ""  # ForeignJob.kind
    runs_elsewhere = True  # compiler and device in other processes: may overlap our own work
    what = ""  # the code, in messages
    suffix = ""  # of {out}

    def __init__(self, command: str, options: ImplOptions):
        from tlgpu.runtime.foreign import ForeignRunner

        check_template(command, FIELDS, ("tl",))
        self.command = command
        self.spec = f"{self.kind}:{command}"
        self.options = options
        self.size = parse_work_group_size(options.work_group_size)
        self.runner = ForeignRunner(options.device)

    def compile_code(self, job: Job, timeout: Optional[float]
                     ) -> tuple[Optional[bytes], Outcome]:
        """(the code, ok) or (None, what went wrong) after running the compiler."""
        with tempfile.TemporaryDirectory(prefix=f"tl-{self.kind}-") as tmp:
            tl = write_kernel(job, tmp)
            out = os.path.join(tmp, "out" + self.suffix)
            uses_out = "{out}" in self.command
            values = {"tl": tl, "out": out, "func": job.func}
            done = run_command(expand_template(self.command, values), timeout)
            command = " ".join(expand_template(
                self.command, {"tl": os.path.basename(tl), "out": "out" + self.suffix,
                               "func": job.func}))
            if done.code is None:
                status = "timeout" if "no answer" in done.problem else "crashed"
                return None, Outcome(status, message=f"the compiler: {done.problem}\n"
                                     f"{done.stderr}".strip(), command=command)
            said = rejection(done, self.options.reject_status)  # the tools' one rule
            if said is not None:
                said.command = command
                return None, said
            if done.code != 0:
                return None, Outcome("crashed", message=f"the compiler ended with "
                                     f"{describe_exit(done.code)}\n{done.text}".strip(),
                                     command=command)
            if uses_out:
                try:
                    with open(out, "rb") as f:
                        code = f.read()
                except OSError:
                    code = b""
            else:
                code = done.stdout_bytes
            if not code.strip():
                where = "{out}" if uses_out else "stdout"
                return None, Outcome("crashed", message=f"the compiler exited 0 but wrote no "
                                     f"{self.what} to {where}\n{done.stderr}".strip(),
                                     command=command)
            return code, Outcome("ok", message=done.stderr, command=command)

    def _code(self, data: bytes):
        return data

    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        from tlgpu.lowering.callconv import convention_of
        from tlgpu.lowering.function import kernel_name
        from tlgpu.runtime.foreign import ForeignJob

        if timeout is None:
            timeout = DEFAULT_TIMEOUT
        deadline = time.monotonic() + timeout
        code, compiled = self.compile_code(job, timeout)
        if code is None:
            return compiled
        try:
            program = _checked(job)  # never lowered: the compiler's code runs, not ours
            function = program.function(job.func) if job.func or len(program.functions) != 1 \
                else program.functions[0]
        except TLError:  # the reference rejects it: an accepted invalid program
            return Outcome("ok", outputs={}, message="the compiler accepted the program "
                           "(exit 0)", command=compiled.command)
        except KeyError as e:
            return Outcome("rejected", message=str(e.args[0]), command=compiled.command)
        # the device gets what the compiler left of the case's time
        left = max(deadline - time.monotonic(), 0.1)
        o = self.runner.run(ForeignJob(self.kind, self._code(code), function,
                                       kernel_name(function), self.size,
                                       self.options.build_options, dict(job.args), job.groups,
                                       convention_of(program)),
                            left)
        o.command = compiled.command
        if o.status == "timeout":  # in the case's terms, not the rest the device got
            o.message = (f"the build and launch did not end within the case's {timeout:g} s "
                         "(the worker was killed)")
        o.message = f"{o.message}\n{compiled.message}".strip()
        return o

    def close(self) -> None:
        """End the worker processes now (they also end with the tool)."""
        self.runner.close()


class OpenCLC(_Foreign):
    """opencl-c:COMMAND: the compiler writes OpenCL C."""

    kind, what, suffix = "opencl-c", "OpenCL C", ".cl"

    def _code(self, data: bytes):
        return data.decode("utf-8", errors="replace")


class SPIRV(_Foreign):
    """spirv:COMMAND: the compiler writes a SPIR-V module, which the device builds from IL.
    A device that takes no SPIR-V is refused when the implementation is made."""

    kind, what, suffix = "spirv", "SPIR-V", ".spv"

    def __init__(self, command: str, options: ImplOptions):
        super().__init__(command, options)
        try:
            info = self.runner.device_info()
        except TLError as e:
            self.close()
            raise SpecError(f"spirv: {e.format()}") from None
        if not info.il_versions:
            self.close()
            raise SpecError(f"spirv: '{info.name}' takes no SPIR-V (it reports no "
                            "CL_DEVICE_IL_VERSION; pocl, Oclgrind and NVIDIA build only "
                            "OpenCL C): use --device intel, or opencl-c: with a compiler to "
                            "OpenCL C")


def opencl_c_factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """an external compiler to OpenCL C: 'opencl-c:COMMAND {tl} [{out}]', run on --device"""
    if not arg:
        raise SpecError("expected opencl-c:COMMAND with {tl} (and {out}, else stdout)")
    return OpenCLC(arg, options)


def spirv_factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """an external compiler to SPIR-V: 'spirv:COMMAND {tl} [{out}]', run on --device"""
    if not arg:
        raise SpecError("expected spirv:COMMAND with {tl} (and {out}, else stdout)")
    return SPIRV(arg, options)
