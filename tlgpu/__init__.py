"""OpenCL backend of the tensor language: lowering to OpenCL C and a pyopencl runtime.

    source = tlgpu.lower(program)                 # what `tlrun --emit opencl` prints

Every entry point takes a checked `ir.Program` or source text (parsed and checked here, so a
bad source is a `SourceError`); any other object, and a `func`, `device`, `config` or
`groups` of the wrong type, is a `TypeError` naming the call and the parameter.

    out = tlgpu.run(program, args, device="pocl") # the .npz convention, like tlinterp.run
    k = tlgpu.compile(program, "f", device="pocl")  # compile once, then bind and launch many
    b = k.bind(args); k.launch(b).seconds; out = b.read()
    best = tlgpu.tune(program, args, device="nvidia").best  # autotuned LoweringConfig

Modules: config (LoweringConfig), ctypes_map (types, exact literals), cwriter (C text + line
table), views (scalars/memrefs/groups as C expressions), lower_scalar, lower_function
(kernel signature per docs/semantics.md, views, control flow, alloca, barriers), lower_collectives
(BLAS instructions over the work-items), barriers (where a barrier is needed), memory
(alloca lifetimes -> local-memory offsets), prelude (atomic helpers), lowering (program,
work-group size choice), kernel (compile-once API, OpenCL C from other compilers),
implementations (`opencl` and `opencl-c:COMMAND`), devices (device strings, contexts),
runtime (build cache, marshalling, launch), buildlog (compiler log -> tensor-language spans),
oclgrind (Oclgrind's checks on; its reports as OclgrindReport errors), tiles (gemm tile
plans, 32-bit index safety), tuner (the autotuner, its on-disk cache).
"""

from __future__ import annotations

from numbers import Integral
from typing import Optional, Union

from tlgpu.lowering.config import LoweringConfig
from tlinterp.lang import ir


def _params(api: str, func=None, device=None, config=None, groups=None) -> None:
    """The parameters every entry point shares: a wrong type is a TypeError naming it."""
    from tlinterp.apitypes import expect

    expect(api, "func", func, str, "a function name (str)")
    expect(api, "device", device, str, "a device string such as 'pocl' (str)")
    expect(api, "config", config, LoweringConfig, "a tlgpu.LoweringConfig")
    expect(api, "groups", groups, (Integral, tuple),
           "a number of work-groups (int) or a grid (x, y, z)")


def _program(program: Union[ir.Program, str], api: str, **params) -> ir.Program:
    """Source text is parsed and checked (SourceError when it is bad); an `ir.Program` is taken
    as checked; anything else is a TypeError naming the call, as in tlinterp. `params`: the
    call's func/device/config/groups, checked first (_params)."""
    _params(api, **params)
    if isinstance(program, str):
        from tlgpu.runtime.launch import _as_program

        return _as_program(program)
    if not isinstance(program, ir.Program):
        raise TypeError(f"{api}(program): expected source text or an ir.Program, got "
                        f"{type(program).__name__}")
    from tlinterp.front.pipeline import lowerable

    return lowerable(program)  # a v0.4 program: its v0.3 form, or "not yet lowered"


def lower(program: Union[ir.Program, str], func: Optional[str] = None,
          config: Optional[LoweringConfig] = None) -> str:
    """OpenCL C source for `func` (all functions when None)."""
    from tlgpu.lowering.program import lower_program

    prog = _program(program, "lower", func=func, config=config)
    return lower_program(prog, func, config).source


def run(program: Union[ir.Program, str], args, func: Optional[str] = None,
        groups: Optional[Union[int, tuple[int, int, int]]] = None,
        device: Optional[str] = None, config: Optional[LoweringConfig] = None) -> dict:
    """Run `func` on an OpenCL device; arguments and results follow the .npz convention."""
    from tlgpu.runtime.launch import run as _run

    return _run(_program(program, "run", func=func, device=device, config=config,
                         groups=groups), args, func=func, groups=groups, device=device,
                config=config)


def compile(program: Union[ir.Program, str], func: Optional[str] = None,
            device: Optional[str] = None, config: Optional[LoweringConfig] = None):
    """A `tlgpu.runtime.kernel.Kernel` for `func`: built once, bound with `.bind(args)`,
    launched with `.launch(binding)` (its `.seconds` is the profiled device time), read with
    `binding.read()`."""
    from tlgpu.runtime.kernel import compile as _compile

    prog = _program(program, "compile", func=func, device=device, config=config)
    return _compile(prog, func, device=device, config=config)


def run_bound(program: ir.Program, function: ir.Function, bound, groups: int,
              device: Optional[str] = None, config: Optional[LoweringConfig] = None,
              repeat: int = 1) -> list[float]:
    """Run on already bound arguments, writing the results into their buffers; returns the
    kernel time in seconds of each of the `repeat` launches (all on the same inputs)."""
    from tlgpu.runtime.launch import run_bound as _run_bound
    from tlinterp.apitypes import expect

    expect("run_bound", "repeat", repeat, Integral, "a number of launches (int)", optional=False)
    if repeat < 1:
        raise ValueError(f"run_bound(repeat=...): must be >= 1, got {repeat}")
    return _run_bound(_program(program, "run_bound", device=device, config=config,
                               groups=groups), function, bound, groups, device=device,
                      config=config, repeat=repeat)


def tune(program: Union[ir.Program, str], args, func: Optional[str] = None,
         groups: Optional[int] = None, device: Optional[str] = None, reps: int = 5,
         use_cache: bool = True):
    """Time candidate lowering configs on `device`; the fastest is `.best` (cached on disk
    per kernel and device; `.trials` is the search, empty on a cache hit)."""
    from tlgpu.tuning.tuner import tune as _tune
    from tlinterp.apitypes import expect

    expect("tune", "reps", reps, Integral, "a number of repetitions (int)", optional=False)
    expect("tune", "use_cache", use_cache, bool, "True or False", optional=False)
    if isinstance(groups, tuple):
        raise TypeError("tune(groups=...): expected a number of work-groups (int): tuning "
                        "times one-dimensional launches")
    prog = _program(program, "tune", func=func, device=device, groups=groups)
    return _tune(prog, args, func=func, groups=groups, device=device, reps=reps,
                 use_cache=use_cache)


__all__ = ["LoweringConfig", "compile", "lower", "run", "run_bound", "tune"]
