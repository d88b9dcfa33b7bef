"""Deliberate lowering bugs for testing the fuzzer itself (`tlfuzz --mutation NAME`,
`python bench/mutants.py`).

Each mutant is one small change of the kind a compiler bug makes. Most rewrite the generated
OpenCL C just before it is built (`tlgpu.runtime.launch.SOURCE_FILTER`), anchored on constructs
of the lowering that stay stable (scalar expressions, loop headers, pointer set-up, barriers,
atomic helpers); a few monkeypatch a lowering rule where the bug is structural. `apply(name)`
installs one in the process that runs the OpenCL side. `HITS[0]` counts how often the mutant
changed something (a rewrite that matched, a patched rule that took its wrong branch): a mutant
that never applied cannot have been detected, and the bench reports it as "not applicable".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

HITS = [0]  # applications of the installed mutant in this process

# an operand of a lowered scalar instruction: a variable or an integer literal (ctypes_map)
_OP = r"(?:v_\w+|\(\(\w+\)(?:\(-?\d+L\)|\d+U?L|\(-9223372036854775807L - 1L\))\))"
_SIGNED = r"(char|short|int|long)"
_INT = r"(char|short|int|long|uchar|ushort|uint|ulong)"


@dataclass(frozen=True)
class Mutation:
    name: str
    category: str  # scalar | compare | control | view | group | barrier | local | collective
    doc: str
    install: Callable[[], None]


def _filter(*rules: tuple[str, object]) -> Callable[[], None]:
    """A mutant rewriting the OpenCL C text with regex substitutions (all occurrences)."""
    compiled = [(re.compile(p, re.M), r) for p, r in rules]

    def rewrite(src: str) -> str:
        for pat, repl in compiled:
            src, n = pat.subn(repl, src)
            HITS[0] += n
        return src

    def install() -> None:
        import tlgpu.runtime.launch as rt

        rt.SOURCE_FILTER = rewrite

    return install


# --- monkeypatched rules (structural bugs) ----------------------------------------------------


def _set_rule(method: str, wrong: Callable) -> None:
    """Replace a rule of tlgpu's FunctionLowerer: the method and its entries in the lowering's
    dispatch table (which holds the functions themselves, not their names)."""
    import tlgpu.lowering.function as lf

    orig = getattr(lf.FunctionLowerer, method)
    setattr(lf.FunctionLowerer, method, wrong)
    for cls, rule in lf.LOWER.items():
        if rule is orig:
            lf.LOWER[cls] = wrong


def _wrong_transpose() -> None:
    import tlgpu.lowering.collectives as lc

    op = lc._op

    def wrong(v, trans):
        if trans:
            HITS[0] += 1
        return op(v, False)[0], op(v, trans)[1]

    lc._op = wrong


def _off_by_one_k() -> None:
    import tlgpu.lowering.collectives as lc

    problem = lc.problem

    def wrong(lw, inst):
        p = problem(lw, inst)
        if p.K is None:
            return p
        HITS[0] += 1
        return dataclasses.replace(p, K=f"(({p.K}) - 1)")

    lc.problem = wrong


def _ger_swapped() -> None:
    import tlgpu.lowering.collectives as lc
    from tlinterp.lang import ir

    problem = lc.problem

    def wrong(lw, inst):
        if isinstance(inst, ir.Ger):
            HITS[0] += 1
            inst = dataclasses.replace(inst, a=inst.b, b=inst.a, a_type=inst.b_type,
                                       b_type=inst.a_type)
        return problem(lw, inst)

    lc.problem = wrong


def _scale_ignored(field: str) -> Callable[[], None]:
    """alpha or beta taken as 1 when it is a constant other than 0 and 1."""

    def install() -> None:
        import tlgpu.lowering.collectives as lc
        from tlinterp.lang import ir

        lower = lc.lower_blas

        def wrong(lw, w, inst):
            c = getattr(inst, field)
            if isinstance(c, ir.Const) and float(c.value) not in (0.0, 1.0):
                HITS[0] += 1
                inst = dataclasses.replace(inst, **{field: ir.Const(1)})
            return lower(lw, w, inst)

        lc.lower_blas = wrong

    return install


def _missing_barrier() -> None:
    import tlgpu.lowering.function as lf

    def access(self, w, reads, writes):
        if not self.spmd and self.pending.conflicts(reads, writes,
                                                    self.config.minimise_barriers):
            HITS[0] += 1
        self.pending.add(reads, writes)

    lf.FunctionLowerer.access = access


def _cast_zero_extend() -> None:
    import tlgpu.lowering.function as lf
    import tlgpu.lowering.scalar as S
    from tlgpu.lowering.ctypes_map import ctype

    cast = S.cast

    def wrong(a, src, dst):
        if src.is_int and src.is_signed and not src.is_bool and dst.is_int and not dst.is_bool \
                and dst.bits > src.bits:
            HITS[0] += 1
            return f"(({ctype(dst)})(u{ctype(src)}){a})"
        return cast(a, src, dst)

    S.cast = lf.S.cast = wrong


def _cast_float_round() -> None:
    import tlgpu.lowering.scalar as S

    cast = S.cast

    def wrong(a, src, dst):
        if src.is_float and dst.is_int and not dst.is_bool:
            HITS[0] += 1
            return cast(f"rint({a})", src, dst)
        return cast(a, src, dst)

    S.cast = wrong


def _unsigned_compare_signed() -> None:
    import tlgpu.lowering.scalar as S
    from tlinterp.lang.types import ScalarType

    def wrong(self, w, inst):
        a, b = self.operand(inst.lhs, inst.type), self.operand(inst.rhs, inst.type)
        t = inst.type
        if t.is_int and not t.is_signed and not t.is_bool and t.bits >= 32:
            HITS[0] += 1
            st = "int" if t.bits == 32 else "long"
            a, b = f"(({st}){a})", f"(({st}){b})"
        self.define(w, inst.result, ScalarType.i1, S.compare(inst.cond, a, b))

    _set_rule("lower_compare", wrong)


def _view_patch(method: str, change: Callable) -> Callable[[], None]:
    """Patch one view rule of FunctionLowerer: `change(self, inst, view) -> view or None`."""

    def install() -> None:
        import tlgpu.lowering.function as lf

        orig = getattr(lf.FunctionLowerer, method)

        def wrong(self, w, inst):
            orig(self, w, inst)
            new = change(self, inst, self.env[inst.result.name])
            if new is not None:
                HITS[0] += 1
                self.env[inst.result.name] = new

        _set_rule(method, wrong)

    return install


def _expand_stride(self, inst, v):
    """The second of the new modes keeps the first one's stride (a forgotten multiply)."""
    m = inst.mode
    if v.stride[m] == v.stride[m + 1]:
        return None
    st = list(v.stride)
    st[m + 1] = st[m]
    return dataclasses.replace(v, stride=tuple(st))


