"""v0.4's atomics in OpenCL C: `atomic_load`, `atomic_store` and `atomic_add|max|min`, which
return the element's value before the update (docs/semantics.md "v0.4 instructions on the
OpenCL backend").

Two kinds of code, chosen by the knob `atomics_cl20` (the runtime sets it from the device):
- OpenCL C 2.0 atomics (`atomic_*_explicit` with the instruction's memory order and scope):
  every scope and semantics. Integer add/max/min of 32 and 64 bits are native; floats and
  8/16-bit integers go through a compare-and-exchange loop (on the containing 32-bit word for
  the narrow ones) with the instruction's order on success.
- OpenCL C 1.2 atomics (the `atomic_*`/`atom_*` built-ins and compare-and-swap loops in the
  style of prelude.py): relaxed read-modify-writes coherent across the device. A stronger
  semantics is the relaxed atomic between full memory fences (`mem_fence` of global and local
  memory: before it for release, after it for acquire, both for acquire_release and
  sequentially_consistent), the OpenCL C 1.2 way to order a work-item's accesses around it;
  the cross_device scope is the device's, since a launch runs on one device.
v0.4's types: f16/bf16 (16-bit patterns) swap their 32-bit word as i16 does, c32 (float2) its
64 bits as f64 does, the new value from scalar.py's tables (the interpreter's arithmetic bit
for bit); c64 (16 bytes: no compare-and-swap that wide) is refused in `_v04_leftover`. The
`.atomic` collectives' updates of these types (`*p = v + beta * *p`) are `scaled_update`.
Outside an SPMD region an atomic is a mixed instruction (every work-item executes it): work-item
0 applies it for the work-group (`atomic_add` once per work-item, as the interpreter does) and
hands the old value to the others through local memory, so that every work-item sees the value
the first update returned.
"""

from __future__ import annotations

from typing import Optional

from tlgpu.lowering import scalar as S
from tlgpu.lowering.barriers import STAGE
from tlgpu.lowering.ctypes_map import ctype
from tlgpu.lowering.v04 import complexnum
from tlgpu.lowering.views import View
from tlinterp.lang import ir
from tlinterp.lang.types import V04_ONLY_SCALARS, ScalarType

ORDERS = {None: "memory_order_relaxed", "relaxed": "memory_order_relaxed",
          "acquire": "memory_order_acquire", "release": "memory_order_release",
          "acquire_release": "memory_order_acq_rel",
          "sequentially_consistent": "memory_order_seq_cst"}
# a sub-group's scope is given by the work-group's (stronger, and OpenCL C 2.0 has no
# sub-group scope without cl_khr_subgroups); cross_device is every SVM device's
SCOPES = {None: "memory_scope_device", "device": "memory_scope_device",
          "work_group": "memory_scope_work_group", "subgroup": "memory_scope_work_group",
          "cross_device": "memory_scope_all_svm_devices"}
# orders a load or a store cannot have in C11/OpenCL C 2.0: the strongest one instead
_NOT_FOR = {"load": ("memory_order_release", "memory_order_acq_rel"),
            "store": ("memory_order_acquire", "memory_order_acq_rel")}


def _order(kind: str, semantics: Optional[str]) -> str:
    o = ORDERS[semantics]
    return "memory_order_seq_cst" if o in _NOT_FOR.get(kind, ()) else o


def _bits(t: ScalarType) -> int:
    """The element's size in bits (a complex number's: both parts, c32 one 64-bit word)."""
    return 2 * t.bits if t.is_complex else t.bits


def _word(t: ScalarType) -> tuple[str, str]:
    """(C word type, OpenCL C 2.0 atomic word type) the element is swapped as."""
    return ("ulong", "atomic_ulong") if _bits(t) == 64 else ("uint", "atomic_uint")


def _bitwise(t: ScalarType) -> bool:
    """Floats and c32 (float2) are reinterpreted as their word; integers converted."""
    return t.is_float or t.is_complex


def _as(t: ScalarType, w: str, e: str) -> str:
    """Word `e` of type `w` as the element type, for a 32/64-bit element."""
    return f"as_{ctype(t)}({e})" if _bitwise(t) else f"({ctype(t)})({e})"


