"""Lowering of one function to an OpenCL C kernel: arguments (docs/semantics.md "OpenCL
calling convention"), views, scalar code, control flow, alloca and barrier placement.
Collectives are delegated to lower_collectives."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, Union

from tlgpu.lowering import chains
from tlgpu.lowering import collectives as C
from tlgpu.lowering import scalar as S
from tlgpu.lowering.barriers import ALLOCA, LOCAL_ROOTS, Pending
from tlgpu.lowering.callconv import Param, argument_params
from tlgpu.lowering.config import LoweringConfig
from tlgpu.lowering.ctypes_map import ctype, literal
from tlgpu.lowering.cwriter import CWriter
from tlgpu.lowering.memory import SLAB_ALIGN, plan_allocas
from tlgpu.lowering.v04 import atomics as A
from tlgpu.lowering.v04 import controlflow as CF
from tlgpu.lowering.v04 import coopmatrix, spmd, subgroups
from tlgpu.lowering.v04.cumsum import lower_cumsum
from tlgpu.lowering.views import Group, Scalar, View, mul, offset_align, var
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import BackendError, Diagnostic, not_yet
from tlinterp.lang.typerules import result_types
from tlinterp.lang.types import GroupType, MemrefType, ScalarType

Val = Union[Scalar, View, Group]
# a memref argument's first element: OpenCL aligns buffers and sub-buffer origins to
# CL_DEVICE_MEM_BASE_ADDR_ALIGN, at least 128 bytes, and the runtime passes either (16 is all
# that a 16-byte vector load needs; docs/semantics.md, "OpenCL calling convention")
ARGUMENT_ALIGN = 16

RESERVED = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "kernel", "__kernel", "global", "local",
    "constant", "private", "bool", "uchar", "ushort", "uint", "ulong", "half", "main",
}


def kernel_name(fn: ir.Function) -> str:
    """The kernel's name: the function's, unless that is no valid OpenCL C identifier."""
    name = fn.name
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name not in RESERVED \
            and not name.startswith("tl_"):
        return name
    return f"tl_fn_{name}"


@dataclass(frozen=True)
class Geometry:
    wg0: int
    wg1: int

    @property
    def size(self) -> int:
        return self.wg0 * self.wg1


class FunctionLowerer:
    def __init__(self, program: ir.Program, fn: ir.Function, config: LoweringConfig,
                 geometry: Geometry, helpers: dict[str, str],
                 read_only: frozenset[str] = frozenset()):
        self.program = program
        # memref arguments declared `const restrict`: never written (tlinterp.lang.effects, see
        # `lower_program`); writing through one would not build
        self.read_only = read_only
        # roots some step writes (filled while lowering; `lower_program` checks it against
        # `read_only`)
        self.written: set[str] = set()
        self.fn = fn
        self.config = config
        self.geo = geometry
        self.helpers = helpers  # shared across the program's kernels: name -> C code
        self.env: dict[str, Val] = {}
        self.tmp = 0
        self.local_arg_bytes = 0  # bytes of the slab argument, set by lower()
        self.alloca_offsets, self.alloca_bytes = plan_allocas(
            fn.body, config.reuse_local_memory,
            config.reuse_local_memory and config.infer_lifetimes)
        self.stage_bytes = 0  # local memory the collectives stage A/B in (set while lowering)
        self.pending = Pending()
        self.bases = chains.bases(fn)  # view -> the allocas/arguments it views
        self.spmd = False  # inside a foreach: one work-item per iteration, no barriers
        # kernel-scope lines and kernel attributes the v0.4 lowering asks for (subgroups.py)
        self.prologue: list[str] = []
        # cooperative_matrix_load results -> the instruction as lowered (coopmatrix.py: a
        # mul_add that reads B from memory reads it as its load did)
        self.coop_loaded: dict[str, ir.CoopLoad] = {}
        self.kernel_attributes: list[str] = []

    # --- helpers ------------------------------------------------------------------------
    def fresh(self, stem: str) -> str:
        self.tmp += 1
        return f"tl_{stem}{self.tmp}"

    def error(self, message: str, span) -> BackendError:
        return BackendError([Diagnostic(message, span, self.program.filename)],
                            self.program.source)

    def operand(self, op: ir.Operand, t: ScalarType) -> str:
        if isinstance(op, ir.Const):
            return literal(op.value, op.is_float, t)
        v = self.env[op.name]
        assert isinstance(v, Scalar)
        return v.expr

    def index(self, op: ir.Operand) -> str:
        return self.operand(op, ScalarType.index)

    def view(self, v: ir.Value) -> View:
        val = self.env[v.name]
        assert isinstance(val, View)
        return val

    def barrier(self, w: CWriter, roots: Optional[set[str]] = None) -> None:
        """A barrier; `roots` (the memory it must order) all local: a local fence only."""
        if roots is not None and roots <= LOCAL_ROOTS and self.config.local_fences:
            w.line("barrier(CLK_LOCAL_MEM_FENCE);")
            self.pending.drop(LOCAL_ROOTS)
            return
        w.line("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);")
        self.pending.clear()

    def access(self, w: CWriter, reads: set[str], writes: set[str]) -> None:
        """Record a work-group step's memory accesses, with a barrier first when needed."""
        self.written |= writes
        if self.spmd:
            self.pending.add(reads, writes)
            return
        if self.pending.conflicts(reads, writes, self.config.minimise_barriers):
            self.barrier(w, self.pending.conflicting(reads, writes)
                         if self.config.minimise_barriers else None)
        self.pending.add(reads, writes)

    # --- kernel -------------------------------------------------------------------------
    def signature(self) -> list[str]:
        """The kernel's parameter declarations, in the order `callconv.argument_params`
        gives (the runtime passes the values in that same order)."""
        params: list[str] = []
        for a in self.fn.args:
            n, t = var(a.value.name), a.type
            if isinstance(t, ScalarType) and t.is_bool:
                raise self.error(f"argument %{a.value.name}: i1 arguments cannot be passed "
                                 "to OpenCL kernels", a.span)
            if not isinstance(t, (ScalarType, MemrefType, GroupType)):
                raise self.error(f"argument %{a.value.name} of type {t} cannot be passed",
                                 a.span)
            dynamic = {}  # (role, mode) -> the C parameter holding that `?`
            for p in argument_params(a.value.name, t, self.config.convention):
                name = n + p.suffix
                dynamic[(p.role, p.mode)] = name
                params.append(self.declaration(a.value.name, t, p, name))
            if isinstance(t, ScalarType):
                self.env[a.value.name] = Scalar(n, t)
            elif isinstance(t, MemrefType):
                shape = tuple(dynamic.get(("shape", k), str(s)) for k, s in enumerate(t.shape))
                stride = tuple(dynamic.get(("stride", k), str(s))
                               for k, s in enumerate(t.stride))
                self.env[a.value.name] = View(n, "global", t.element, shape, stride,
                                              a.value.name, ARGUMENT_ALIGN)
            else:
                m = t.memref
                sh = tuple(dynamic.get(("shape", k)) for k in range(m.order))
                st = tuple(dynamic.get(("stride", k)) for k in range(m.order))
                off = dynamic.get(("offset", None), str(t.offset))
                self.env[a.value.name] = Group(n, m, sh, st, off, a.value.name)
        return params

    def declaration(self, arg: str, t: Union[ScalarType, MemrefType, GroupType], p: Param,
                    name: str) -> str:
        """The C declaration of parameter `p` of argument `arg` (of type `t`)."""
        if p.role == "value":
            assert isinstance(t, ScalarType)
            return f"{ctype(t)} {name}"
        if isinstance(t, MemrefType):
            if p.role != "data":
                return f"long {name}"
            if arg in self.read_only:
                return f"global const {ctype(t.element)}* restrict {name}"
            return f"global {ctype(t.element)}* {name}"
        assert isinstance(t, GroupType)
        if p.role in ("offset", "size"):
            return f"long {name}"
        if p.role != "data":
            return f"global long* {name}"
        if self.config.group_pointers_as_ulong:
            return f"global ulong* {name}"
        return f"global {ctype(t.memref.element)}*global* {name}"

    def lower(self) -> CWriter:
        w = CWriter()
        w.span = self.fn.span
        params = self.signature()
        body = CWriter()
        body.depth = 1
        self.region(body, self.fn.body)
        local_bytes = self.alloca_bytes + self.stage_bytes
        if local_bytes > self.config.local_memory_bytes:
            raise self.error(f"@{self.fn.name} needs {local_bytes} bytes of local memory, more "
                             f"than the {self.config.local_memory_bytes} allowed "
                             "(lowering option local_memory_bytes)", self.fn.span)
        slab = (local_bytes + 7) // 8
        self.local_arg_bytes = slab * 8 if local_bytes and self.config.local_slab_argument else 0
        if self.local_arg_bytes:
            params = params + ["local ulong* tl_local"]
        g = self.geo
        w.line(f"kernel __attribute__((reqd_work_group_size({g.wg0}, {g.wg1}, 1)))"
               + "".join(" " + a for a in self.kernel_attributes))
        w.line(f"void {kernel_name(self.fn)}(")
        for k, p in enumerate(params):
            w.line(f"        {p}" + ("," if k + 1 < len(params) else ")"))
        if not params:
            w.line("        void)")
        w.line("{")
        w.depth += 1
        w.line(f"const long tl_lid = (long)get_local_id(0) + (long)get_local_id(1) * {g.wg0};")
        w.line(f"const long tl_nwi = {g.size};")
        for line in self.prologue:
            w.line(line)
        if local_bytes and not self.local_arg_bytes:
            w.line(f"local ulong tl_local[{slab}] {SLAB_ALIGN};")
        w.extend(body)
        w.close()
        return w

    # --- regions ------------------------------------------------------------------------
    def region(self, w: CWriter, region: ir.Region) -> None:
        insts, k = region.instructions, 0
        while k < len(insts):
            inst = insts[k]
            pair = chains.gemm_pair(insts, k, self.bases) \
                if self.config.gemm_pairs and not self.spmd else None
            # the instructions between a pair's gemms read and write no memory: they go
            # first, so the pair's operands are defined (and whether it fuses depends on them)
            for between in pair.between if pair is not None else ():
                self.mark(w, between)
                self.instruction(w, between)
            self.mark(w, inst)
            if pair is not None and C.lower_gemm_pair(self, w, pair.first, pair.second,
                                                      pair.keep):
                k += pair.length
                continue
            self.instruction(w, inst)  # a pair that does not fuse: its second in its turn
            k += 1 if pair is None else pair.length - 1

    def mark(self, w: CWriter, inst: ir.Instruction) -> None:
        """The C lines that follow come from `inst`: a `// tl:` line and the span that build
        errors are reported at."""
        w.span = inst.span
        if inst.span is not None:
            w.line(f"// tl:{inst.span.line}.{inst.span.col}")

    def instruction(self, w: CWriter, inst: ir.Instruction) -> None:
        LOWER[type(inst)](self, w, inst)

    def lower_blas(self, w, inst: ir.Blas):
        C.lower_blas(self, w, inst)

    def define(self, w: CWriter, result: ir.Value, t: ScalarType, expr: str) -> None:
        n = var(result.name)
        w.line(f"const {ctype(t)} {n} = {expr};")
        self.env[result.name] = Scalar(n, t)

    # --- scalar instructions ----------------------------------------------------------------
    def lower_arith(self, w, inst: ir.Arith):
        a, b = self.operand(inst.lhs, inst.type), self.operand(inst.rhs, inst.type)
        self.define(w, inst.result, inst.type, S.binary(inst.op, a, b, inst.type))

    def lower_arithunary(self, w, inst: ir.ArithUnary):
        a = self.operand(inst.operand, inst.type)
        self.define(w, inst.result, S.unary_result(inst.op, inst.type),
                    S.unary(inst.op, a, inst.type))

    def lower_cast(self, w, inst: ir.Cast):
        a = self.operand(inst.operand, inst.from_type)
        self.define(w, inst.result, inst.to_type, S.cast(a, inst.from_type, inst.to_type))

    def lower_compare(self, w, inst: ir.Compare):
        a, b = self.operand(inst.lhs, inst.type), self.operand(inst.rhs, inst.type)
        self.define(w, inst.result, ScalarType.i1, S.compare(inst.cond, a, b, inst.type))

    def lower_groupid(self, w, inst):
        self.define(w, inst.result, ScalarType.index, f"(long){self.grid('group_id', 'x')}")

    def lower_groupsize(self, w, inst):
        self.define(w, inst.result, ScalarType.index, f"(long){self.grid('num_groups', 'x')}")

    def lower_builtin(self, w, inst: ir.Builtin):
        """The grid builtins (the sub-group ones: spmd.lower_builtin)."""
        self.define(w, inst.result, inst.type,
                    f"({ctype(inst.type)}){self.grid(inst.name, inst.comp or 'x')}")

    def grid(self, name: str, comp: str) -> str:
        """The C expression of a work-group's id or the grid's size along `comp`. The v0.3
        launch lays the work-groups out along axis 2 as a 1-D grid (y and z are 0 and 1); the
        v0.4 launch is the grid itself, one axis per component (callconv.py)."""
        axis = "xyz".index(comp)
        if self.config.convention == "v0.4":
            return f"get_group_id({axis})" if name == "group_id" else f"get_num_groups({axis})"
        if axis:
            return "0" if name == "group_id" else "1"
        return "get_global_id(2)" if name == "group_id" else "get_num_groups(2)"

    def lower_size(self, w, inst: ir.Size):
        self.define(w, inst.result, ScalarType.index, self.view(inst.operand).shape[inst.mode])

    # --- memory -------------------------------------------------------------------------
    def lower_load(self, w, inst: ir.Load):
        src = self.env[inst.operand.name]
        if isinstance(src, Group):
            self.load_group(w, inst, src)
            return
        assert isinstance(src, View)
        self.access(w, {src.root}, set())
        idx = [self.index(i) for i in inst.indices]
        self.define(w, inst.result, src.elem, src.at(idx))

    def load_group(self, w, inst: ir.Load, g: Group):
        i = self.index(inst.indices[0])
        n = var(inst.result.name)
        m = g.type
        T = ctype(m.element)
        ptr = f"((global {T}*){g.ptrs}[{i}])" if self.config.group_pointers_as_ulong \
            else f"{g.ptrs}[{i}]"
        w.line(f"global {T}* {n} = {ptr} + {g.offset};")
        shape, stride = [], []
        for k, s in enumerate(m.shape):
            if s is None:
                w.line(f"const long {n}_shape{k} = {g.shape_arrays[k]}[{i}];")
            shape.append(str(s) if s is not None else f"{n}_shape{k}")
        for k, s in enumerate(m.stride):
            if s is None:
                w.line(f"const long {n}_stride{k} = {g.stride_arrays[k]}[{i}];")
            stride.append(str(s) if s is not None else f"{n}_stride{k}")
        self.env[inst.result.name] = View(n, "global", m.element, tuple(shape), tuple(stride),
                                          g.root)

    def lower_store(self, w, inst: ir.Store):
        dst = self.view(inst.operand)
        value = self.operand(inst.value, dst.elem)
        idx = [self.index(i) for i in inst.indices]
        self.access(w, set(), {dst.root})
        if self.spmd:
            w.line(f"{dst.at(idx)} = {value};")
        else:  # a replicated store in a mixed region is one write
            w.line(f"if (tl_lid == 0) {dst.at(idx)} = {value};")

    def lower_alloca(self, w, inst: ir.Alloca):
        t = inst.type
        n = var(inst.result.name)
        off = self.alloca_offsets[id(inst)]
        w.line(f"local {ctype(t.element)}* {n} = (local {ctype(t.element)}*)"
               f"((local char*)tl_local + {off});")
        self.env[inst.result.name] = View(n, "local", t.element,
                                          tuple(str(s) for s in t.shape),
                                          tuple(str(s) for s in t.stride), ALLOCA)

    def lower_lifetimestop(self, w, inst):
        w.line(f"/* end of the lifetime of {var(inst.operand.name)} */")

    def lower_barrier(self, w, inst):
        self.barrier(w)

    # --- views --------------------------------------------------------------------------
    def new_view(self, w, result: ir.Value, base: View, ptr_expr: str, shape, stride,
                 align: Optional[int] = None) -> None:
        """A view named for `result`; `align`: its pointer's alignment (default: the base's,
        for views that start where their base does)."""
        n = var(result.name)
        const = "const " if base.root in self.read_only else ""
        w.line(f"{base.space} {const}{ctype(base.elem)}* {n} = {ptr_expr};")
        out_shape, out_stride = [], []
        for k, e in enumerate(shape):
            out_shape.append(self.bind_long(w, f"{n}_shape{k}", e))
        for k, e in enumerate(stride):
            out_stride.append(self.bind_long(w, f"{n}_stride{k}", e))
        self.env[result.name] = View(n, base.space, base.elem, tuple(out_shape),
                                     tuple(out_stride), base.root,
                                     base.align if align is None else align)

    def bind_long(self, w, name: str, expr: str) -> str:
        if expr.lstrip("-").isdigit() or expr.isidentifier():
            return expr
        w.line(f"const long {name} = {expr};")
        return name

    def lower_subview(self, w, inst: ir.Subview):
        src = self.view(inst.operand)
        (rt,) = result_types(inst)
        offs, shape, stride = [], [], []
        for k, sl in enumerate(inst.slices):
            off = self.index(sl.offset)
            offs.append(off)
            if not sl.is_range:
                continue
            static = rt.shape[len(shape)]
            if static is not None:
                size = str(static)
            elif sl.size is None:
                size = f"{src.shape[k]} - {off}"
            else:
                size = self.index(sl.size)
            shape.append(size)
            stride.append(src.stride[k])
        static = [str(sl.offset.value) if isinstance(sl.offset, ir.Const) else o
                  for sl, o in zip(inst.slices, offs)]
        moved = offset_align(list(zip(static, src.stride)), src.elem.dtype.itemsize)
        self.new_view(w, inst.result, src, src.addr(offs), shape, stride,
                      min(src.align, moved))

    def lower_expand(self, w, inst: ir.Expand):
        src = self.view(inst.operand)
        (rt,) = result_types(inst)
        m = inst.mode
        sizes: list[Optional[str]] = []
        for e, static in zip(inst.shape, rt.shape[m:m + len(inst.shape)]):
            if static is not None:
                sizes.append(str(static))
            elif isinstance(e, ir.Value):
                sizes.append(self.index(e))
            else:
                sizes.append(None)
        if None in sizes:
            known = [s for s in sizes if s is not None]
            prod = "1"
            for s in known:
                prod = mul(prod, s)
            sizes[sizes.index(None)] = f"{src.shape[m]} / {prod}" if prod != "1" \
                else src.shape[m]
        strides, s = [], src.stride[m]
        for size in sizes:
            strides.append(s)
            s = mul(s, size)
        shape = list(src.shape[:m]) + sizes + list(src.shape[m + 1:])
        stride = list(src.stride[:m]) + strides + list(src.stride[m + 1:])
        self.new_view(w, inst.result, src, src.ptr, shape, stride)

    def lower_fuse(self, w, inst: ir.Fuse):
        src = self.view(inst.operand)
        i, j = inst.first, inst.last
        size = "1"
        for s in src.shape[i:j + 1]:
            size = mul(size, s)
        shape = list(src.shape[:i]) + [size] + list(src.shape[j + 1:])
        stride = list(src.stride[:i + 1]) + list(src.stride[j + 1:])
        self.new_view(w, inst.result, src, src.ptr, shape, stride)

    # --- control flow -------------------------------------------------------------------
    def lower_if(self, w, inst: ir.If):
        for r, t in zip(inst.results, inst.result_types):
            w.line(f"{ctype(t)} {var(r.name)};")
        cond = self.operand(inst.cond, ScalarType.i1)
        before = self.pending.copy()
        w.open(f"if ({cond})")
        self.branch(w, inst.then, inst.results)
        after = self.pending
        if inst.otherwise is not None:
            self.pending = before.copy()
            w.close("} else {")
            w.depth += 1
            self.branch(w, inst.otherwise, inst.results)
            after = after.union(self.pending)
        else:
            after = after.union(before)
        w.close()
        self.pending = after
        for r, t in zip(inst.results, inst.result_types):
            self.env[r.name] = Scalar(var(r.name), t)

    def branch(self, w, region: ir.Region, results) -> None:
        saved = getattr(self, "yield_targets", ())
        self.yield_targets = results
        self.region(w, region)
        self.yield_targets = saved

    def lower_yield(self, w, inst: ir.Yield):
        targets = self.yield_targets
        vals = [self.operand(v, t) for v, t in zip(inst.values, inst.types)]
        for r, v in zip(targets, vals):  # a C variable's name, or a result Value
            w.line(f"{r if isinstance(r, str) else var(r.name)} = {v};")

    def lower_for(self, w, inst: ir.For):
        t = inst.type
        start = self.operand(inst.start, t)
        stop = self.operand(inst.stop, t)
        step = self.operand(inst.step, t) if inst.step is not None else "1"
        lo, hi, st = (self.fresh(x) for x in ("lo", "hi", "step"))
        trips, it = self.fresh("trips"), self.fresh("it")
        w.line(f"const long {lo} = (long){start}, {hi} = (long){stop}, {st} = (long){step};")
        # trip count first: stepping the induction variable itself could overflow its type
        w.line(f"const long {trips} = {st} > 0 ? ({lo} < {hi} ? ({hi} - {lo} + {st} - 1) / {st}"
               f" : 0) : ({st} < 0 && {lo} > {hi} ? ({lo} - {hi} - {st} - 1) / (-{st}) : 0);")
        carried = CF.carried_prologue(self, w, inst)  # v0.4 loop-carried values
        # the loop body sees its own pending accesses from the previous iteration
        entry = self.pending.copy()
        saved_tmp = self.tmp
        while True:
            self.pending = entry.copy()
            self.tmp = saved_tmp
            body = w.scratch()
            body.depth += 1
            self.loop_body(body, inst, t, lo, st, it, carried)
            if self.pending <= entry:
                break
            entry = entry.union(self.pending)
        w.open(f"for (long {it} = 0; {it} < {trips}; ++{it})")
        w.extend(body)
        w.close()
        self.pending = entry.union(self.pending)
        CF.carried_results(self, w, inst, carried)

    def loop_body(self, w, inst, t, lo, st, it, carried):
        w.line(f"const {ctype(t)} {var(inst.var.name)} = ({ctype(t)})({lo} + {it} * {st});")
        self.env[inst.var.name] = Scalar(var(inst.var.name), t)
        if carried:
            CF.carried_body(self, w, inst, carried)
        else:
            self.region(w, inst.body)

    def lower_foreach(self, w, inst: ir.Foreach):
        t = inst.type
        lo, n = self.fresh("lo"), self.fresh("n")
        prologue = [f"const long {lo} = (long){self.operand(inst.start, t)};",
                    f"const long {n} = (long){self.operand(inst.stop, t)} - {lo};"]

        def bind(body, it):
            body.line(f"const {ctype(t)} {var(inst.var.name)} = ({ctype(t)})({lo} + {it});")
            self.env[inst.var.name] = Scalar(var(inst.var.name), t)
        self.spmd_loop(w, prologue, n, bind, inst.body)

    def spmd_loop(self, w, prologue: list[str], count: str, bind, region: ir.Region) -> None:
        """An SPMD region run once per iteration 0 .. count - 1 (`prologue` defines what
        `count` names), the iterations dealt to the work-items in turn; `bind(body, it)`
        defines the loop variables of iteration `it`. One step for the barrier analysis."""
        it = self.fresh("it")
        outer = self.pending
        self.pending = Pending()
        self.spmd = True
        body = w.scratch()
        body.depth += 1
        bind(body, it)
        self.region(body, region)
        self.spmd = False
        inner, self.pending = self.pending, outer
        self.access(w, inner.reads, inner.writes)
        for line in prologue:
            w.line(line)
        w.open(f"for (long {it} = tl_lid; {it} < {count}; {it} += tl_nwi)")
        w.extend(body)
        w.close()


