"""The OpenCL implementations, registered as `opencl` (the reference lowering) and
`opencl-c:COMMAND` (an external compiler that emits OpenCL C, built and launched here)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
from typing import Optional

from tlinterp.diagnostics import BackendError, TLError
from tlinterp.impl import Implementation, ImplOptions, Job, Outcome, SpecError, outcome_of_error
from tlinterp.impl.base import parse_work_group_size
from tlinterp.impl.command import check_template, describe_exit, expand_template, run_command
from tlinterp.impl.template import write_kernel

_LOCK = threading.Lock()  # one OpenCL queue at a time: the device parallelises itself


def _config(options: ImplOptions):
    from tlgpu.lowering.config import LoweringConfig

    try:
        return LoweringConfig.from_overrides(list(options.lowering))
    except BackendError as e:
        raise SpecError(e.format()) from None


def _program(job: Job):
    if job.program is not None:
        return job.program
    import tlinterp

    return tlinterp.check(tlinterp.parse(job.source, filename=job.filename))


class OpenCL(Implementation):
    parallel = False
    front_end = True

    def __init__(self, spec: str, options: ImplOptions):
        self.spec, self.options = spec, options
        self.config = _config(options)

    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        from tlgpu import run

        try:
            program = _program(job)
            with _LOCK:
                config = self._tuned(program, job.args, job.func, job.groups)
                out = run(program, job.args, func=job.func, groups=job.groups,
                          device=self.options.device, config=config)
        except TLError as e:
            return outcome_of_error(e)
        except Exception as e:  # noqa: BLE001 - a bug of the backend is that case's result
            return Outcome("crashed", message=f"raised {type(e).__name__}: {e}")
        return Outcome("ok", outputs=out)

    def run_isolated(self, program, args, func: Optional[str], groups: Optional[int],
                     repeat: int = 1):
        """Build and launch (`repeat` times) in a child process (tlgpu.runtime.isolated): what tlrun
        uses, so that a crash on the device is a result and never takes the tool down. (With
        `tune`, the search runs here first: it times configs the fuzzer checks.)"""
        from tlgpu.runtime.isolated import run_isolated

        config = self._tuned(program, args, func, groups)
        return run_isolated(program, args, func=func, groups=groups, device=self.options.device,
                            config=config, repeat=repeat)

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
class OpenCLC(Implementation):
    """Runs COMMAND to turn the .tl file into OpenCL C ({out} or its stdout), then builds and
    launches the kernel the calling convention names."""

    def __init__(self, command: str, options: ImplOptions):
        check_template(command, FIELDS, ("tl",))
        self.command = command
        self.spec = f"opencl-c:{command}"
        self.options = options
        self.size = parse_work_group_size(options.work_group_size)

    def compile_source(self, job: Job, timeout: Optional[float]) -> tuple[Optional[str], Outcome]:
        """(OpenCL C, None) or (None, what went wrong) after running the compiler."""
        with tempfile.TemporaryDirectory(prefix="tl-opencl-c-") as tmp:
            tl = write_kernel(job, tmp)
            out = os.path.join(tmp, "out.cl")
            uses_out = "{out}" in self.command
            values = {"tl": tl, "out": out, "func": job.func}
            done = run_command(expand_template(self.command, values), timeout)
            command = " ".join(expand_template(
                self.command, {"tl": os.path.basename(tl), "out": "out.cl", "func": job.func}))
            if done.code is None:
                status = "timeout" if "no answer" in done.problem else "crashed"
                return None, Outcome(status, message=f"the compiler: {done.problem}\n"
                                     f"{done.stderr}".strip(), command=command)
            if done.code == 2:
                return None, Outcome("rejected", message=done.text, command=command)
            if done.code != 0:
                return None, Outcome("crashed", message=f"the compiler ended with "
                                     f"{describe_exit(done.code)}\n{done.text}".strip(),
                                     command=command)
            if uses_out:
                try:
                    with open(out, "rb") as f:
                        source = f.read().decode("utf-8", errors="replace")
                except OSError:
                    source = ""
            else:
                source = done.stdout
            if not source.strip():
                where = "{out}" if uses_out else "stdout"
                return None, Outcome("crashed", message=f"the compiler exited 0 but wrote no "
                                     f"OpenCL C to {where}\n{done.stderr}".strip(),
                                     command=command)
            return source, Outcome("ok", message=done.stderr, command=command)

    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        from tlgpu.lowering.function import kernel_name
        from tlgpu.runtime.kernel import ForeignCodeError, from_source

        source, compiled = self.compile_source(job, timeout)
        if source is None:
            return compiled
        try:
            program = _program(job)
            function = program.function(job.func) if job.func or len(program.functions) != 1 \
                else program.functions[0]
        except TLError:  # the reference rejects it: an accepted invalid program
            return Outcome("ok", outputs={}, message="the compiler accepted the program "
                           "(exit 0)", command=compiled.command)
        except KeyError as e:
            return Outcome("rejected", message=str(e.args[0]), command=compiled.command)
        try:
            with _LOCK:
                kernel = from_source(source, function, kernel_name(function),
                                     self.options.device, self.size)
                out = kernel.run(job.args, job.groups)
        except ForeignCodeError as e:
            return Outcome("crashed", message=f"{e.format()}\n{compiled.message}".strip(),
                           command=compiled.command)
        except TLError as e:
            o = outcome_of_error(e)
            o.command = compiled.command
            return o
        except Exception as e:  # noqa: BLE001 - e.g. a driver error pyopencl did not wrap
            return Outcome("crashed", message=f"raised {type(e).__name__}: {e}",
                           command=compiled.command)
        return Outcome("ok", outputs=out, message=compiled.message, command=compiled.command)


def opencl_c_factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """an external compiler to OpenCL C: opencl-c:'COMMAND {tl} [{out}]', run on --device"""
    if not arg:
        raise SpecError("expected opencl-c:COMMAND with {tl} (and {out}, else stdout)")
    return OpenCLC(arg, options)