def _fuse_stride(self, inst, v):
    """The fused mode takes the stride of the last fused mode instead of the first."""
    src = self.env[inst.operand.name]
    if src.stride[inst.first] == src.stride[inst.last]:
        return None
    st = list(v.stride)
    st[inst.first] = src.stride[inst.last]
    return dataclasses.replace(v, stride=tuple(st))


def _subview_rest_size(self, inst, v):
    """A `?` size keeps the source's whole mode, forgetting the offset."""
    src = self.env[inst.operand.name]
    shape, changed, k_out = list(v.shape), False, 0
    for k, sl in enumerate(inst.slices):
        if not sl.is_range:
            continue
        if sl.size is None and shape[k_out] != src.shape[k] and self.index(sl.offset) not in (
                "((long)0L)", "0"):
            shape[k_out], changed = src.shape[k], True
        k_out += 1
    return dataclasses.replace(v, shape=tuple(shape)) if changed else None


def _ld_as_shape() -> None:
    """Leading dimensions assumed canonical: stride k = shape k-1 * stride k-1 (padding lost)."""
    import tlgpu.lowering.views as tv

    offset = tv.View.offset

    def wrong(self, idx):
        st = list(self.stride)
        for k in range(1, len(st)):
            canon = tv.mul(self.shape[k - 1], st[k - 1])
            if canon != self.stride[k]:
                HITS[0] += 1
                st[k] = canon
        return offset(dataclasses.replace(self, stride=tuple(st)), idx)

    tv.View.offset = wrong


def _local_store_transposed() -> None:
    """Stores into local memory of order 2 swap their two indices."""
    import tlgpu.lowering.function as lf

    store = lf.FunctionLowerer.lower_store

    def wrong(self, w, inst):
        dst = self.view(inst.operand)
        if dst.space == "local" and len(inst.indices) == 2:
            HITS[0] += 1
            inst = dataclasses.replace(inst, indices=inst.indices[::-1])
        return store(self, w, inst)

    _set_rule("lower_store", wrong)


def _alloca_size_dense() -> None:
    """An alloca's size is its element count times the element size: the padding of its
    strides is forgotten, so its last elements overlap the next alloca."""
    from math import prod

    import tlgpu.lowering.memory as mem

    size = mem.alloca_bytes

    def wrong(t) -> int:
        dense = max(prod(t.shape), 1) * t.element.dtype.itemsize
        if dense < size(t):
            HITS[0] += 1
        return dense

    mem.alloca_bytes = wrong


