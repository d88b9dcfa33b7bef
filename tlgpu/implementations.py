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
    OutputRefused,
    check_template,
    describe_exit,
    expand_template,
    rejection,
    run_command,
    written_output,
)
from tlinterp.impl.template import write_kernel
from tlinterp.io.args import Groups, grid_of
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


def _work_item_code(program) -> bool:
    """Whether the program has v0.4 SPMD regions (parallel, foreach_tile)."""
    from tlgpu.lowering.v04.spmd import uses_spmd

    return any(uses_spmd(f) for f in program.functions)


def _checked(job: Job):
    """The job's program checked in its own language (job.program, else the text checked),
    never lowered: what another compiler compiled (its signature and attributes decide the
    calling convention, the parameters and the launch)."""
    if job.program is not None:
        return job.program
    import tlinterp

    return tlinterp.check(tlinterp.parse(job.source, filename=job.filename, lang=job.lang))


def _launched(config, groups: Optional[Groups]):
    """The config for a launch of `groups`: our kernels take the v0.3 calling convention and
    its one-dimensional launch (work-groups along axis 2), except on a grid with Y or Z > 1,
    which they take in the v0.4 convention, launched as the grid itself (callconv.py; the
    parameters are ours on both sides, so only the launch matters)."""
    if isinstance(groups, (tuple, list)) and tuple(grid_of(groups)[1:]) != (1, 1):
        return dataclasses.replace(config, convention="v0.4")
    return config


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
    # False: SPMD programs run in this process too, saving a Python start per program, for a
    # caller whose programs are all valid (the CI run of the valid v0.4 corpus)
    isolate_spmd = True

    def __init__(self, spec: str, options: ImplOptions):
        self.spec, self.options = spec, options
        self.config = _config(options)

    def run(self, job: Job, timeout: Optional[float] = None) -> Outcome:
        from tlgpu import run
        from tlgpu.runtime.isolated import RunTimeout

        try:
            program = _program(job)
            groups = job.groups
            with _LOCK:
                config = _launched(self._tuned(program, job.args, job.func, groups), groups)
                if self.isolate_spmd and _work_item_code(program):
                    # one work-item per lane: a kernel with undefined behaviour there (a
                    # barrier not every work-item reaches) can crash the driver (pocl 3.0
                    # segfaults), so it runs in a child process
                    out = self.run_isolated(program, job.args, job.func, groups,
                                            timeout=timeout).outputs
                else:
                    out = run(program, job.args, func=job.func, groups=groups,
                              device=self.options.device, config=config)
        except RunTimeout as e:  # its time bound (the case's, or the campaign's end) ran out
            return Outcome("timeout", message=e.format())
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

        config = _launched(self._tuned(program, args, func, groups), groups)
        return run_isolated(program, args, func=func, groups=groups, device=self.options.device,
                            config=config, repeat=repeat, timeout=timeout)

    def _tuned(self, program, args, func: Optional[str], groups: Optional[Groups]):
        """With `tune`: the fastest config for these arguments (tlgpu.tune), --lowering
        applied on top; else the configured one."""
        if not self.options.tune:
            return self.config
        if isinstance(groups, (tuple, list)) and tuple(grid_of(groups)[1:]) != (1, 1):
            raise ArgumentError(f"--tune times one-dimensional launches; --groups "
                                f"{','.join(map(str, grid_of(groups)))} is a grid")
        from tlgpu.lowering.config import LoweringConfig
        from tlgpu.tuning.tuner import print_table, tune

        result = tune(program, args, func=func, groups=groups, device=self.options.device)
        print_table(result)
        return LoweringConfig.from_overrides(list(self.options.lowering), result.best)

    def emit(self, program, func: Optional[str], lang: Optional[str] = None) -> str:
        """The OpenCL C of `program` (its v0.3 form) in the calling convention of `lang`,
        the language it was written in, as other compilers of that language emit it."""
        from tlgpu import lower

        config = dataclasses.replace(self.config, convention="v0.4") if lang == "v0.4" \
            else self.config
        return lower(program, func, config)


def opencl_factory(arg: Optional[str], options: ImplOptions) -> Implementation:
    """the OpenCL lowering of this package, on --device (pocl, nvidia, oclgrind, ...)"""
    if arg:  # opencl:DEVICE, the short form of --device
        options = dataclasses.replace(options, device=arg)
    return OpenCL("opencl", options)


FIELDS = ("tl", "out", "func")
# a bound for the device side of a job whose caller gives none (tlrun has no --timeout): a
# spinning kernel must not hang the tool
DEFAULT_TIMEOUT = 600.0


