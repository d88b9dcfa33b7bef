"""The state and the building blocks of the SPMD kernel builder (`fuzz.gen.spmd`): drawing
(Hypothesis or `random.Random`), names and regions, constants, scalar arithmetic under the
exactness model (fuzz/gen/spmd_model.py), the work-item ids, and memory: per-lane inputs,
per-lane outputs, local memory, atomic sinks. `fuzz.gen.spmd` adds the statements and the
kernel; `fuzz.gen.spmd_coop` the cooperative matrices and foreach_tile.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Optional, Union

import numpy as np
from hypothesis import strategies as st

from fuzz.gen.spmd_model import (
    LANE,
    SG,
    WG,
    CVal,
    SpmdParams,
    Val,
    fits,
    int_max,
    literal,
    value_grain,
    value_mag,
)
from fuzz.profiles import BF16_CONVERSIONS
from tlinterp.lang import ir
from tlinterp.lang.ir import Value
from tlinterp.lang.types import INDEX, GroupType, MemrefType, ScalarType, canonical_strides
from tlinterp.lang.v04.names import MEMORY_SCOPES, MEMORY_SEMANTICS

I32 = ScalarType.i32

_INTS: dict[tuple[int, int], st.SearchStrategy] = {}
_FENCES = ((), ("global",), ("local",), ("global", "local"))


class _Output:
    """A memref argument written by the kernel: its element, shape (patched at the end for
    the per-lane outputs, whose slot count grows) and the stores that name its type."""

    def __init__(self, name: str, elem: ScalarType):
        self.value = Value(name)
        self.elem = elem
        self.slots = 0
        self.stores: list[ir.Store] = []
        self.dynamic = False


class BuilderBase:
    """What every part of the builder shares; see the module docstring."""

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
        self.mult = 1  # how often the statement runs per work-item (product of trip counts)
        self.sinks: dict[tuple[ScalarType, str], list] = {}  # (elem, op) -> [value, mag, grain]
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

    def pick(self, seq: Iterable[Any]) -> Any:
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
        if t is ScalarType.bf16 and not self.p.bf16_constants:
            # the target takes no bf16 constant, and its constant folding makes an f32
            # constant cast to bf16 one again (-O2): the value is loaded from an argument of
            # its own (random values are exact in bf16)
            mt = MemrefType.make(t, (1,))
            arg = self.new_arg("K", mt, np.array([value], t.dtype))
            zero = self.const(0, INDEX, here)
            v = self.fresh("c")
            inst = ir.Load(v, arg, (zero.op,), mt)
        else:
            v = self.fresh("c")
            inst = ir.Constant(v, literal(value, t), t)
        val = Val(v, t, value_mag(value), value_grain(value), WG, "const")
        if here:
            self.emit(inst)
            return self.add(val)
        self.prelude.append(inst)
        self.consts[key] = val
        return val

    def random_value(self, t: ScalarType, mag: Optional[int] = None) -> Union[int, float, complex]:
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
        if not self.p.index_i64_casts and {v.type, t} == {INDEX, ScalarType.i64} \
                and v.mag < 2 ** 31:
            # the target miscompiles index <-> i64: through i32, the same value (ids, loop
            # variables and sizes are small)
            v = self.cast_to(v, ScalarType.i32, kind)
        if not self.p.bf16_conversions and (v.type, t) in BF16_CONVERSIONS:
            # exact on the way: bf16 -> f64 -> f32; f16 -> f32 -> bf16 rounds once; f64 -> f32
            # -> bf16 may round twice (the program says so: the reference computes the same)
            v = self.cast_to(v, ScalarType.f64 if v.type is ScalarType.bf16 else ScalarType.f32,
                             kind)
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
        if t in self.p.atomic_types and self.flip(10):  # read-only data: as a plain load
            self.emit(ir.AtomicLoad(r, v, indices, t, *self.scope()))
            self.stats["atomic_load"] += 1
        else:
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
        if v.type in self.p.atomic_types and self.flip(10):  # an element of its own
            self.emit(ir.AtomicStore(v.op, out.value, inst.indices, *self.scope()))
            self.stats["atomic_store"] += 1
        elif v.type in self.p.atomic_types and self.flip(10):
            # an atomic add to an element of its own: nobody else's, so the old value it
            # returns, the output's initial 0, is defined, and it is kept too
            old = self.fresh()
            self.emit(ir.AtomicUpdate(old, "add", v.op, out.value, inst.indices, v.type,
                                      *self.scope()))
            self.stats["atomic_add.own"] += 1
            v.stored = True
            self.store(Val(old, v.type, 0, 0, LANE, "atomic"))
            return
        else:
            self.emit(inst)
        v.stored = True
        self.stats["store"] += 1

    def scope(self) -> tuple[Optional[str], Optional[str]]:
        """A memory scope and semantics of an atomic, each sometimes left out."""
        return (self.pick(MEMORY_SCOPES) if self.flip(40) else None,
                self.pick(MEMORY_SEMANTICS) if self.flip(40) else None)

    def st_atomic(self, ctl: int, depth: int) -> None:
        """Every work-item (that gets here) updates its work-group's element of a sink with
        one operation (add, max or min: one per sink, so the order of the updates does not
        matter); the old values they get back depend on that order and are not used."""
        types = [t for t in self.p.atomic_types if t in self.p.types]
        if not types:
            return
        v = self.some_val(self.pick(types))
        op = self.pick(("add",) if v.type.is_complex else ("add", "max", "min"))
        sink = self.sinks.get((v.type, op))
        if sink is None:
            mag, grain = self.data_model(v.type)
            data = self.data(v.type, (self.G,), mag, grain)
            sink = self.sinks[(v.type, op)] = [self.new_arg("S", MemrefType(
                v.type, (self.G,), (1,)), data), mag, grain]
        if op == "add":
            mag, grain = sink[1] + self.W * self.mult * v.mag, max(sink[2], v.grain)
        else:
            mag, grain = max(sink[1], v.mag), max(sink[2], v.grain)
        if not fits(v.type, mag, grain):
            return
        sink[1:] = [mag, grain]
        self.emit(ir.AtomicUpdate(self.fresh(), op, v.op, sink[0], (self.glin.op,), v.type,
                                  *self.scope()))
        self.stats["atomic_" + op] += 1

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

    def final_arguments(self) -> tuple[list[ir.Argument], dict[str, np.ndarray]]:
        """The arguments in order and their data; the per-lane outputs get their shapes now
        (W x slots x work-groups), in their argument and in every store."""
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
        return args, data


__all__ = ["BuilderBase", "I32"]