def _to_word(t: ScalarType, w: str, e: str) -> str:
    return f"as_{w}({e})" if _bitwise(t) else f"({w})({e})"


class Helpers:
    """Names and code of the helper functions, one per (kind, space, type, order, scope)."""

    def __init__(self, lw, cl20: bool):
        self.lw, self.cl20 = lw, cl20

    def _add(self, name: str, code: str) -> str:
        self.lw.helpers.setdefault(name, code)
        return name

    def name(self, kind: str, space: str, t: ScalarType, order: str, scope: str) -> str:
        if _bits(t) > 64:  # c64: _v04_leftover refuses it (no 128-bit compare-and-swap)
            raise ValueError(f"no atomic access to {t.value} elements")
        tag = f"_{order[13:]}_{scope[13:]}" if self.cl20 else ""
        # f16 and bf16 are both ushort (as u16 is): the v0.4 types go by their own names
        ty = t.value if t in V04_ONLY_SCALARS else ctype(t)
        return f"tl_{kind}_{space}_{ty}{tag}"

    # -- the read-modify-write of `new(o, v)` as a compare-and-swap loop ------------------------
    def cas(self, kind: str, space: str, t: ScalarType, new: str, order: str,
            scope: str, params: Optional[str] = None) -> str:
        """Helper `T NAME(volatile SPACE T* p, T v)` (or `params` after p): swaps in `new` (a
        C expression of the old value `o` and the parameters), returns the old value."""
        name = self.name(kind, space, t, order, scope)
        T = ctype(t)
        head = f"static {T} {name}(volatile {space} {T}* p, {params or f'{T} v'})"
        if _bits(t) >= 32:
            W, AW = _word(t)
            ptr = f"volatile {space} {AW if self.cl20 else W}* w = " \
                  f"(volatile {space} {AW if self.cl20 else W}*)p;"
            if self.cl20:
                body = f"""    {ptr}
    {W} seen = atomic_load_explicit(w, memory_order_relaxed, {scope});
    {T} o;
    do {{
        o = {_as(t, W, "seen")};
    }} while (!atomic_compare_exchange_strong_explicit(w, &seen, {_to_word(t, W, new)},
             {order}, memory_order_relaxed, {scope}));
    return o;"""
            else:
                cas = "atom_cmpxchg" if _bits(t) == 64 else "atomic_cmpxchg"
                load = "atom_add(w, 0UL)" if _bits(t) == 64 else "atomic_add(w, 0u)"
                body = f"""    {ptr}
    {W} old = {load}, seen;
    do {{
        seen = old;
        {T} o = {_as(t, W, "seen")};
        old = {cas}(w, seen, {_to_word(t, W, new)});
    }} while (old != seen);
    return {_as(t, W, "seen")};"""
        else:
            mask = "0xffu" if t.bits == 8 else "0xffffu"
            ut = "uchar" if t.bits == 8 else "ushort"
            word = "atomic_uint" if self.cl20 else "uint"
            pre = f"""    /* no 8/16-bit atomics: swap the aligned 32-bit word holding *p */
    uint lane = (uint)((ulong)p & 3UL);
    volatile {space} {word}* w = (volatile {space} {word}*)((volatile {space} char*)p - lane);
    uint shift = lane * 8u;"""
            insert = f"(seen & ~({mask} << shift)) | (((uint)({ut})({T})({new})) << shift)"
            extract = f"({T})(({ut})((seen >> shift) & {mask}))"
            if self.cl20:
                body = f"""{pre}
    uint seen = atomic_load_explicit(w, memory_order_relaxed, {scope});
    {T} o;
    do {{
        o = {extract};
    }} while (!atomic_compare_exchange_strong_explicit(w, &seen, {insert},
             {order}, memory_order_relaxed, {scope}));
    return o;"""
            else:
                body = f"""{pre}
    uint old = atomic_add(w, 0u), seen;
    do {{
        seen = old;
        {T} o = {extract};
        old = atomic_cmpxchg(w, seen, {insert});
    }} while (old != seen);
    return {extract};"""
        return self._add(name, f"{head} {{\n{body}\n}}\n")

    # -- the three instructions -------------------------------------------------------------
    def update(self, op: str, space: str, t: ScalarType, order: str, scope: str) -> str:
        T = ctype(t)
        if t.is_int and t.bits >= 32:  # native
            name = self.name(f"fetch_{op}", space, t, order, scope)
            head = f"static {T} {name}(volatile {space} {T}* p, {T} v)"
            if self.cl20:
                at = "atomic_long" if t.bits == 64 else "atomic_int"
                return self._add(name, f"{head} {{ return atomic_fetch_{op}_explicit("
                                       f"(volatile {space} {at}*)p, v, {order}, {scope}); }}\n")
            if t.bits == 32:
                return self._add(name, f"{head} {{ return atomic_{op}(p, v); }}\n")
            if op == "add":  # 64-bit min/max need the extended atomics: a loop instead
                return self._add(name, f"{head} {{ return atom_add(p, v); }}\n")
        return self.cas(f"fetch_{op}", space, t, S.binary(op, "o", "v", t), order, scope)

    def scaled_update(self, space: str, t: ScalarType, ct: ScalarType) -> str:
        """Helper `T NAME(volatile SPACE T* p, CT v, CT beta)` of the `.atomic` collectives
        into f16/bf16/c32 elements (or computing in such a type): `*p = beta == 0 ? v :
        v + beta * *p` in the compute type `ct` with scalar.py's conversions and arithmetic,
        rounded once to t; relaxed and device-wide, as prelude.update_helper's other types."""
        C = ctype(ct)
        zero = complexnum.is_zero("beta") if ct.is_complex else "beta == 0"
        scaled = S.binary("add", "v", S.binary("mul", "beta", S.cast("o", t, ct), ct), ct)
        return self.cas(f"update_{ct.value}", space, t, S.cast(f"({zero} ? v : {scaled})", ct, t),
                        ORDERS[None], SCOPES[None], params=f"{C} v, {C} beta")

    def load(self, space: str, t: ScalarType, order: str, scope: str) -> str:
        T = ctype(t)
        name = self.name("load", space, t, order, scope)
        head = f"static {T} {name}(volatile {space} {T}* p)"
        if _bits(t) >= 32:
            W, AW = _word(t)
            if self.cl20:
                e = f"atomic_load_explicit((volatile {space} {AW}*)p, {order}, {scope})"
            else:
                add = "atom_add" if _bits(t) == 64 else "atomic_add"
                zero = "0UL" if _bits(t) == 64 else "0u"
                e = f"{add}((volatile {space} {W}*)p, {zero})"
            return self._add(name, f"{head} {{ return {_as(t, W, e)}; }}\n")
        mask = "0xffu" if t.bits == 8 else "0xffffu"
        ut = "uchar" if t.bits == 8 else "ushort"
        word = "atomic_uint" if self.cl20 else "uint"
        e = f"atomic_load_explicit(w, {order}, {scope})" if self.cl20 else "atomic_add(w, 0u)"
        return self._add(name, f"""{head} {{
    uint lane = (uint)((ulong)p & 3UL);
    volatile {space} {word}* w = (volatile {space} {word}*)((volatile {space} char*)p - lane);
    return ({T})(({ut})(({e} >> (lane * 8u)) & {mask}));
}}
""")

    def store(self, space: str, t: ScalarType, order: str, scope: str) -> str:
        T = ctype(t)
        name = self.name("store", space, t, order, scope)
        if _bits(t) >= 32:
            W, AW = _word(t)
            head = f"static void {name}(volatile {space} {T}* p, {T} v)"
            if self.cl20:
                e = (f"atomic_store_explicit((volatile {space} {AW}*)p, "
                     f"{_to_word(t, W, 'v')}, {order}, {scope})")
            else:
                xchg = "atom_xchg" if _bits(t) == 64 else "atomic_xchg"
                e = f"{xchg}((volatile {space} {W}*)p, {_to_word(t, W, 'v')})"
            return self._add(name, f"{head} {{ {e}; }}\n")
        return self.cas("store", space, t, "v", order, scope)




