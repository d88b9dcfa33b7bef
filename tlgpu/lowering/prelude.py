"""Helper functions the generated kernels call: atomic read-modify-write updates.

`*p = beta == 0 ? v : v + beta * *p`, atomically, computed in the collective's compute type
CT and converted to the element type T. Floats and every integer width go through a
compare-and-swap loop on the containing 32- or 64-bit word (OpenCL C 1.2 has no float atomics
and no 8/16-bit atomics); adding into a 32/64-bit integer (beta == 1) uses the native atomic.
f16/bf16/c32 elements or compute types go through v04/atomics.py (`Helpers.scaled_update`),
the one compare-and-swap generator of the v0.4 types.
"""

from __future__ import annotations

import re

from tlgpu.lowering.ctypes_map import ctype
from tlgpu.lowering.v04 import complexnum, lowp
from tlinterp.lang.types import ScalarType

HEADER = """\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL FP_CONTRACT OFF
typedef ushort tl_f16;
typedef ushort tl_bf16;
"""


def update_name(space: str, t: ScalarType, ct: ScalarType) -> str:
    return f"tl_atomic_update_{space}_{ctype(t)}_{ctype(ct)}"


def add_name(space: str, t: ScalarType) -> str:
    return f"tl_atomic_add_{space}_{ctype(t)}"


def update_helper(space: str, t: ScalarType, ct: ScalarType) -> str:
    """The helper of `update_name`, for element and compute types of v0.3 (v0.4's go
    through v04/atomics.py `Helpers.scaled_update`)."""
    T, C = ctype(t), ctype(ct)
    name = update_name(space, t, ct)
    new = f"(beta == ({C})0 ? ({T})v : ({T})(v + beta * ({C})o))"
    head = f"static void {name}(volatile {space} {T}* p, {C} v, {C} beta)"
    if t.bits >= 32:
        W = "ulong" if t.bits == 64 else "uint"
        cas = "atom_cmpxchg" if t.bits == 64 else "atomic_cmpxchg"
        # the first read is atomic too: a plain read racing with other work-items' swaps is
        # a data race in OpenCL's memory model (Oclgrind reports it)
        load = "atom_add(w, 0UL)" if t.bits == 64 else "atomic_add(w, 0u)"
        as_t = f"as_{T}" if t.is_float else f"({T})"
        as_w = f"as_{W}" if t.is_float else f"({W})"
        return f"""{head} {{
    volatile {space} {W}* w = (volatile {space} {W}*)p;
    {W} old = {load}, seen;
    do {{
        seen = old;
        {T} o = {as_t}(seen);
        {T} n = {new};
        old = {cas}(w, seen, {as_w}(n));
    }} while (old != seen);
}}
"""
    mask = "0xffu" if t.bits == 8 else "0xffffu"
    ut = "uchar" if t.bits == 8 else "ushort"
    return f"""{head} {{
    /* no 8/16-bit atomics in OpenCL C 1.2: swap the aligned 32-bit word holding *p */
    uint lane = (uint)((ulong)p & 3UL);
    volatile {space} uint* w = (volatile {space} uint*)((volatile {space} char*)p - lane);
    uint shift = lane * 8u;
    uint old = atomic_add(w, 0u), seen;  /* atomic: a plain read would race with the swaps */
    do {{
        seen = old;
        {T} o = ({T})(({ut})((seen >> shift) & {mask}));
        {T} n = {new};
        uint word = (seen & ~({mask} << shift)) | (((uint)({ut})n) << shift);
        old = atomic_cmpxchg(w, seen, word);
    }} while (old != seen);
}}
"""


def add_helper(space: str, t: ScalarType) -> str:
    T = ctype(t)
    fn = "atom_add" if t.bits == 64 else "atomic_add"
    return (f"static void {add_name(space, t)}(volatile {space} {T}* p, {T} v) "
            f"{{ {fn}(p, v); }}\n")


def native_add(t: ScalarType) -> bool:
    return t.is_int and not t.is_bool and t.bits >= 32


# the v0.4 scalar helpers (f16/bf16 conversions, complex arithmetic): name -> (code, callees)
CALLABLE: dict[str, tuple[str, tuple[str, ...]]] = {**lowp.HELPERS, **complexnum.HELPERS}


def called(text: str) -> list[str]:
    """The code of each CALLABLE helper `text` calls, callees first (each once)."""
    out: dict[str, str] = {}

    def add(name: str) -> None:
        if name in out:
            return
        code, callees = CALLABLE[name]
        for c in callees:
            add(c)
        out[name] = code

    for name in sorted(set(re.findall(r"\b(tl_\w+)\(", text)) & CALLABLE.keys()):
        add(name)
    return list(out.values())


