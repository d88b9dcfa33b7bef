"""Planted bugs in our v0.4 OpenCL lowering (`tlfuzz --lang v0.4 --mutation NAME`,
`python bench/mutants.py --lang v0.4 --target opencl`, docs/fuzzing.md "Mutation bench").

The mechanism is fuzz/mutants/lowering_v03.py's: each mutant is one small change of the kind a
compiler bug makes, either a rewrite of the generated OpenCL C just before it is built
(`tlgpu.runtime.launch.SOURCE_FILTER`, anchored on the text tlgpu/lowering/v04 writes: the
f16/bf16 and complex helpers, the atomic helpers, the sub-group folds, the cumsum and loop
bodies) or a patched lowering rule (an entry of `tlgpu.lowering.function.LOWER`, handed a
changed instruction). `fuzz.mutants.lowering_v03.HITS[0]` counts the applications, so a mutant
that never applied is "not applicable" in the bench.

Only tlgpu is patched: the sandbox child runs the reference interpreter in the same process,
and it must stay the reference. `installed(name)` installs a mutant and undoes it afterwards
(tests); `tlfuzz`'s sandbox child installs one for its whole life (`fuzz.mutants.registry.apply`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any

from fuzz.mutants.lowering_v03 import HITS, Mutation
from tlinterp.lang import ir

# (owner, attribute or key, original value) of every patch made, newest last
_UNDO: list[tuple[Any, Any, Any]] = []


def _set(owner: Any, attr: Any, value: Any) -> None:
    """owner.attr = value (owner[attr] for a dict), remembered for `uninstall`."""
    if isinstance(owner, dict):
        _UNDO.append((owner, attr, owner[attr]))
        owner[attr] = value
    else:
        _UNDO.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, value)


def uninstall() -> None:
    """Undo every patch made by this module's mutants, newest first."""
    while _UNDO:
        owner, attr, value = _UNDO.pop()
        if isinstance(owner, dict):
            owner[attr] = value
        else:
            setattr(owner, attr, value)


@contextlib.contextmanager
def installed(name: str) -> Iterator[None]:
    """Mutant `name` installed in this process for the block, HITS counted from 0."""
    HITS[0] = 0
    MUTATIONS[name].install()
    try:
        yield
    finally:
        uninstall()


# --- the two mechanisms -------------------------------------------------------------------------


def _source(rewrite: Callable[[str], tuple[str, int]]) -> Callable[[], None]:
    """A mutant rewriting the OpenCL C text: `rewrite(src)` -> (new source, changes made)."""

    def filtered(src: str) -> str:
        src, n = rewrite(src)
        HITS[0] += n
        return src

    def install() -> None:
        import tlgpu.runtime.launch as rt

        _set(rt, "SOURCE_FILTER", filtered)

    return install


def _regex(pattern: str, repl) -> Callable[[], None]:
    """A source mutant of one regex substitution (all occurrences)."""
    pat = re.compile(pattern, re.M)
    return _source(lambda src: pat.subn(repl, src))


def _rule(cls: type, change: Callable[[Any, Any], Any]) -> Callable[[], None]:
    """A mutant handing the lowering rule of `cls` a changed instruction: `change(lw, inst)`
    -> the wrong instruction, or None where the bug does not apply."""

    def install() -> None:
        import tlgpu.lowering.function as lf

        orig = lf.LOWER[cls]

        def wrong(lw, w, inst):
            bad = change(lw, inst)
            if bad is None:
                return orig(lw, w, inst)
            HITS[0] += 1
            # the changed instruction stands where `inst` stood: directly in a `parallel`
            # body too (the local sub-group emulation recognises those by id), else the bug
            # would show only as a refusal the campaign skips
            top = getattr(lw, "parallel_top", frozenset())
            if id(inst) in top:
                lw.parallel_top = top | {id(bad)}
            try:
                return orig(lw, w, bad)
            finally:
                if id(inst) in top:
                    lw.parallel_top = top

        _set(lf.LOWER, cls, wrong)

    return install


# --- sub-groups -----------------------------------------------------------------------------------


def _scan_exclusive(lw, inst):
    """subgroup_inclusive_scan lowered as the exclusive scan (lane i misses its own value)."""
    if not inst.op.startswith("inclusive_scan_"):
        return None
    return dataclasses.replace(inst, op=inst.op.replace("inclusive", "exclusive"))


def _broadcast_next_lane(lw, inst):
    """subgroup_broadcast reads lane (index + 1) mod S: a lane number off by one."""
    from tlgpu.lowering.v04.spmd import subgroup_size
    from tlgpu.lowering.views import Scalar
    from tlinterp.lang.types import ScalarType

    S = subgroup_size(lw, inst)
    name = lw.fresh("mutlane")
    lw.env[name] = Scalar(f"((({lw.operand(inst.index, ScalarType.i32)}) + 1) % {S})",
                          ScalarType.i32)
    return dataclasses.replace(inst, index=ir.Value(name))