# the kernel of _Foreign.self_test: one line every OpenCL device runs
KNOWN_GOOD = """func @tl_known_good(%x: memref<f32x4>, %y: memref<f32x4>) {
  axpby.n 2.0, %x, 0.0, %y : f32, memref<f32x4>, f32, memref<f32x4>
}
"""


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

    def command_line(self, job: Job) -> str:
        """The compiler's command for the job, as its outcome names it (file names relative)."""
        tl = os.path.basename(job.filename) or "kernel.tl"
        return " ".join(expand_template(
            self.command, {"tl": tl if tl.endswith(".tl") else tl + ".tl",
                           "out": "out" + self.suffix, "func": job.func}))

    def compile_code(self, job: Job, timeout: Optional[float]
                     ) -> tuple[Optional[bytes], Outcome]:
        """(the code, ok) or (None, what went wrong) after running the compiler."""
        with tempfile.TemporaryDirectory(prefix=f"tl-{self.kind}-") as tmp:
            tl = write_kernel(job, tmp)
            out = os.path.join(tmp, "out" + self.suffix)
            uses_out = "{out}" in self.command
            values = {"tl": tl, "out": out, "func": job.func}
            done = run_command(expand_template(self.command, values), timeout)
            command = self.command_line(job)
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
            try:
                code = written_output(done, out if uses_out else None,
                                      f"the {self.kind}: compiler")
            except OutputRefused as e:
                return None, Outcome("crashed", message=f"{e}\n{done.stderr}".strip(),
                                     command=command)
            if not code.strip():
                where = "{out}" if uses_out else "stdout"
                return None, Outcome("crashed", message=f"the compiler exited 0 but wrote no "
                                     f"{self.what} to {where}\n{done.stderr}".strip(),
                                     command=command)
            return code, Outcome("ok", message=done.stderr, command=command)

    def _code(self, data: bytes):
        return data

    def batch_code(self, jobs: list[Job], timeout: float) -> Optional[bytes]:
        """The code of several jobs' kernels from ONE compiler run over their texts joined
        into one program, for `run(job, code=...)`: the device then builds that one module
        once (the worker keeps the build) instead of once per job, which is most of a case's
        time with SPIR-V. None when the jobs cannot share a program (one language, distinct
        function names, a command without {func}) or the compiler does not take it whole
        within `timeout` (a rejection of one kernel, a crash, a slow compilation): then each
        job compiles on its own, so its verdict is its own."""
        if len(jobs) < 2 or "{func}" in self.command:
            return None
        names = [j.func for j in jobs]
        if None in names or len(set(names)) != len(names) or len({j.lang for j in jobs}) != 1:
            return None
        joined = Job("\n".join(j.source for j in jobs), {}, filename="batch.tl",
                     lang=jobs[0].lang)
        code, _ = self.compile_code(joined, timeout)
        return code

    def run(self, job: Job, timeout: Optional[float] = None,
            code: Optional[bytes] = None) -> Outcome:
        """`code`: the job's kernel already compiled, in a module of `batch_code` (the
        command that compiles the job alone is still the one its outcome names)."""
        from tlgpu.lowering.callconv import convention_of
        from tlgpu.lowering.function import kernel_name
        from tlgpu.runtime.foreign import ForeignJob

        if timeout is None:
            timeout = DEFAULT_TIMEOUT
        deadline = time.monotonic() + timeout
        if code is not None:
            compiled = Outcome("ok", command=self.command_line(job))
        else:
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

    def self_test(self) -> Optional[str]:
        """Why a known-good kernel does not build and run on the device through this
        implementation's workers, or None. The tools ask before their first case, so that a
        device or runtime that cannot run anything is never read as the compiler's fault.
        The kernel is our lowering's OpenCL C of KNOWN_GOOD (for spirv: too, which needs no
        SPIR-V compiler here: it checks the device and the workers, not the IL path)."""
        import numpy as np

        import tlinterp
        from tlgpu import lower
        from tlgpu.lowering.function import kernel_name
        from tlgpu.runtime.foreign import START_TIMEOUT, ForeignJob

        program = tlinterp.check(tlinterp.parse(KNOWN_GOOD))
        function = program.functions[0]
        x = np.arange(1, 5, dtype=np.float32)
        o = self.runner.run(ForeignJob("opencl-c", lower(program), function,
                                       kernel_name(function),
                                       args={"x": x, "y": np.zeros(4, np.float32)}, groups=1),
                            START_TIMEOUT)
        if o.status == "ok" and np.array_equal((o.outputs or {}).get("y"), 2 * x):
            return None
        got = o.message.strip() or f"y = {(o.outputs or {}).get('y')}, not {2 * x}"
        return (f"the device cannot build and run a known-good kernel (y := 2x, our "
                f"lowering's OpenCL C) in the {self.kind}: workers ({o.status}): {got}")


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