_FENCE = "mem_fence(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);"
_RELEASING = frozenset({"release", "acquire_release", "sequentially_consistent"})
_ACQUIRING = frozenset({"acquire", "acquire_release", "sequentially_consistent"})


def fence_before(lw, w, inst) -> None:
    """OpenCL C 1.2: the release half of a semantics, a fence before the relaxed atomic."""
    if not lw.config.atomics_cl20 and inst.semantics in _RELEASING:
        w.line(_FENCE)


def fence_after(lw, w, inst) -> None:
    """OpenCL C 1.2: the acquire half of a semantics, a fence after the relaxed atomic."""
    if not lw.config.atomics_cl20 and inst.semantics in _ACQUIRING:
        w.line(_FENCE)


def _element(lw, inst) -> tuple[View, str]:
    v = lw.view(inst.operand)
    idx = [lw.index(i) for i in inst.indices]
    return v, v.addr(idx)


def setup(lw, inst, kind: str) -> tuple[Helpers, str, str]:
    cl20 = bool(lw.config.atomics_cl20)
    return Helpers(lw, cl20), _order(kind, inst.semantics), SCOPES[inst.scope]


def _mixed(lw, w, inst, t: ScalarType, call: str, times: int) -> None:
    """Outside an SPMD region: work-item 0 applies `call` `times` times for the work-group,
    and every work-item takes the first old value from local memory."""
    T = ctype(t)
    lw.stage_bytes = max(lw.stage_bytes, 8)
    slot = lw.fresh("slot")
    w.line(f"local {T}* {slot} = (local {T}*)((local char*)tl_local + {lw.alloca_bytes});")
    lw.access(w, {STAGE}, {STAGE})  # earlier readers of the staging memory are done
    w.open("if (tl_lid == 0)")
    if times == 1:
        w.line(f"*{slot} = {call};")
    else:
        k, first = lw.fresh("k"), lw.fresh("first")
        w.line(f"{T} {first} = {call};")
        w.line(f"for (int {k} = 1; {k} < {times}; ++{k}) {call};")
        w.line(f"*{slot} = {first};")
    w.close()
    lw.barrier(w, {STAGE})
    lw.access(w, {STAGE}, set())
    lw.define(w, inst.result, t, f"*{slot}")