def _identity_zero() -> None:
    """The exclusive max/min scan starts from 0 instead of the operation's identity (lane 0
    gets 0)."""
    import tlgpu.lowering.v04.subgroups as sg

    real = sg.lowp

    class Wrong:
        def __getattr__(self, attr: str) -> Any:
            return getattr(real, attr)

        @staticmethod
        def identity(op: str, ty: str):
            if op == "add":
                return real.identity(op, ty)
            HITS[0] += 1
            return real.dtype(ty).type(0)

    _set(sg, "lowp", Wrong())


# the fold of subgroup_reduce (no lane guard, unlike the inclusive scan's): one lane short
_REDUCE_FOLD = (r"for \(uint (tl_i\d+) = 1; \1 < (\d+)u; \+\+\1\) \{\n"
                r"([^\n]*\n)(\s*)(tl_acc\d+) = ",
                r"for (uint \1 = 1; \1 < \2u - 1u; ++\1) {\n\3\4\5 = ")


# --- cooperative matrices -------------------------------------------------------------------------


def _store_transposed(lw, inst):
    """cooperative_matrix_store writes the matrix transposed (row and column swapped)."""
    return dataclasses.replace(inst, trans=not inst.trans)


def _load_untransposed(lw, inst):
    """cooperative_matrix_load.t reads the matrix as stored."""
    return dataclasses.replace(inst, trans=False) if inst.trans else None


# mul_add reads A's entry (row, k) at (row, k + 1): of the padded A in local memory (the
# general path), or of the lane's own A components (the rows path, coopmatrix.coop_rows:
# `.c[k2 * K + k]`, wrapped to stay inside the struct)
_MUL_ADD_A = (r"(tl_cm\d+)\[(tl_row\d+) \* (\d+) \+ (tl_k\d+)\]"
              r"|\.c\[(tl_k2\d+) \* (\d+) \+ (tl_k\d+)\]",
              lambda m: (f"{m[1]}[{m[2]} * {m[3]} + {m[4]} + 1]" if m[1] else
                         f".c[{m[5]} * {m[6]} + ({m[7]} + 1) % {m[6]}]"))


# --- f16, bf16, complex -------------------------------------------------------------------------

# tl_f32_bf16 drops the low 16 bits instead of rounding to nearest even
_BF16_TRUNCATE = (r"return \(ushort\)\(\(f \+ 0x7fffu \+ \(\(f >> 16\) & 1u\)\) >> 16\);",
                  r"return (ushort)(f >> 16);")
# tl_f32_f16 flushes results below 2^-14 to a signed zero
_F16_FLUSH = (r"return \(ushort\)\(s \| \(uint\)rint\(as_float\(a\) \* 0x1p24f\)\);",
              r"return (ushort)s;")
# tl_cmul's real part a.x b.x + a.y b.y
_CMUL_SIGN = (r"tl_cplx_(\w)\(a\.x \* b\.x - a\.y \* b\.y, ",
              r"tl_cplx_\1(a.x * b.x + a.y * b.y, ")
# tl_cdiv by the textbook formula ((ac + bd) + i(bc - ad)) / (c^2 + d^2) instead of Smith's
# algorithm: other roundings (and overflow of c^2 + d^2 where Smith's stays finite)
_CDIV_NAIVE = (r"(static (\w+) tl_cdiv_(\w)\(\2 a, \2 b\) \{\n)    (\w+) ar = (?s:.*?)\n\}$",
               r"\1    const \4 d = b.x * b.x + b.y * b.y;\n"
               r"    return tl_cplx_\3((a.x * b.x + a.y * b.y) / d, "
               r"(a.y * b.x - a.x * b.y) / d);\n}")


def _cast_saturating() -> None:
    """Integer casts to a narrower integer type saturate (OpenCL's convert_T_sat) instead of
    wrapping modulo 2^bits as the language defines them."""
    import tlgpu.lowering.scalar as S
    from tlgpu.lowering.ctypes_map import ctype

    real = S.cast

    def wrong(a: str, src, dst) -> str:
        if src.is_int and dst.is_int and not src.is_bool and not dst.is_bool \
                and dst.bits < src.bits:
            HITS[0] += 1
            return f"convert_{ctype(dst)}_sat({a})"
        return real(a, src, dst)

    _set(S, "cast", wrong)


# --- atomics ------------------------------------------------------------------------------------

_FETCH = re.compile(r"^static \w+ tl_fetch_\w+\(volatile [^)]*\) \{(?: .*? \}$|\n.*?^\}$)",
                    re.M | re.S)


def _return_new(src: str) -> tuple[str, int]:
    """atomic_add|max|min helpers (tl_fetch_*) return the element after their update (the new
    value) instead of the old one."""

    def one(m: re.Match) -> str:
        text = m.group(0)
        k = text.rfind("return ")
        end = text.index(";", k)
        return text[:k] + text[k + 7:end] + "; return *p;" + text[end + 1:]

    return _FETCH.subn(one, src)


