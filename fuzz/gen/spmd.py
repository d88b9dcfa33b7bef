"""Random SPMD kernels of tensor language v0.4: `spmd_cases(**knobs)`, a Hypothesis strategy of
(ir.Function, arguments, groups), the function built as v0.4 IR (it prints with
`tlinterp.printer_v04` and parses back to equal IR with lang="v0.4").

A kernel is a random composition, not a template: a function with `subgroup_size` and
`work_group_size` attributes, a `parallel` region whose statements are drawn one by one from
the families of `SpmdParams.weights`, then sometimes a `foreach_tile`:

- work-items load per-lane values from input memrefs (of any number type; canonical or
  strided layouts; per work-group slices or group arguments) indexed by their linear id, a
  rotation or reversal of it, their sub-group id or a constant, and combine them with random
  scalar operations, casts and `if`/`for` (with yielded and loop-carried values);
- sub-group operations: broadcast from a uniform lane, reduce/inclusive/exclusive scan with
  add/max/min, in any order and nesting;
- local memory: an alloca written by every work-item, a barrier, then read at another
  work-item's element; barriers with random fences;
- cooperative matrices: loads (uses a/b/acc, `.t`, checked flags at partly outside
  positions), construct, mul_add with mixed precision, scale, component-wise arithmetic,
  casts between types and uses, extract/insert, reduce (row/column), apply, stores;
- results go to distinct elements of output memrefs: (work-item, slot, work-group) for
  scalars, a block per (work-group, sub-group) for coopmatrices.

UB-free by construction (docs/semantics.md, "v0.4 execution model"): uniformity is tracked
per value (fuzz/gen/spmd_model.py) and sub-group operations, coopmatrix instructions and
barriers are only emitted where control flow and operands are uniform enough; a barrier
separates every reuse of local memory; every number is exact in its type (the model in
spmd_model.py), so results do not depend on the order of reductions and nothing overflows.

`sample_spmd(seed)` draws the same kernels with `random.Random` (fast, no shrinking) and
returns the statistics of what was generated.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from typing import Any, Optional, Union

import numpy as np
from hypothesis import strategies as st

from tlinterp import ir
from tlinterp.ir import Value
from tlinterp.types import INDEX, GroupType, MemrefType, ScalarType, canonical_strides

from .spmd_coop import coop_step, foreach_tile, observe_coop
from .spmd_model import (
    LANE,
    SG,
    WG,
    CVal,
    SpmdParams,
    Val,
    fits,
    int_max,
    literal,
    real_of,
    value_grain,
    value_mag,
)

I32 = ScalarType.i32
Groups = Union[int, tuple[int, ...]]

_INTS: dict[tuple[int, int], st.SearchStrategy] = {}
_SUBGROUP_KINDS = ("reduce", "inclusive_scan", "exclusive_scan")
_FENCES = ((), ("global",), ("local",), ("global", "local"))
# what is stored at the end of its region even when no statement stored it
_OBSERVED = {"subgroup", "broadcast", "exchange", "extract", "if", "for"}


class _Output:
    """A memref argument written by the kernel: its element, shape (patched at the end for
    the per-lane outputs, whose slot count grows) and the stores that name its type."""

    def __init__(self, name: str, elem: ScalarType):
        self.value = Value(name)
        self.elem = elem
        self.slots = 0
        self.stores: list[ir.Store] = []
        self.dynamic = False


class _Builder:
    def __init__(self, draw: Callable, p: SpmdParams, name: str):
        self.draw = draw
        self.p = p
        self.name = name
        self.n = 0
        self.stats: Counter = Counter()
        self.args: list[tuple[ir.Argument, Any]] = []  # (argument, data or _Output)
        self.prelude: list = []
        self.consts: dict[tuple, Val] = {}
        self.regions: list[list] = []
        self.scopes: list[list[Val]] = []
        self.cscopes: list[list[CVal]] = []
        self.inputs: list[tuple[Value, ScalarType, str, float, int]] = []
        self.outputs: dict[ScalarType, _Output] = {}
        self.allocas: dict[ScalarType, list] = {}  # elem -> [value, read since a barrier]
        self.loops = 0  # for loops around the statement being generated
        self.data_rng = np.random.default_rng(self.int(0, 2 ** 32 - 1))

    # --- drawing ---------------------------------------------------------------------------

    def int(self, lo: int, hi: int) -> int:
        if hi <= lo:
            return lo
        if isinstance(self.draw, random.Random):
            return self.draw.randint(lo, hi)
        s = _INTS.get((lo, hi))
        if s is None:
            s = _INTS[(lo, hi)] = st.integers(lo, hi)
        return self.draw(s)

    def pick(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def flip(self, percent: int) -> bool:
        return self.int(0, 99) < percent

    def weighted(self, weights: dict[str, int]) -> Optional[str]:
        items = [(k, w) for k, w in weights.items() if w > 0]
        if not items:
            return None
        r = self.int(0, sum(w for _, w in items) - 1)
        for k, w in items:
            if r < w:
                return k
            r -= w
        return items[-1][0]

    # --- names, emission, scopes -----------------------------------------------------------

    def fresh(self, prefix: str = "v") -> Value:
        self.n += 1
        return Value(f"{prefix}{self.n}")

    def emit(self, inst) -> None:
        self.regions[-1].append(inst)

    def visible(self) -> list[Val]:
        return [v for s in self.scopes for v in s]

    def cvisible(self) -> list[CVal]:
        return [v for s in self.cscopes for v in s]

    def add(self, v: Val) -> Val:
        self.scopes[-1].append(v)
        return v

    def open(self) -> list:
        self.regions.append([])
        self.scopes.append([])
        self.cscopes.append([])
        return self.regions[-1]

    def close(self, observe: bool = True) -> ir.Region:
        if observe:
            self.observe_region()
        self.scopes.pop()
        self.cscopes.pop()
        return ir.Region(self.regions.pop())

    def const(self, value, t: ScalarType, here: bool = False) -> Val:
        """A `constant` of type t: in the prelude (shared, cached) unless `here`."""
        key = (value, t)
        if not here and key in self.consts:
            return self.consts[key]
        v = self.fresh("c")
        inst = ir.Constant(v, literal(value, t), t)
        val = Val(v, t, value_mag(value), value_grain(value), WG, "const")
        if here:
            self.emit(inst)
            return self.add(val)
        self.prelude.append(inst)
        self.consts[key] = val
        return val

    def random_value(self, t: ScalarType, mag: Optional[int] = None):
        """A multiple of 2^-g (g drawn; 0 for integers) in [-mag, mag], complex: per part."""
        m = self.p.data_max if mag is None else mag
        g = 0 if t.is_int else self.int(0, self.p.max_data_grain)
        while g and not fits(t, m, g):
            g -= 1
        k = self.int(-m << g, m << g)
        value: Any = k / (1 << g) if g else k
        if t.is_complex:
            value = complex(value, self.int(-m << g, m << g) / (1 << g))
        return value

    def random_const(self, t: ScalarType, here: bool = False, mag: Optional[int] = None) -> Val:
        return self.const(self.random_value(t, mag), t, here)

    # --- arithmetic with the model ---------------------------------------------------------

    def arith(self, op: str, a: Val, b: Val, t: ScalarType, mag: float, grain: int,
              kind: str = "value") -> Val:
        r = self.fresh()
        self.emit(ir.Arith(r, op, a.op, b.op, t))
        self.stats["op." + op] += 1
        return self.add(Val(r, t, mag, grain, max(a.uni, b.uni), kind))

    def binary_model(self, op: str, a: Val, b: Val) -> Optional[tuple[float, int]]:
        """(mag, grain) of `a op b`, None when the op is not defined on the type or the
        result may be inexact or overflow."""
        t = a.type
        if op in ("min", "max"):
            if t.is_complex:
                return None
            return max(a.mag, b.mag), max(a.grain, b.grain)
        if op in ("and", "or", "xor"):
            if not t.is_int or not (math.isfinite(a.mag) and math.isfinite(b.mag)):
                return None
            m = 1 << int(max(a.mag, b.mag)).bit_length()
            return (m, 0) if fits(t, m, 0) else None
        if op in ("add", "sub"):
            m, g = a.mag + b.mag, max(a.grain, b.grain)
        elif op == "mul":
            m, g = a.mag * b.mag * (2 if t.is_complex else 1), a.grain + b.grain
        else:
            return None
        return (m, g) if fits(t, m, g) else None

    # --- lane ids and indices --------------------------------------------------------------

    def lane_ids(self) -> None:
        """The work-item's ids at the top of the parallel region, built from a random choice
        of builtins (all give the same numbers)."""
        S, nsg = self.S, self.nsg
        sl = self.fresh("sl")
        self.emit(ir.Builtin(sl, "subgroup_local_id", None, I32))
        if self.flip(50):
            sid = self.fresh("sid")
            self.emit(ir.Builtin(sid, "subgroup_linear_id", None, I32))
            self.stats["builtin.subgroup_linear_id"] += 1
        else:
            sx, sy, nx = self.fresh("sx"), self.fresh("sy"), self.fresh("nsx")
            self.emit(ir.Builtin(sx, "subgroup_id", "x", I32))
            self.emit(ir.Builtin(sy, "subgroup_id", "y", I32))
            self.emit(ir.Builtin(nx, "num_subgroups", "x", I32))
            t = self.fresh()
            self.emit(ir.Arith(t, "mul", sy, nx, I32))
            sid = self.fresh("sid")
            self.emit(ir.Arith(sid, "add", t, sx, I32))
            self.stats["builtin.subgroup_id"] += 1
        if self.flip(50):
            ss = self.fresh("ss")
            self.emit(ir.Builtin(ss, "subgroup_size", None, I32))
        else:
            ss = self.const(S, I32).op
        t = self.fresh()
        self.emit(ir.Arith(t, "mul", sid, ss, I32))
        lin = self.fresh("lin")
        self.emit(ir.Arith(lin, "add", t, sl, I32))
        self.sl = self.add(Val(sl, I32, S - 1, 0, LANE, "id"))
        self.sid = self.add(Val(sid, I32, nsg - 1, 0, SG, "id"))
        self.lin = self.add(Val(lin, I32, self.W - 1, 0, LANE, "id"))
        self.lini = self.cast_to(self.lin, INDEX)
        self.sidi = self.cast_to(self.sid, INDEX)

    def cast_to(self, v: Val, t: ScalarType, kind: Optional[str] = None) -> Val:
        r = self.fresh()
        self.emit(ir.Cast(r, v.op, v.type, t))
        mag, grain = (math.floor(v.mag), 0) if t.is_int and not v.type.is_int \
            else (v.mag, v.grain)
        return self.add(Val(r, t, mag, grain, v.uni, kind or v.kind))

    def lane_index(self) -> tuple[Val, str]:
        """An index in [0, W) of the current work-item: its own, another's, a sub-group's or
        a constant (the index form is the second result, for statistics)."""
        W = self.W
        form = self.pick(("lin", "lin", "rotate", "reverse", "subgroup", "const"))
        if form == "lin":
            return self.lini, form
        if form == "rotate":
            s = self.arith("add", self.lini, self.const(self.int(1, W - 1), INDEX), INDEX,
                           2 * W, 0, "id")
            return self.arith("rem", s, self.const(W, INDEX), INDEX, W - 1, 0, "id"), form
        if form == "reverse":
            return self.arith("sub", self.const(W - 1, INDEX), self.lini, INDEX, W - 1, 0,
                              "id"), form
        if form == "subgroup":
            return self.sidi, form
        return self.const(self.int(0, W - 1), INDEX), form

    # --- memory: inputs, outputs, local memory ---------------------------------------------

    def new_arg(self, prefix: str, t, data) -> Value:
        v = self.fresh(prefix)
        self.args.append((ir.Argument(v, t), data))
        return v

    def data(self, t: ScalarType, shape: tuple[int, ...], mag: float, grain: int) -> np.ndarray:
        rng = self.data_rng
        k = int(mag * (1 << grain))
        x = rng.integers(-k, k + 1, size=shape) / (1 << grain)
        if t.is_complex:
            x = x + 1j * (rng.integers(-k, k + 1, size=shape) / (1 << grain))
        if t.is_int:
            x = np.rint(x)
        return np.asarray(x).astype(t.dtype)

    def strided(self, elem: ScalarType, shape: tuple[int, ...]) -> MemrefType:
        """A memref type of `shape`: packed column-major, with a padded leading dimension,
        or with every other element skipped (strides must grow mode by mode:
        S_2 >= S_1 s_1)."""
        form = self.pick(("packed", "packed", "padded", "spaced")) if len(shape) == 2 \
            else "packed"
        if form == "padded":
            stride: tuple = (1, shape[0] + self.int(1, 3))
        elif form == "spaced":
            stride = (2, 2 * shape[0] + self.int(0, 3))
        else:
            stride = canonical_strides(shape)
        self.stats["layout." + form] += 1
        return MemrefType(elem, shape, stride)

    def data_model(self, t: ScalarType) -> tuple[int, int]:
        mag = self.int(1, self.p.data_max)
        if t.is_int:
            return min(mag, int_max(t)), 0
        g = self.int(0, self.p.max_data_grain)
        while g and not fits(t, mag, g):
            g -= 1
        return mag, g

    def lane_input(self, t: ScalarType) -> tuple[Value, str, float, int]:
        """An input holding one value per work-item (and work-group): an existing one of
        type t, or a new argument (a memref W x G, a memref W shared by the work-groups, or a
        group of G memrefs W)."""
        old = [i for i in self.inputs if i[1] is t]
        if old and self.flip(50):
            v, _, form, mag, grain = self.pick(old)
            return v, form, mag, grain
        mag, grain = self.data_model(t)
        W, G = self.W, self.G
        form = self.pick(("wg", "wg", "shared", "group"))
        if form == "wg":
            v = self.new_arg("A", self.strided(t, (W, G)), self.data(t, (W, G), mag, grain))
        elif form == "shared":
            v = self.new_arg("A", MemrefType(t, (W,), (1,)), self.data(t, (W,), mag, grain))
        else:
            gt = GroupType(MemrefType(t, (W,), (1,)), 0, G)
            g = self.new_arg("G", gt, self.data(t, (G, W), mag, grain))
            v = self.fresh("m")
            self.prelude.append(ir.Load(v, g, (self.glin.op,), gt))
        self.stats["input." + form] += 1
        self.inputs.append((v, t, form, mag, grain))
        return v, form, mag, grain

    def load(self, t: ScalarType) -> Val:
        v, form, mag, grain = self.lane_input(t)
        idx, iform = self.lane_index()
        mt = self.type_of_arg(v)
        indices = (idx.op, self.glin.op) if form == "wg" else (idx.op,)
        r = self.fresh()
        self.emit(ir.Load(r, v, indices, mt))
        self.stats["load." + iform] += 1
        return self.add(Val(r, t, mag, grain, idx.uni, "load"))

    def type_of_arg(self, v: Value) -> MemrefType:
        for a, _ in self.args:
            if a.value == v:
                return a.type
        for inst in self.prelude:  # a member of a group argument
            if isinstance(inst, ir.Load) and inst.result == v:
                return inst.type.memref
        raise KeyError(v.name)

    def store(self, v: Val) -> None:
        """v to a fresh slot of the per-lane output of its type: element (work-item, slot,
        work-group), written by nobody else."""
        out = self.outputs.get(v.type)
        if out is None:
            out = self.outputs[v.type] = _Output(self.fresh("O").name, v.type)
            out.dynamic = self.flip(30)
            self.args.append((ir.Argument(out.value, MemrefType(v.type, (), ())), out))
        slot = self.const(out.slots, INDEX)
        out.slots += 1
        inst = ir.Store(v.op, out.value, (self.lini.op, slot.op, self.glin.op),
                        MemrefType(v.type, (), ()))
        out.stores.append(inst)
        self.emit(inst)
        v.stored = True
        self.stats["store"] += 1

    def alloca(self, t: ScalarType) -> list:
        entry = self.allocas.get(t)
        if entry is None or self.flip(20):
            v = self.fresh("L")
            attrs = {"alignment": self.pick((16, 64))} if self.flip(30) else {}
            self.prelude.append(ir.Alloca(v, MemrefType(t, (self.W,), (1,), "local"),
                                          attributes=attrs))
            entry = self.allocas[t] = [v, False]
        return entry

    def barrier(self) -> None:
        self.emit(ir.Barrier(fences=self.pick(_FENCES)))
        for e in self.allocas.values():
            e[1] = False
        self.stats["barrier"] += 1

    # --- statements ------------------------------------------------------------------------

    def pick_val(self, pred: Callable[[Val], bool] = lambda v: True) -> Optional[Val]:
        vs = [v for v in self.visible() if pred(v)]
        return self.pick(vs) if vs else None

    def some_val(self, t: Optional[ScalarType] = None, finite: bool = True) -> Val:
        """A visible value (of type t), else a new load or constant."""
        v = self.pick_val(lambda v: (t is None or v.type is t) and
                          (not finite or math.isfinite(v.mag)))
        if v is not None and self.flip(80):
            return v
        t = t or self.pick(self.p.types)
        return self.load(t) if self.flip(70) else self.random_const(t, here=self.flip(50))

    def statements(self, count: int, ctl: int, depth: int) -> None:
        for _ in range(count):
            self.statement(ctl, depth)

    def statement(self, ctl: int, depth: int) -> None:
        w = dict(self.p.weights)
        if ctl > SG:  # divergent control flow: no sub-group operations, no coopmatrices
            w["subgroup"] = w["broadcast"] = w["coop"] = 0
        if ctl > WG:  # barriers need every work-item of the work-group
            w["exchange"] = w["barrier"] = 0
        if depth >= self.p.max_depth:
            w["if_"] = w["for_"] = 0
        kind = self.weighted(w)
        if kind is None:
            return
        getattr(self, "st_" + kind)(ctl, depth)

    def st_load(self, ctl: int, depth: int) -> None:
        self.load(self.pick(self.p.types))

    def st_store(self, ctl: int, depth: int) -> None:
        v = self.pick_val(lambda v: v.kind != "const")
        if v is not None:
            self.store(v)

    def st_arith(self, ctl: int, depth: int) -> None:
        a = self.some_val()
        b = self.some_val(a.type) if self.flip(85) else a
        ops = ["add", "sub", "mul", "min", "max", "and", "or", "xor"]
        for _ in range(3):
            op = self.pick(ops)
            m = self.binary_model(op, a, b)
            if m is not None:
                self.arith(op, a, b, a.type, *m)
                return
            b = self.random_const(a.type, mag=1)  # smaller operands fit more often
            ops = ["add", "sub", "min", "max", "mul"]

    def st_unary(self, ctl: int, depth: int) -> None:
        a = self.some_val()
        t = a.type
        ops = ["neg"] + (["conj", "re", "im"] if t.is_complex else ["abs"]) + \
            (["not"] if t.is_int else [])
        op = self.pick(ops)
        rt, mag = t, a.mag
        if op in ("re", "im"):
            rt = real_of(t)
        if op == "not":
            mag += 1
            if not fits(t, mag, 0):
                return
        r = self.fresh()
        self.emit(ir.ArithUnary(r, op, a.op, t))
        self.stats["op." + op] += 1
        self.add(Val(r, rt, mag, a.grain, a.uni))

    def st_cast(self, ctl: int, depth: int) -> None:
        a = self.some_val()
        choices = [t for t in self.p.types if t is not a.type and
                   not (a.type.is_complex and not t.is_complex) and
                   fits(t, math.floor(a.mag) if t.is_int else a.mag,
                        0 if t.is_int else a.grain)]
        if choices:
            self.cast_to(a, self.pick(choices), "cast")
            self.stats["cast"] += 1

    def st_subgroup(self, ctl: int, depth: int) -> None:
        x = self.some_val(finite=False)
        kind = self.pick(_SUBGROUP_KINDS)
        ops = ["add"] + ([] if x.type.is_complex else ["max", "min"])
        op = self.pick(ops)
        mag, uni = x.mag, (SG if x.uni == LANE else x.uni) if kind == "reduce" else LANE
        if op == "add":
            mag = x.mag * self.S
            if not fits(x.type, mag, x.grain):
                if x.type.is_complex:
                    return
                op = self.pick(("max", "min"))
                mag = x.mag
        if kind == "exclusive_scan" and op != "add":
            mag = math.inf  # lane 0 gets the identity: -inf or the type's extreme
        r = self.fresh()
        self.emit(ir.SubgroupOp(r, f"{kind}_{op}", x.op, x.type))
        self.stats[f"subgroup.{kind}_{op}"] += 1
        self.add(Val(r, x.type, mag, x.grain, uni, "subgroup"))

    def broadcast_lane(self) -> Val:
        """An i32 uniform per sub-group in [0, S)."""
        form = self.pick(("const", "const", "subgroup_id", "reduce"))
        if form == "subgroup_id" and self.nsg <= self.S:
            return self.sid
        if form == "reduce":
            op = self.pick(("max", "min"))
            r = self.fresh()
            self.emit(ir.SubgroupOp(r, "reduce_" + op, self.sl.op, I32))
            self.stats[f"subgroup.reduce_{op}"] += 1
            return Val(r, I32, self.S - 1, 0, SG, "id")
        return self.const(self.int(0, self.S - 1), I32)

    def st_broadcast(self, ctl: int, depth: int) -> None:
        x = self.some_val(finite=False)
        lane = self.broadcast_lane()
        r = self.fresh()
        self.emit(ir.SubgroupBroadcast(r, x.op, lane.op, x.type))
        self.stats["subgroup.broadcast"] += 1
        self.add(Val(r, x.type, x.mag, x.grain, min(x.uni, SG), "broadcast"))

    def st_exchange(self, ctl: int, depth: int) -> None:
        """Every work-item writes its element of a local buffer, a barrier, then each reads
        another work-item's element (a barrier first when the buffer was read before)."""
        v = self.some_val(finite=False)
        entry = self.alloca(v.type)
        if entry[1] or self.loops:  # in a loop: the previous iteration read it
            self.barrier()
        self.emit(ir.Store(v.op, entry[0], (self.lini.op,),
                           MemrefType(v.type, (self.W,), (1,), "local")))
        self.barrier()
        idx, form = self.lane_index()
        r = self.fresh()
        self.emit(ir.Load(r, entry[0], (idx.op,), MemrefType(v.type, (self.W,), (1,), "local")))
        entry[1] = True
        self.stats["exchange." + form] += 1
        self.add(Val(r, v.type, v.mag, v.grain, WG if v.uni == WG else LANE, "exchange"))

    def st_barrier(self, ctl: int, depth: int) -> None:
        self.barrier()

    def condition(self) -> Val:
        if self.flip(30):  # uniform per work-group: barriers and sub-group operations inside
            a = self.pick_val(lambda v: v.uni == WG and v.kind != "const") or self.glin
            b = self.random_const(a.type)
        else:
            a = self.some_val(finite=False)
            b = self.some_val(a.type, finite=False)
        conds = ("eq", "ne") if a.type.is_complex else ("lt", "le", "gt", "ge", "eq", "ne")
        r = self.fresh("p")
        self.emit(ir.Compare(r, self.pick(conds), a.op, b.op, a.type))
        return Val(r, ScalarType.i1, 1, 0, max(a.uni, b.uni), "cond")

    def dirty(self) -> list[bool]:
        return [e[1] for e in self.allocas.values()]

    def st_if_(self, ctl: int, depth: int) -> None:
        cond = self.condition()
        inner = max(ctl, cond.uni)
        self.stats[("if.uniform", "if.subgroup", "if.divergent")[cond.uni]] += 1
        before = {t: e[1] for t, e in self.allocas.items()}
        n = self.int(1, max(1, self.p.max_statements // 3))
        yt = self.pick(self.p.types) if self.flip(50) else None
        self.open()
        self.statements(n, inner, depth + 1)
        ya = self.some_val(yt) if yt else None
        self.observe_region()
        if ya:
            self.emit(ir.Yield((ya.op,), (yt,)))
        then = self.close(observe=False)
        after_then = {t: e[1] for t, e in self.allocas.items()}
        for t, e in self.allocas.items():
            e[1] = before.get(t, False)
        otherwise = None
        if yt or self.flip(50):
            self.open()
            self.statements(self.int(0, n), inner, depth + 1)
            yb = self.some_val(yt) if yt else None
            self.observe_region()
            if yb:
                self.emit(ir.Yield((yb.op,), (yt,)))
            otherwise = self.close(observe=False)
        for t, e in self.allocas.items():
            e[1] = e[1] or after_then.get(t, True)
        results: tuple = ()
        if yt:
            r = self.fresh("y")
            results = (r,)
        self.emit(ir.If(results, cond.op, (yt,) if yt else (), then, otherwise))
        if yt:
            self.add(Val(r, yt, max(ya.mag, yb.mag), max(ya.grain, yb.grain),
                         max(cond.uni, ya.uni, yb.uni), "if"))

    def st_for_(self, ctl: int, depth: int) -> None:
        """`for` with constant bounds, a loop-carried value updated by add/max/min with a
        value of the body (independent of the carried one), so its bound is known."""
        trips = self.int(0, self.p.max_trips)
        init = self.some_val()
        op = self.pick(("add", "max", "min") if not init.type.is_complex else ("add",))
        var = self.fresh("i")
        acc = self.fresh("acc")
        for e in self.allocas.values():
            e[1] = True  # an earlier iteration may have read local memory
        self.open()
        self.loops += 1
        self.add(Val(var, INDEX, max(trips - 1, 0), 0, WG, "loopvar"))
        self.statements(self.int(1, max(1, self.p.max_statements // 3)), ctl, depth + 1)
        w = self.some_val(init.type)
        if op == "add":
            mag, grain = init.mag + trips * w.mag, max(init.grain, w.grain)
            if not fits(init.type, mag, grain):
                op = "max" if not init.type.is_complex else None
        if op != "add":
            mag, grain = max(init.mag, w.mag), max(init.grain, w.grain)
        if op is None:  # nothing keeps a complex sum exact: carry the init through
            nxt = Value(acc.name)
            mag, grain = init.mag, init.grain
        else:
            nxt = self.fresh()
            self.emit(ir.Arith(nxt, op, acc, w.op, init.type))
        self.observe_region()
        self.loops -= 1
        self.emit(ir.Yield((nxt,), (init.type,)))
        body = self.close(observe=False)
        for e in self.allocas.values():
            e[1] = True
        r = self.fresh("f")
        self.emit(ir.For(var, self.const(0, INDEX).op, self.const(trips, INDEX).op, None, INDEX,
                         body, results=(r,), inits=((acc, init.op),),
                         result_types=(init.type,)))
        self.stats["for"] += 1
        self.add(Val(r, init.type, mag, grain, max(init.uni, w.uni), "for"))

    def st_coop(self, ctl: int, depth: int) -> None:
        coop_step(self)

    # --- regions ---------------------------------------------------------------------------

    def observe_region(self) -> None:
        """Store what the closing region computed and nobody stored yet: its sub-group,
        exchange and coopmatrix results always, other values sometimes."""
        for v in self.scopes[-1]:
            if not v.stored and v.kind not in ("const", "id", "loopvar", "cond") and \
                    (v.kind in _OBSERVED or self.flip(30)):
                self.store(v)
        observe_coop(self)

    def grid(self) -> Groups:
        G = self.int(1, self.p.max_groups)
        if not self.flip(self.p.grid_percent):
            return G
        dims = [1] * self.int(2, 3)
        for f in _factors(G):
            dims[self.int(0, len(dims) - 1)] *= f
        return tuple(dims)

    def group_ids(self, groups: Groups) -> None:
        """glin, the linear work-group id (x fastest), at function level."""
        gx = self.fresh("gx")
        self.prelude.append(ir.GroupId(gx))
        glin = gx
        if isinstance(groups, tuple):
            ids = [gx]
            counts = []
            for c in "yz"[:len(groups) - 1]:
                g, n = self.fresh("g" + c), self.fresh("n")
                self.prelude.append(ir.Builtin(g, "group_id", c, INDEX))
                ids.append(g)
                counts.append(n)
            nx = self.fresh("nx")
            self.prelude.append(ir.GroupSize(nx))
            for c, n in zip("yz", counts):
                self.prelude.append(ir.Builtin(n, "num_groups", c, INDEX))
            # glin = gx + nx * (gy + ny * gz)
            acc = ids[-1]
            for k in range(len(ids) - 2, -1, -1):
                n = ([nx] + counts)[k]
                t, s = self.fresh(), self.fresh()
                self.prelude.append(ir.Arith(t, "mul", acc, n, INDEX))
                self.prelude.append(ir.Arith(s, "add", t, ids[k], INDEX))
                acc = s
            glin = acc
            self.stats[f"grid.{len(groups)}d"] += 1
        self.glin = Val(glin, INDEX, self.G - 1, 0, WG, "id")

    def build(self) -> tuple[ir.Function, dict[str, np.ndarray], Groups]:
        p = self.p
        self.S = S = self.pick(p.subgroup_sizes)
        k, wy = self.int(1, p.max_wx_subgroups), self.int(1, p.max_wy)
        self.wg = (S * k, wy)
        self.W = S * k * wy
        self.nsg = k * wy
        groups = self.grid()
        self.G = groups if isinstance(groups, int) else math.prod(groups)
        self.group_ids(groups)
        self.open()  # the parallel region
        self.scopes[-1].append(self.glin)
        self.lane_ids()
        self.statements(self.int(2, p.max_statements), WG, 0)
        par = ir.Parallel(self.close())
        self.stats["parallel"] += 1
        tail: list = []
        if self.flip(p.foreach_tile_percent):
            self.regions.append(tail)
            self.scopes.append([self.glin])
            self.cscopes.append([])
            foreach_tile(self)
            self.regions.pop()
            self.scopes.pop()
            self.cscopes.pop()
        return self.finish([*self.prelude, par, *tail], groups)

    def finish(self, body: list, groups: Groups) -> tuple[ir.Function, dict, Groups]:
        args, data = [], {}
        for a, d in self.args:
            if isinstance(d, _Output):
                ns = max(d.slots, 1)
                shape = (self.W, ns, None if d.dynamic else self.G)
                t = MemrefType(d.elem, shape, canonical_strides(shape))
                for s in d.stores:
                    s.type = t
                a = ir.Argument(a.value, t)
                d = np.zeros((self.W, ns, self.G), d.elem.dtype)
            args.append(a)
            data[a.value.name] = d
        fn = ir.Function(self.name, tuple(args), ir.Region(body), work_group_size=self.wg,
                         subgroup_size=self.S)
        return fn, data, groups


def _factors(n: int) -> list[int]:
    out, f = [], 2
    while n > 1:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    return out


def spmd_cases(name: str = "k", **knobs: Any) -> st.SearchStrategy:
    """Random UB-free SPMD kernels of v0.4: (ir.Function, arguments, groups) with groups an
    int or a grid (x, y[, z]). Knobs: `SpmdParams` fields (a TypeError names unknown ones)."""
    p = SpmdParams.of(knobs)

    @st.composite
    def cases(draw) -> tuple[ir.Function, dict[str, np.ndarray], Groups]:
        return _Builder(draw, p, name).build()

    return cases()


def sample_spmd(seed: int, name: str = "k", **knobs: Any
                ) -> tuple[ir.Function, dict[str, np.ndarray], Groups, Counter]:
    """The kernel `spmd_cases` would build from plain random choices seeded by `seed` (fast,
    nothing shrinks), with the statistics of what it generated."""
    b = _Builder(random.Random(seed), SpmdParams.of(knobs), name)
    fn, args, groups = b.build()
    return fn, args, groups, b.stats


def spmd_program(fn: ir.Function, filename: str = "<spmd>") -> ir.Program:
    """A generated function printed as v0.4 text, parsed back and checked: the program an
    implementation reads (its IR equals `fn`)."""
    import tlinterp
    from tlinterp.printer_v04 import format_program_v04

    text = format_program_v04(ir.Program((fn,), filename))
    program = tlinterp.parse(text, filename, lang="v0.4")
    tlinterp.check(program)
    return program


__all__ = ["spmd_cases", "sample_spmd", "spmd_program", "SpmdParams"]
