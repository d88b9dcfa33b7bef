"""Program-level lowering: pick each kernel's work-group size, lower every function, and
assemble one OpenCL C source with the helper functions and a line table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from tlgpu.lowering import prelude
from tlgpu.lowering.config import LoweringConfig
from tlgpu.lowering.function import FunctionLowerer, Geometry, kernel_name
from tlgpu.lowering.v04.spmd import uses_spmd
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import BackendError, Diagnostic
from tlinterp.lang.effects import written_arguments
from tlinterp.lang.ir import Span
from tlinterp.lang.types import MemrefType


@dataclass
class Lowered:
    source: str
    kernels: dict[str, tuple[str, Geometry]]  # function name -> (kernel name, work-group size)
    line_spans: list[Optional[Span]]  # source line (0-based) -> tensor-language span
    # function name -> bytes of its `local ulong* tl_local` argument (local_slab_argument)
    local_args: dict[str, int] = field(default_factory=dict)


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


WARP = 32  # work-items of a warp_groups work-group (an NVIDIA warp)


def _output_shapes(fn: ir.Function) -> list[tuple]:
    """The shapes of the function's collective outputs (None for a dynamic mode)."""
    return [tuple(inst.memref_type(inst.output()).shape) for inst in ir.walk(fn.body)
            if isinstance(inst, ir.BLAS)]


def _largest_output(fn: ir.Function) -> float:
    """Most elements of one collective output (inf when one has a dynamic mode; 0: none)."""
    return max((math.inf if None in sh else math.prod(sh) for sh in _output_shapes(fn)),
               default=0)


def _output_dims(fn: ir.Function) -> tuple[int, int]:
    """Largest static row and column counts among the function's collective outputs."""
    rows, cols = 0, 0
    for sh in _output_shapes(fn):
        if sh and sh[0] is not None:
            rows = max(rows, sh[0])
        if len(sh) > 1 and sh[1] is not None:
            cols = max(cols, sh[1])
    return rows, cols