# --- cumsum, for, foreach -------------------------------------------------------------------------

# cumsum's line loop: the element's stores come before its addition (an exclusive cumsum)
_CUMSUM = re.compile(r"(for \(long (tl_i\d+) = 0; \2 < [^\n]+\{\n)(\s*)(tl_acc\d+ = [^\n]+;\n)"
                     r"((?:\3[^\n]*\n)+)")


def _cumsum_exclusive(src: str) -> tuple[str, int]:
    return _CUMSUM.subn(lambda m: m.group(1) + m.group(5) + m.group(3) + m.group(4), src)


_FOR = re.compile(r"^(\s*)for \(long (tl_it\d+) = 0; \2 < (tl_trips\d+); \+\+\2\) \{$")
_ADVANCE = re.compile(r"^(\s*)(tl_carry\d+) = (tl_next\d+);$")


def _carried_stale(src: str) -> tuple[str, int]:
    """A loop-carried value is not advanced by the last iteration's yield: the loop's results
    are the values carried into its last iteration."""
    out, loops, n = [], [], 0
    for line in src.split("\n"):
        indent = len(line) - len(line.lstrip())
        while loops and line.strip() and indent <= loops[-1][0]:
            loops.pop()
        m = _FOR.match(line)
        if m:
            loops.append((len(m.group(1)), m.group(2), m.group(3)))
        a = _ADVANCE.match(line)
        if a and loops:
            _, it, trips = loops[-1]
            line = f"{a.group(1)}if ({it} + 1 < {trips}) {a.group(2)} = {a.group(3)};"
            n += 1
        out.append(line)
    return "\n".join(out), n


def _foreach_nd_swapped(lw, inst):
    """A two-dimensional foreach runs with its upper bounds swapped between the modes."""
    if len(inst.stops) != 2 or inst.stops[0] == inst.stops[1]:
        return None
    return dataclasses.replace(inst, stops=inst.stops[::-1])


def _rw(cls_name: str, change: Callable) -> Callable[[], None]:
    def install() -> None:
        _rule(getattr(ir, cls_name), change)()

    return install


_M = [  # name, category, doc, install
    ("cl-sg-scan-exclusive", "subgroup", "subgroup_inclusive_scan lowered as the exclusive scan",
     _rw("SubgroupOp", _scan_exclusive)),
    ("cl-sg-reduce-skip-last", "subgroup", "subgroup_reduce's fold skips the last lane",
     _regex(*_REDUCE_FOLD)),
    ("cl-sg-broadcast-next-lane", "subgroup", "subgroup_broadcast reads lane index + 1",
     _rw("SubgroupBroadcast", _broadcast_next_lane)),
    ("cl-sg-identity-zero", "subgroup", "exclusive max/min scans start from 0 (lane 0 gets 0)",
     _identity_zero),
    ("cl-coop-store-transposed", "coopmatrix", "cooperative_matrix_store swaps rows and columns",
     _rw("CoopStore", _store_transposed)),
    ("cl-coop-load-trans-ignored", "coopmatrix", "cooperative_matrix_load.t loads untransposed",
     _rw("CoopLoad", _load_untransposed)),
    ("cl-coop-mul-add-a-shifted", "coopmatrix", "mul_add reads A's entry (i, k) at (i, k + 1)",
     _regex(*_MUL_ADD_A)),
    ("cl-bf16-truncate", "lowp", "f32 -> bf16 truncates instead of rounding to nearest even",
     _regex(*_BF16_TRUNCATE)),
    ("cl-f16-flush-subnormals", "lowp", "f32 -> f16 flushes subnormal results to zero",
     _regex(*_F16_FLUSH)),
    ("cl-complex-mul-sign", "complex", "complex multiply's real part is ac + bd",
     _regex(*_CMUL_SIGN)),
    ("cl-complex-div-naive", "complex", "complex division by the naive formula, not Smith's",
     _regex(*_CDIV_NAIVE)),
    ("cl-cast-saturating", "scalar", "narrowing integer casts saturate instead of wrapping",
     _cast_saturating),
    ("cl-atomic-return-new", "atomic", "atomic add/max/min return the new value, not the old",
     _source(_return_new)),
    ("cl-cumsum-exclusive", "collective", "cumsum is exclusive (element k misses x[k])",
     _source(_cumsum_exclusive)),
    ("cl-for-carried-stale", "control",
     "a loop-carried value is not advanced by the last iteration",
     _source(_carried_stale)),
    ("cl-foreach-nd-swapped", "control", "2-D foreach with its upper bounds swapped",
     _rw("ForeachNd", _foreach_nd_swapped)),
]

MUTATIONS: dict[str, Mutation] = {n: Mutation(n, c, d, f) for n, c, d, f in _M}
CATEGORIES = ("subgroup", "coopmatrix", "lowp", "complex", "scalar", "atomic", "collective",
              "control")
