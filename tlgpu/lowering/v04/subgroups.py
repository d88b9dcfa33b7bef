"""Sub-group operations in OpenCL C: subgroup_broadcast, subgroup_reduce_*, and the inclusive
and exclusive scans (add, max, min), with the interpreter's results (tlinterp/interp/
subgroups.py: a left fold in lane order, every step rounded to the type).

Every operation is built from one primitive, "lane i's value of x" (`Exchange.get`), which
each strategy (LoweringConfig.subgroups, resolved from the device by the runtime) provides:

- "intel": the device's sub-groups (cl_khr_subgroups with cl_intel_required_subgroup_size):
  the kernel gets `intel_reqd_sub_group_size(S)`, a value moves with `sub_group_broadcast`
  (a uniform lane: the broadcast's index is uniform by the language's rule, a fold's loop
  counter is uniform); 32-bit and 64-bit integer reductions and scans use the device's
  `sub_group_reduce_*` / `sub_group_scan_*` directly (wrapping integer arithmetic does not
  depend on the order).
- "nvidia": warp shuffles through inline PTX (`shfl.sync.idx.b32`, two for 64-bit values), a
  sub-group being S consecutive lanes of a warp (S <= 32): its lanes' member mask, the
  segment given by shfl's c operand ((32 - S) << 8 | 31).
- "local": no sub-groups on the device: the values go through local memory (one write, a
  work-group barrier, S reads, a barrier). A work-group barrier is a sub-group barrier when
  the work-group is exactly one sub-group, or when every work-item of the work-group reaches
  the instruction (it lies directly in a `parallel` body, not in an `if` or loop of it, nor in
  `foreach_tile`); anything else is refused by name.

Any value travels as 32- or 64-bit words (`_pack`/`_unpack`: its bits, so every type, f16 or
complex included, moves exactly). Floating folds run in lane order on every strategy (the
device's own float reductions may associate differently); so does every other type but the
integers the Intel builtins take.
"""

from __future__ import annotations

from tlgpu.lowering import scalar as S
from tlgpu.lowering.ctypes_map import ctype, literal
from tlgpu.lowering.memory import ALIGN, SLAB_ALIGN
from tlgpu.lowering.v04.spmd import LX, quot, rem, subgroup_size
from tlgpu.lowering.views import Scalar
from tlinterp.interp import lowp
from tlinterp.lang import ir
from tlinterp.lang.diagnostics import BackendError, Diagnostic
from tlinterp.lang.types import ScalarType

# LoweringConfig.subgroups: the strategies, and the one lowering without a device takes
STRATEGIES = ("intel", "nvidia", "local")
WITHOUT_DEVICE = "intel"
WARP = 32
# the words of the local strategy's exchange buffer per work-item (16-byte types take two)
LOCAL_WORDS = 2
# the kernel-scope local array of the sub-groups' coopmatrix scratch (runtime/workarounds.py
# recognises a coopmatrix kernel by it)
SCRATCH = "tl_cm"
# what every strategy needs declared before the kernels (name -> C code)
_PTX_SHUFFLE = ("tl_shfl32", """static inline uint tl_shfl32(uint x, uint lane, uint c, uint mask) {
    uint r;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, %3, %4;"
                 : "=r"(r) : "r"(x), "r"(lane), "r"(c), "r"(mask));
    return r;
}
static inline ulong tl_shfl64(ulong x, uint lane, uint c, uint mask) {
    const uint2 v = as_uint2(x);
    return as_ulong((uint2)(tl_shfl32(v.x, lane, c, mask), tl_shfl32(v.y, lane, c, mask)));
}
""")


class NoSubgroups(BackendError):
    """The device has no sub-groups and the emulation would not be exact for this kernel; the
    runtime names the device in the message (launch.lowered_for)."""


def strategy(lw) -> str:
    return lw.config.subgroups or WITHOUT_DEVICE


def _itemsize(t: ScalarType) -> int:
    return 0 if t.is_bool else t.dtype.itemsize


def _pack(t: ScalarType, x: str) -> list[tuple[str, str]]:
    """x's bits as (carrier type, C expression) words; `x` names a variable."""
    n, T = _itemsize(t), ctype(t)
    if n == 0:
        return [("uint", f"(uint){x}")]
    if n in (1, 2):
        u = "uchar" if n == 1 else "ushort"
        return [("uint", f"(uint)as_{u}({x})")]
    if n == 4:
        return [("uint", f"as_uint({x})")]
    if n == 8:
        return [("ulong", f"as_ulong({x})")]
    assert n == 16, (t, T)
    return [("ulong", f"as_ulong2({x}).s0"), ("ulong", f"as_ulong2({x}).s1")]