def choose_geometry(fn: ir.Function, config: LoweringConfig, filename: str = "<input>",
                    source: str = "") -> Geometry:
    """The function's attribute, else the config's override, else one chosen from its shapes."""
    if fn.work_group_size is not None:
        wg = fn.work_group_size
    elif fn.subgroup_size is not None and uses_spmd(fn):
        # the interpreter's default work-group, one sub-group (spmd_exec.work_group): SPMD
        # code sees its shape, so no tuning choice may change it
        wg = (fn.subgroup_size, 1)
    elif config.work_group_size is not None:
        wg = config.work_group_size
    elif config.warp_groups is not False and WARP <= config.max_work_group_size \
            and 0 < _largest_output(fn) <= WARP * config.max_tile:
        wg = (WARP, 1)
    else:
        cap = max(1, config.max_work_group_size)
        rows, cols = _output_dims(fn)
        # measured on an H200 (bench/gpu.py): 16 rows x 4..8 column groups of work-items
        # beat wider groups for batched small GEMMs (less idle work per batch element)
        wg0 = min(16, _pow2_at_least(rows)) if rows else 16
        wg0 = max(1, min(wg0, cap))
        wg1 = max(1, min(_pow2_at_least(cols) // 4 if cols else 1, 8, cap // wg0))
        wg = (wg0, wg1)
    if min(wg) < 1:
        raise BackendError([Diagnostic(f"work-group size {wg} must be positive", fn.span,
                                       filename)], source)
    sg = fn.subgroup_size
    if sg is not None and wg[0] % sg and fn.work_group_size is None \
            and config.work_group_size is None:  # a chosen size honours the attribute
        wg0 = -(-wg[0] // sg) * sg
        wg = (wg0, max(1, min(wg[1], config.max_work_group_size // wg0)))
    if sg is not None and wg[0] % sg != 0:
        raise BackendError([Diagnostic(
            f"work-group size {wg[0]}x{wg[1]}: the first mode must be a multiple of the "
            f"subgroup size {sg}", fn.span, filename)], source)
    return Geometry(int(wg[0]), int(wg[1]))


def read_only_arguments(fn: ir.Function) -> frozenset[str]:
    """The memref arguments no instruction of `fn` may write (declared `const restrict`)."""
    written = written_arguments(fn)
    return frozenset(a.value.name for a in fn.args
                     if isinstance(a.type, MemrefType) and a.value.name not in written)


# clang's default -fbracket-depth, which every OpenCL C compiler seen here (pocl, Intel's,
# NVIDIA's, Oclgrind) inherits and a build option cannot raise portably
C_BRACKET_DEPTH = 256


def bracket_depth(lines: list[str]) -> int:
    """The deepest nesting of (), [] and {} in generated C (no string literals in it)."""
    depth = best = 0
    for line in lines:
        code = line.split("//", 1)[0]
        for ch in code:
            if ch in "([{":
                depth += 1
                best = max(best, depth)
            elif ch in ")]}":
                depth -= 1
    return best


def _check_bracket_depth(lines: Optional[list[str]], fn: ir.Function,
                         program: ir.Program) -> None:
    """A kernel whose C nests brackets deeper than OpenCL C compilers accept is refused here,
    by name, instead of failing the device build with a message about a temporary file.
    `lines` None: before lowering, from the region nesting alone (each level is a block)."""
    from tlinterp.lang.deepstack import nesting

    levels = nesting(fn.body)
    depth = levels + 1 if lines is None else bracket_depth(lines)
    if depth > C_BRACKET_DEPTH - 2:  # the kernel's own braces and a margin
        deepest = _opening(fn.body, C_BRACKET_DEPTH - 3) if lines is None else None
        raise BackendError([Diagnostic(
            f"@{fn.name} nests regions {levels} levels deep; its OpenCL C would nest "
            f"brackets {depth}{'+' if lines is None else ''} deep and OpenCL C compilers "
            f"accept at most {C_BRACKET_DEPTH}: nest fewer regions (the interpreter runs it)",
            deepest.span if deepest is not None else fn.span, program.filename)],
            program.source)


def _opening(body: ir.Region, level: int):
    """The first instruction whose region is nested `level` levels deep (the body is level
    1): where a nest becomes too deep for the C compilers; without recursion."""
    stack = [(body, 1)]
    while stack:
        region, d = stack.pop()
        for inst in region.instructions:
            inner = ir.regions_of(inst)
            if inner and d + 1 >= level:
                return inst
            stack.extend((r, d + 1) for r in inner)
    return None


def lower_program(program: ir.Program, func: Optional[str] = None,
                  config: Optional[LoweringConfig] = None) -> Lowered:
    """OpenCL C for `func` (every function when None). The lowering walks regions
    recursively; programs nested deeper than a few dozen levels (the parser accepts
    parser.MAX_NESTING) are lowered on a deep stack, like the interpreter runs them."""
    from tlinterp.lang.deepstack import call_deep, nesting

    fns = program.functions if func is None else (program.function(func),)
    for fn in fns:  # before a lowering that takes long on very deep nests
        _check_bracket_depth(None, fn, program)
    depth = max((nesting(fn.body) for fn in fns), default=0)
    return call_deep(lambda: _lower(program, func, config), depth)


def _lower(program: ir.Program, func: Optional[str], config: Optional[LoweringConfig]
           ) -> Lowered:
    config = (config or LoweringConfig()).for_device(gpu=True)  # no-op for a device's config
    fns = program.functions if func is None else (program.function(func),)
    helpers: dict[str, str] = {}
    kernels: dict[str, tuple[str, Geometry]] = {}
    bodies = []
    local_args: dict[str, int] = {}
    for fn in fns:
        geo = choose_geometry(fn, config, program.filename, program.source)
        read_only = read_only_arguments(fn) if config.restrict_read_only else frozenset()
        lowerer = FunctionLowerer(program, fn, config, geo, helpers, read_only)
        body = lowerer.lower()
        _check_bracket_depth(body.lines, fn, program)
        missed = read_only & lowerer.written
        if missed:  # the walk and the lowering disagree: never hand out a written const pointer
            raise BackendError([Diagnostic(
                "internal: the lowering writes argument(s) "
                f"{', '.join('%' + n for n in sorted(missed))} that "
                "tlinterp.lang.effects.written_arguments found read-only (declared const restrict)",
                fn.span, program.filename)], program.source)
        bodies.append(body)
        kernels[fn.name] = (kernel_name(fn), geo)
        if lowerer.local_arg_bytes:
            local_args[fn.name] = lowerer.local_arg_bytes
    lines: list[str] = [f"/* generated by tlgpu from {program.filename} */"]
    lines += prelude.HEADER.splitlines()
    spans: list[Optional[Span]] = [None] * len(lines)
    # the v0.4 scalar helpers first: the kernels and the atomic helpers call them
    text = "\n".join([*helpers.values(), *(line for body in bodies for line in body.lines)])
    for code in [*prelude.called(text), *helpers.values()]:
        lines.append("")
        lines += code.rstrip("\n").splitlines()
    spans += [None] * (len(lines) - len(spans))
    for body in bodies:
        lines.append("")
        spans.append(None)
        lines += body.lines
        spans += body.spans
    return Lowered("\n".join(lines) + "\n", kernels, spans, local_args)