def _not_yet(lowerer, w, inst) -> None:
    raise not_yet(inst, "lowered")


# The one dispatch table of the lowering: every instruction class to its rule.
LOWER: dict[type, Callable[[FunctionLowerer, CWriter, ir.Instruction], None]] = {
    ir.Alloca: FunctionLowerer.lower_alloca,
    ir.Arith: coopmatrix.componentwise(FunctionLowerer.lower_arith),
    ir.ArithUnary: coopmatrix.componentwise(FunctionLowerer.lower_arithunary),
    ir.Cast: coopmatrix.componentwise(FunctionLowerer.lower_cast),
    ir.Compare: FunctionLowerer.lower_compare,
    ir.Expand: FunctionLowerer.lower_expand,
    ir.Fuse: FunctionLowerer.lower_fuse,
    ir.GroupId: FunctionLowerer.lower_groupid,
    ir.GroupSize: FunctionLowerer.lower_groupsize,
    ir.Load: FunctionLowerer.lower_load,
    ir.Size: FunctionLowerer.lower_size,
    ir.Subview: FunctionLowerer.lower_subview,
    ir.Store: FunctionLowerer.lower_store,
    ir.Barrier: FunctionLowerer.lower_barrier,
    ir.LifetimeStop: FunctionLowerer.lower_lifetimestop,
    ir.If: FunctionLowerer.lower_if,
    ir.Yield: FunctionLowerer.lower_yield,
    ir.For: FunctionLowerer.lower_for,
    ir.Foreach: FunctionLowerer.lower_foreach,
    **{cls: FunctionLowerer.lower_blas for cls in ir.BLAS},
    **{cls: _not_yet for cls in ir.V04_INSTRUCTIONS},
    ir.Associated: CF.lower_associated,
    ir.ForeachNd: CF.lower_foreach_nd,
    ir.Cumsum: lower_cumsum,
    ir.AtomicLoad: A.lower_atomic_load,
    ir.AtomicStore: A.lower_atomic_store,
    ir.AtomicUpdate: A.lower_atomic_update,
    ir.Builtin: spmd.lower_builtin,
    ir.Parallel: spmd.lower_parallel,
    ir.ForeachTile: spmd.lower_foreach_tile,
    ir.SubgroupBroadcast: subgroups.lower_broadcast,
    ir.SubgroupOp: subgroups.lower_subgroup_op,
    **coopmatrix.RULES,
}