def _unpack(t: ScalarType, words: list[str]) -> str:
    n, T = _itemsize(t), ctype(t)
    if n == 0:
        return f"({words[0]} != 0u)"
    if n in (1, 2):
        u = "uchar" if n == 1 else "ushort"
        # f16/bf16 are typedefs of ushort (ctypes_map.C_TYPES): OpenCL has no as_tl_f16
        return f"as_{u if T.startswith('tl_') else T}(({u}){words[0]})"
    if n in (4, 8):
        return f"as_{T}({words[0]})"
    return f"as_{T}((ulong2)({words[0]}, {words[1]}))"


class Exchange:
    """x of every lane of the sub-group, made readable by lane index (`get`), in one of the
    strategies; `close` ends it (the local strategy's second barrier)."""

    def __init__(self, lw, w, inst, t: ScalarType, x: str):
        self.lw, self.t, self.kind = lw, t, strategy(lw)
        self.S = lw.fn.subgroup_size
        W = lw.geo.size
        self.words: list[tuple[str, str]] = []
        for ct, e in _pack(t, x):
            n = lw.fresh("sgw")
            w.line(f"const {ct} {n} = {e};")
            self.words.append((ct, n))
        setup(lw, inst)
        if self.kind == "local":
            prologue(lw, f"local ulong tl_sgx[{LOCAL_WORDS * W}];")
            for k, (_, n) in enumerate(self.words):
                w.line(f"tl_sgx[{k * W} + tl_lid] = (ulong){n};")
            w.line("barrier(CLK_LOCAL_MEM_FENCE);")

    def get(self, lane: str) -> str:
        """x of lane `lane` (a uniform C expression) as a value of type t."""
        out = []
        for k, (ct, n) in enumerate(self.words):
            if self.kind == "intel":
                out.append(f"sub_group_broadcast({n}, (uint)({lane}))")
            elif self.kind == "nvidia":
                f = "tl_shfl32" if ct == "uint" else "tl_shfl64"
                out.append(f"{f}({n}, (uint)({lane}), tl_sg_c, tl_sg_mask)")
            else:
                base = "" if self.S == self.lw.geo.size else \
                    f"{quot('tl_lid', self.S)} * {self.S} + "
                out.append(f"(({ct})tl_sgx[{k * self.lw.geo.size} + {base}({lane})])")
        return _unpack(self.t, out)

    def close(self, w) -> None:
        if self.kind == "local":  # the next exchange must not overwrite values still read
            w.line("barrier(CLK_LOCAL_MEM_FENCE);")


def setup(lw, inst) -> None:
    """What the strategy needs before a sub-group instruction `inst`: its kernel attribute
    or prologue lines; a refusal where it cannot be exact."""
    kind, S, W = strategy(lw), subgroup_size(lw, inst), lw.geo.size
    if kind == "nvidia":
        if S > WARP or WARP % S:
            raise lw.error(f"{_name(inst)}: a sub-group of {S} work-items does not fit "
                           f"NVIDIA's warps of {WARP} (sub-groups are warp shuffles)",
                           inst.span)
        lw.helpers.setdefault(*_PTX_SHUFFLE)
        prologue(lw, f"const uint tl_sg_c = {(WARP - S) << 8 | 31}u;")
        mask = "0xffffffffu" if S == WARP else \
            f"({(1 << S) - 1}u << ((uint)tl_lid & {WARP - S}u))"
        prologue(lw, f"const uint tl_sg_mask = {mask};")
    elif kind == "local":
        # a work-group barrier is a sub-group barrier when the work-group is one sub-group,
        # or when every work-item reaches the instruction: one directly in the body of a
        # `parallel` (code outside SPMD regions is the same for the whole work-group)
        if W != S and id(inst) not in getattr(lw, "parallel_top", ()):
            raise NoSubgroups([Diagnostic(
                f"{_name(inst)} needs sub-groups, which this device lacks (no "
                f"cl_khr_subgroups / cl_intel_subgroups); the local-memory emulation is "
                f"exact only for a work-group of one sub-group or an instruction that every "
                f"work-item reaches (directly in `parallel`), and @{lw.fn.name}'s work-group "
                f"has {W // S} sub-groups of {S}: use --device intel",
                inst.span, lw.program.filename)], lw.program.source)
    else:
        intel_attribute(lw)


def subgroup_barrier(lw, w, inst) -> None:
    """A barrier of the sub-group over local memory (the coopmatrix scratch)."""
    setup(lw, inst)
    kind = strategy(lw)
    if kind == "intel":
        w.line("sub_group_barrier(CLK_LOCAL_MEM_FENCE);")
    elif kind == "nvidia":  # bar.warp.sync orders memory among the lanes it names
        w.line('asm volatile("bar.warp.sync %0;" :: "r"(tl_sg_mask) : "memory");')
    else:  # the work-group is the sub-group (setup)
        w.line("barrier(CLK_LOCAL_MEM_FENCE);")