def _crash() -> None:
    """The lowering kills its process (as a crashing OpenCL compiler would)."""
    import os

    import tlgpu.lowering.function as lf

    def die(self):
        HITS[0] += 1
        os._exit(139)

    lf.FunctionLowerer.lower = die


_BARRIER = r"barrier\(CLK_LOCAL_MEM_FENCE \| CLK_GLOBAL_MEM_FENCE\);"
_M = [  # name, category, doc, install
    # scalar arithmetic and casts
    ("rem-sign", "scalar", "signed % takes the divisor's sign (floored modulo)",
     _filter((rf"\(\({_SIGNED}\)\(({_OP}) % ({_OP})\)\)", r"((\1)(((\2 % \3) + \3) % \3))"))),
    ("div-floor", "scalar", "signed / rounds towards minus infinity",
     _filter((rf"\(\({_SIGNED}\)\(({_OP}) / ({_OP})\)\)",
              r"((\1)(\2 / \3 - ((\2 % \3 != 0) & ((\2 < 0) != (\3 < 0)))))"))),
    ("shr-logical", "scalar", "signed >> shifts in zeros",
     _filter((rf"\(\({_SIGNED}\)\(({_OP}) >> ({_OP})\)\)", r"((\1)((u\1)\2 >> \3))"))),
    ("shl-mask", "scalar", "<< masks its amount to 4 bits",
     _filter((rf"\(\({_INT}\)\(({_OP}) << ({_OP})\)\)", r"((\1)(\2 << (\3 & 15)))"))),
    ("xor-as-or", "scalar", "integer ^ computed as |",
     _filter((rf"\(\({_INT}\)\(({_OP}) \^ ({_OP})\)\)", r"((\1)(\2 | \3))"))),
    ("not-as-neg", "scalar", "integer ~x computed as -x",
     _filter((rf"\(\({_INT}\)\(~({_OP})\)\)", r"((\1)(-\2))"))),
    ("cast-zero-extend", "scalar", "widening casts of signed integers zero-extend",
     _cast_zero_extend),
    ("cast-float-round", "scalar", "float to integer casts round to nearest", _cast_float_round),
    # comparisons
    ("lt-as-le", "compare", "< compares as <=",
     _filter((r"(const bool v_\w+ = \(\S+) < (\S+\);)", r"\1 <= \2"))),
    ("ge-as-gt", "compare", ">= compares as >",
     _filter((r"(const bool v_\w+ = \(\S+) >= (\S+\);)", r"\1 > \2"))),
    ("unsigned-compare-signed", "compare", "32/64-bit unsigned compares are signed",
     _unsigned_compare_signed),
    # control flow
    ("for-step-ignored", "control", "for loops advance by 1 whatever their step",
     _filter((r"\((tl_lo\d+) \+ (tl_it\d+) \* (tl_step\d+)\)", r"(\1 + \2)"))),
    ("for-trips-floor", "control", "for trip count rounds down (a partial last step is lost)",
     _filter((r"\((tl_hi\d+) - (tl_lo\d+) \+ (tl_step\d+) - 1\) / ", r"(\1 - \2) / "))),
    ("for-at-least-once", "control", "for loops run their body at least once",
     _filter((r"for \(long (tl_it\d+) = 0; \1 < (tl_trips\d+); \+\+\1\)",
              r"for (long \1 = 0; \1 < max(\2, 1L); ++\1)"))),
    ("foreach-lower-bound", "control", "foreach ignores its lower bound",
     _filter((r"= \((\w+)\)\((tl_lo\d+) \+ (tl_it\d+)\);", r"= (\1)(\3);"))),
    ("foreach-last-dropped", "control", "foreach stops one iteration early",
     _filter((r"^(\s*const long tl_n\d+ = \(long\).+ - (tl_lo\d+));$", r"\1 - 1;"))),
    # views and strides
    ("ld-as-shape", "view", "strides taken as canonical (padding ignored)", _ld_as_shape),
    ("expand-stride", "view", "expand: second mode keeps the first mode's stride",
     _view_patch("lower_expand", _expand_stride)),
    ("fuse-stride", "view", "fuse: takes the last mode's stride",
     _view_patch("lower_fuse", _fuse_stride)),
    ("subview-rest-size", "view", "subview `?` size ignores the offset",
     _view_patch("lower_subview", _subview_rest_size)),
    # group members
    ("group-offset-dropped", "group", "group member pointers lose the group offset",
     _filter((r"^(\s*global \w+\* v_\w+ = (?:\(\(global \w+\*\))?v_\w+\[[^\]]+\]\)?) \+ \w+;$",
              r"\1;"))),
    ("group-shape-member0", "group", "dynamic member sizes read from member 0",
     _filter((r"= (v_\w+_shape\d+)\[[^\]]+\];", r"= \1[0];"))),
    # barriers
    ("missing-barrier", "barrier", "no barriers between dependent work-group steps",
     _missing_barrier),
    ("drop-nested-barrier", "barrier", "barriers inside if/for blocks are dropped",
     _filter((rf"^( {{8,}}){_BARRIER}$", r"\1/* barrier dropped */"))),
    ("barrier-before-store", "barrier", "the barrier before a replicated store is dropped",
     _filter((rf"{_BARRIER}\n(\s*if \(tl_lid == 0\))", r"\1"))),
    # local memory
    ("alloca-overlap", "local", "every alloca placed at the start of local memory",
     _filter((r"\(\(local char\*\)tl_local \+ [1-9]\d*\)", "((local char*)tl_local + 0)"))),
    ("local-store-transposed", "local", "stores into 2-D local memory swap their indices",
     _local_store_transposed),
    ("alloca-size-dense", "local", "alloca sizes ignore the padding of their strides",
     _alloca_size_dense),
    # collectives
    ("wrong-transpose", "collective", "op(X) reads X untransposed", _wrong_transpose),
    ("off-by-one-k", "collective", "reductions stop one step early", _off_by_one_k),
    ("beta-ignored", "collective", "beta other than 0/1 taken as 1", _scale_ignored("beta")),
    ("alpha-ignored", "collective", "alpha other than 0/1 taken as 1", _scale_ignored("alpha")),
    ("ger-swapped", "collective", "ger computes b a^T", _ger_swapped),
    ("atomic-add-store", "collective", "atomic add turned into a plain store",
     _filter((r"\{ atom(?:ic)?_add\(p, v\); \}", "{ *p = v; }"))),
    ("atomic-update-beta", "collective", "atomic update ignores beta",
     _filter((r"\(v \+ beta \* \(", "(v + ("))),
    ("gemm-tile-edge", "collective", "register-tile store guard writes one row past the tile",
     _filter((r"if \((.+?) < (\w+M) && ", r"if (\1 <= \2 && "))),
    ("elementwise-bound", "collective", "element loop of a collective runs one step too far",
     _filter((r"(\w+) < (\w+)M \* \2N;", r"\1 <= \2M * \2N;"))),
    # fused gemm pairs on the tensor cores (lower_mma.lower_pair; NVIDIA only)
    ("pair-k-order", "collective",
     "fused gemm pair: the second gemm's B rows in plain K order, not the accumulators'",
     _filter((r"\(\(8 \* (\d+) \+ 2 \* \((tl_lane\d+) & 3\) \+ (\d)\)\)",
              r"((8 * \1 + 4 * \3 + (\2 & 3)))"))),
    ("pair-tail-not-zeroed", "collective",
     "fused gemm pair: columns of the intermediate past its edge enter the second gemm",
     _filter((r"\(\(8 \* \d+ \+ 2 \* \(tl_lane\d+ & 3\) \+ \d\) < \d+ \? ([^?]*?) : 0\.0\)",
              r"(\1)"))),
    # operands contiguous along K loaded two K steps at once (lower_mma, knob k_pairs; NVIDIA
    # only): one double2 per lane holds K indices k and k + 1
    ("k-pairs-halves-swapped", "collective",
     "tensor-core gemm: B's double2 of K indices k, k + 1 read in the wrong order",
     _filter((r"const double (tl_b\d+_\w+) = \1_v\.x, \1_h = \1_v\.y;",
              r"const double \1 = \1_v.y, \1_h = \1_v.x;"))),
    ("k-pairs-scalar-reload", "collective",
     "tensor-core gemm, K in pairs: the operand loaded one value at a time reloads index k "
     "for k + 1",
     _filter((r"\((tl_k\d+) \+ 1\)", r"(\1)"))),
    # the narrow tile column of a single tensor-core gemm (lower_mma; NVIDIA only)
    ("narrow-half-sum", "collective",
     "narrow tile column of a tensor-core gemm: each row summed over 2 of its 4 lanes",
     _filter((r"^ *(\w+) \+= tl_dshfl_xor\(\1, 2\);\n", ""))),
]

MUTATIONS: dict[str, Mutation] = {n: Mutation(n, c, d, f) for n, c, d, f in _M}
SELF_TESTS = {"crash": Mutation("crash", "crash", "the lowering kills its process", _crash)}
CATEGORIES = ("scalar", "compare", "control", "view", "group", "barrier", "local", "collective")
