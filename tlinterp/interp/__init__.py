"""The reference interpreter: what a tensor-language kernel computes, with undefined-behaviour
detection. `run` takes source text or a Program and the .npz-convention argument dict;
`run_bound` runs on already bound arguments (mutating their buffers)."""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from tlinterp.interp.execute import _BYTES_PER_LANE, Env, Executor
from tlinterp.interp.memory import ArgBuffer, GroupBuffer, View
from tlinterp.interp.ub import KINDS, UBReport
from tlinterp.interp.values import Lanes
from tlinterp.interp.views import GroupValue
from tlinterp.io.args import BoundArgs, GroupArg, MemrefArg, bind, grid_of, unbind
from tlinterp.io.memlimit import check_allocation
from tlinterp.lang import ir
from tlinterp.lang.deepstack import call_deep, nesting
from tlinterp.lang.diagnostics import ArgumentError, ExecutionError
from tlinterp.lang.effects import written_arguments
from tlinterp.lang.types import GroupType

__all__ = ["run", "run_bound", "grid_of", "select_function", "UBReport", "KINDS"]


def _program(program_or_text: Union[str, ir.Program]) -> ir.Program:
    from tlinterp.checker.v03 import check
    from tlinterp.front.pipeline import executable, read

    if isinstance(program_or_text, str):
        return executable(read(program_or_text))
    return executable(check(program_or_text))


def select_function(program: ir.Program, func: Optional[str]) -> ir.Function:
    """The function named `func` (the only one when None); `ArgumentError` naming the
    program's functions when there is no such function."""
    try:
        return program.function(func)
    except KeyError as e:
        names = ", ".join("@" + f.name for f in program.functions) or "none"
        raise ArgumentError(f"{e.args[0]} (functions in {program.filename}: {names})") from None


def run(program_or_text, args, func: Optional[str] = None,
        groups: Union[None, int, tuple[int, ...]] = None,
        check: bool = True, max_steps: Optional[int] = None) -> dict[str, np.ndarray]:
    """Run `func` of a program (IR or source text) on `args` (the .npz convention); returns
    every memref and group argument after the run in the same keys and layout."""
    program = _program(program_or_text)
    function = select_function(program, func)
    bound = bind(function, args)
    if isinstance(groups, (tuple, list)):
        grid = grid_of(groups)  # a grid: its product is the work-group count
        bound.num_groups(grid[0] * grid[1] * grid[2])
    else:
        grid = bound.num_groups(groups)
    run_bound(program, function, bound, grid, check=check,
              max_steps=max_steps)
    return unbind(bound)


def _arg_value(name: str, t, v):
    if isinstance(v, MemrefArg):
        buf = ArgBuffer(v.buffer, "%" + name, v.offset, v.shape, v.strides)
        return View(buf, t.element, v.offset, tuple(v.shape), tuple(v.strides),
                    (v.offset, tuple(v.shape), tuple(v.strides)), True, "%" + name)
    if isinstance(v, GroupArg):
        assert isinstance(t, GroupType)
        order, ms = t.memref.order, v.members
        offsets = np.array([m.offset for m in ms], np.int64).reshape(-1)

        def per_member(field: str, k: int, static) -> np.ndarray:
            if static is not None:  # the type fixes it: no per-member loop
                return np.full(len(ms), static, np.int64)
            return np.fromiter((getattr(m, field)[k] for m in ms), np.int64, len(ms))

        shapes = np.stack([per_member("shape", k, t.memref.shape[k]) for k in range(order)],
                          axis=1) if order else np.zeros((len(ms), 0), np.int64)
        strides = np.stack([per_member("strides", k, t.memref.stride[k]) for k in range(order)],
                           axis=1) if order else np.zeros((len(ms), 0), np.int64)
        data = ms[0].buffer if ms else np.zeros(1, t.memref.element.dtype)
        buf = GroupBuffer(data, "%" + name, offsets, shapes, strides)
        return GroupValue(buf, t, offsets, shapes, strides)
    return np.asarray(v)


def run_bound(program: ir.Program, function: ir.Function, bound: BoundArgs,
              groups: Union[int, tuple[int, ...]], check: bool = True,
              max_steps: Optional[int] = None) -> None:
    """Run `function` with `groups` work-groups (or a v0.4 grid (x, y, z), linearised x
    fastest) on bound arguments, writing their buffers."""
    grid = grid_of(groups)
    groups = grid[0] * grid[1] * grid[2]
    env = Env()
    written = written_arguments(function)
    for a in function.args:
        v = _arg_value(a.value.name, a.type, bound.values[a.value.name])
        if isinstance(v, (View, GroupValue)):
            v.buf.may_be_written = a.value.name in written
        env.set(a.value.name, v)
    if groups <= 0:
        return
    # before any per-group array: 10^9 groups ran out of memory outside every instruction
    check_allocation(groups * _BYTES_PER_LANE,
                     f"the group count {groups} ({_BYTES_PER_LANE} bytes of interpreter "
                     "state per work-group)",
                     ExecutionError)
    ex = Executor(program, groups, check, max_steps)
    ex.grid = grid
    ex.function = function  # its attributes (work-group and sub-group sizes) matter to v0.4
    lanes = Lanes(np.arange(groups, dtype=np.int64))
    # the walker recurses per nesting level: deep programs get a deep stack
    call_deep(lambda: ex.run_region(function.body, env, lanes), nesting(function.body))