def lower_atomic_load(lw, w, inst: ir.AtomicLoad) -> None:
    h, order, scope = setup(lw, inst, "load")
    v, addr = _element(lw, inst)
    lw.access(w, {v.root}, set())
    name = h.load(v.space, v.elem, order, scope)
    fence_before(lw, w, inst)
    lw.define(w, inst.result, v.elem, f"{name}({addr})")
    fence_after(lw, w, inst)


def lower_atomic_store(lw, w, inst: ir.AtomicStore) -> None:
    h, order, scope = setup(lw, inst, "store")
    v, addr = _element(lw, inst)
    value = lw.operand(inst.value, v.elem)
    lw.access(w, set(), {v.root})
    name = h.store(v.space, v.elem, order, scope)
    guard = "" if lw.spmd else "if (tl_lid == 0) "  # mixed: one store for the work-group
    fence_before(lw, w, inst)
    w.line(f"{guard}{name}({addr}, {value});")
    fence_after(lw, w, inst)


def lower_atomic_update(lw, w, inst: ir.AtomicUpdate) -> None:
    h, order, scope = setup(lw, inst, "update")
    v, addr = _element(lw, inst)
    value = lw.operand(inst.value, v.elem)
    lw.access(w, {v.root}, {v.root})
    name = h.update(inst.op, v.space, v.elem, order, scope)
    call = f"{name}({addr}, {value})"
    fence_before(lw, w, inst)
    if lw.spmd:
        lw.define(w, inst.result, v.elem, call)
    else:  # every work-item adds (the interpreter's rule); max and min give the same once
        _mixed(lw, w, inst, v.elem, call, lw.geo.size if inst.op == "add" else 1)
    fence_after(lw, w, inst)


__all__ = ["fence_after", "fence_before", "lower_atomic_load", "lower_atomic_store",
           "lower_atomic_update", "setup"]