def scratch(lw, nbytes: int) -> str:
    """A `local char*` to `nbytes` of local memory of this work-item's sub-group (each
    sub-group its own part of one kernel-scope array, sized for the largest request)."""
    words = -(-nbytes // ALIGN) * (ALIGN // 8)  # each sub-group's part ALIGN-aligned
    have = getattr(lw, "coop_scratch_words", 0)
    nsg = lw.geo.size // lw.fn.subgroup_size
    if words > have:
        if have:
            lw.prologue.remove(f"local ulong {SCRATCH}[{have * nsg}] {SLAB_ALIGN};")
        lw.coop_scratch_words = have = words
        lw.prologue.append(f"local ulong {SCRATCH}[{have * nsg}] {SLAB_ALIGN};")
    return f"((local char*)({SCRATCH} + {quot('tl_lid', lw.fn.subgroup_size)} * {have}))"


def prologue(lw, line: str) -> None:
    """A line at the start of the kernel (declarations at kernel scope), once."""
    if line not in lw.prologue:
        lw.prologue.append(line)


def intel_attribute(lw) -> None:
    a = f"__attribute__((intel_reqd_sub_group_size({lw.fn.subgroup_size})))"
    if a not in lw.kernel_attributes:
        lw.kernel_attributes.append(a)


def _name(inst) -> str:
    from tlinterp.lang.v04.names import construct

    return construct(inst)


def lower_broadcast(lw, w, inst: ir.SubgroupBroadcast) -> None:
    subgroup_size(lw, inst)
    t = inst.type
    x = _bound(lw, w, lw.operand(inst.value, t), t)
    idx = lw.operand(inst.index, ScalarType.i32)
    r = f"v_{inst.result.name}"
    w.line(f"{ctype(t)} {r};")
    w.open("")
    ex = Exchange(lw, w, inst, t, x)
    w.line(f"{r} = {ex.get(idx)};")
    ex.close(w)
    w.close()
    lw.env[inst.result.name] = _scalar(r, t)


# the device builtins the "intel" strategy uses where they give the reference's result
_BUILTIN_KIND = {"reduce": "reduce", "inclusive_scan": "scan_inclusive",
                 "exclusive_scan": "scan_exclusive"}
_BUILTIN_TYPES = (ScalarType.i32, ScalarType.i64, ScalarType.index)


def lower_subgroup_op(lw, w, inst: ir.SubgroupOp) -> None:
    Sg = subgroup_size(lw, inst)
    t = inst.type
    kind, op = inst.op.rsplit("_", 1)
    x = lw.operand(inst.operand, t)
    r = f"v_{inst.result.name}"
    T = ctype(t)
    if strategy(lw) == "intel" and t in _BUILTIN_TYPES:
        intel_attribute(lw)
        lw.define(w, inst.result, t, f"sub_group_{_BUILTIN_KIND[kind]}_{op}({x})")
        return
    x = _bound(lw, w, x, t)
    w.line(f"{T} {r};")
    w.open("")
    ex = Exchange(lw, w, inst, t, x)
    acc, val, i = lw.fresh("acc"), lw.fresh("lane"), lw.fresh("i")
    me = f"(uint){rem(LX, Sg)}"
    combined = S.binary(op, acc, val, t)
    if kind == "exclusive_scan":
        ty = "i64" if t == ScalarType.index else t.value
        ident = lowp.identity(op, ty)
        w.line(f"{T} {acc} = {literal(ident.item(), t.is_float, t)};")
        w.open(f"for (uint {i} = 0; {i} < {Sg}u; ++{i})")
        w.line(f"const {T} {val} = {ex.get(i)};")
        w.line(f"if ({i} < {me}) {acc} = {i} == 0u ? {val} : {combined};")
    else:
        w.line(f"{T} {acc} = {ex.get('0')};")
        w.open(f"for (uint {i} = 1; {i} < {Sg}u; ++{i})")
        w.line(f"const {T} {val} = {ex.get(i)};")
        guard = f"if ({i} <= {me}) " if kind == "inclusive_scan" else ""
        w.line(f"{guard}{acc} = {combined};")
    w.close()
    w.line(f"{r} = {acc};")
    ex.close(w)
    w.close()
    lw.env[inst.result.name] = _scalar(r, t)


def _bound(lw, w, x: str, t: ScalarType) -> str:
    """x as a variable (its words are taken apart more than once)."""
    if x.isidentifier():
        return x
    n = lw.fresh("sgx")
    w.line(f"const {ctype(t)} {n} = {x};")
    return n


def _scalar(name: str, t: ScalarType) -> Scalar:
    return Scalar(name, t)


__all__ = ["STRATEGIES", "WITHOUT_DEVICE", "NoSubgroups", "Exchange", "lower_broadcast",
           "lower_subgroup_op", "prologue", "intel_attribute", "strategy"]
