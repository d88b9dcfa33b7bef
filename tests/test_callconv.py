"""The calling convention for `?` sizes, strides and offsets (docs/semantics.md "OpenCL calling
convention"): the parameter order our lowering declares, checked against a table written out
by hand (the order tinytc v0.3.1 emits for these types); the runtime passing values in that
order to hand-written foreign OpenCL C; and the corpus's dynamic kernels on our lowering."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tlgpu
import tlinterp
from fuzz.conform.cli import run_all
from fuzz.conform.corpus import default_corpus, load_corpus
from tlinterp.impl import ImplOptions, Job, resolve
from tlinterp.interp import run as interp_run
from tlinterp.lang.types import GroupType, MemrefType

# type of %A -> the suffixes of its kernel parameters after `v_A`, in order: per mode the
# size if `?`, then the stride if `?`; a group's `?` offset last
ORDER = [
    ("memref<f32>", [""]),
    ("memref<f32x4>", [""]),
    ("memref<f32x?>", ["", "_shape0"]),
    ("memref<f32x?x?>", ["", "_shape0", "_shape1", "_stride1"]),
    ("memref<f32x?x?x?>", ["", "_shape0", "_shape1", "_stride1", "_shape2", "_stride2"]),
    ("memref<f32x4x?x6>", ["", "_shape1", "_stride2"]),
    ("memref<f32x?x5x?>", ["", "_shape0", "_stride1", "_shape2", "_stride2"]),
    ("memref<f32x4x5x6,strided<1,?,?>>", ["", "_stride1", "_stride2"]),
    ("memref<f32x?x5x?,strided<?,?,?>>",
     ["", "_shape0", "_stride0", "_stride1", "_shape2", "_stride2"]),
    ("memref<f32x?x?,strided<1,8>>", ["", "_shape0", "_shape1"]),
    ("memref<f32x3x?x?,strided<1,3,?>>", ["", "_shape1", "_shape2", "_stride2"]),
    ("group<memref<f32x?x?x?>>",
     ["", "_shape0", "_shape1", "_stride1", "_shape2", "_stride2"]),
    ("group<memref<f32x?x4,strided<?,?>>>", ["", "_shape0", "_stride0", "_stride1"]),
    ("group<memref<f32x4x?>, offset: ?>", ["", "_shape1", "_offset"]),
    ("group<memref<f32x?x?>, offset: ?>", ["", "_shape0", "_shape1", "_stride1", "_offset"]),
    ("group<memref<f32x4x4>, offset: ?>", ["", "_offset"]),
    ("group<memref<f32x4x4>, offset: 3>", [""]),
]


def signature(src: str) -> list[str]:
    """The kernel's parameter declarations, from the lowering's output."""
    code = tlgpu.lower(tlinterp.check(tlinterp.parse(src)))
    params = re.search(r"void \w+\((.*?)\)\n\{", code, re.S).group(1)
    return [p.strip() for p in params.split(",")]


def names(decls: list[str]) -> list[str]:
    return [d.split()[-1] for d in decls]


@pytest.mark.parametrize("typ,suffixes", ORDER, ids=[t for t, _ in ORDER])
def test_dynamic_values_are_interleaved_per_mode(typ, suffixes):
    """Between two scalars, so that each parameter's position in the whole list counts."""
    decls = signature(f"func @k(%s: f32, %A: {typ}, %t: i32) {{\n  %g = group_id\n}}\n")
    assert names(decls) == ["v_s", *(f"v_A{s}" for s in suffixes), "v_t"]
    assert decls[0] == "float v_s" and decls[-1] == "int v_t"
    scalar = "long" if typ.startswith("memref") else "global long*"
    for d in decls[2:-1]:  # one scalar per `?` of a memref, one array per `?` of a group
        assert d.startswith("long " if d.endswith("_offset") else scalar + " "), d


def test_several_memrefs_and_scalars_keep_argument_order():
    decls = signature(
        "func @k(%A: memref<f32x?x?x?>, %B: memref<f32x4x5x6,strided<1,?,?>>, %s: f32,\n"
        "        %C: memref<f32x?x5x?,strided<?,?,?>>, %D: memref<f32>, %E: memref<f32x?>) {\n"
        "  %g = group_id\n}\n")
    assert names(decls) == [
        "v_A", "v_A_shape0", "v_A_shape1", "v_A_stride1", "v_A_shape2", "v_A_stride2",
        "v_B", "v_B_stride1", "v_B_stride2", "v_s",
        "v_C", "v_C_shape0", "v_C_stride0", "v_C_stride1", "v_C_shape2", "v_C_stride2",
        "v_D", "v_E", "v_E_shape0"]


# A foreign kernel written by hand in the interleaved order: out[:,:,g] = A[:,:,g] + s * G[g].
# One work-item per work-group walks the mode-0 x mode-1 slice with the sizes and strides it
# was passed; the group's pointer array is declared `global ulong*` (the same bytes) so that
# the code also builds where OpenCL C 1.2 forbids pointers to pointers.
FOREIGN_TL = """\
func @k(%A: memref<i64x?x?x?>, %s: i64, %G: group<memref<i64x?x?,strided<?,?>>, offset: ?>,
        %out: memref<i64x?x?x?>) {
  %g = group_id
  %a = subview %A[:,:,%g] : memref<i64x?x?x?>
  %b = load %G[%g] : group<memref<i64x?x?,strided<?,?>>, offset: ?>
  %o = subview %out[:,:,%g] : memref<i64x?x?x?>
  axpby.n 1, %a, 0, %o : i64, memref<i64x?x?,strided<1,?>>, i64, memref<i64x?x?,strided<1,?>>
  axpby.n %s, %b, 1, %o : i64, memref<i64x?x?,strided<?,?>>, i64, memref<i64x?x?,strided<1,?>>
}
"""
FOREIGN_CL = """\
kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void k(global long* A, long A_shape0, long A_shape1, long A_stride1, long A_shape2,
       long A_stride2, long s, global ulong* G, global long* G_shape0, global long* G_stride0,
       global long* G_shape1, global long* G_stride1, long G_offset, global long* out,
       long out_shape0, long out_shape1, long out_stride1, long out_shape2, long out_stride2)
{
    long g = get_global_id(2);
    global long* b = (global long*)G[g] + G_offset;
    for (long j = 0; j < out_shape1; ++j)
        for (long i = 0; i < out_shape0; ++i)
            out[i + j * out_stride1 + g * out_stride2] = A[i + j * A_stride1 + g * A_stride2]
                + s * b[i * G_stride0[g] + j * G_stride1[g]];
}
"""


def foreign_args() -> dict[str, np.ndarray]:
    """Sizes and strides all different (and different per group member), so that any two
    values passed in each other's place change the result."""
    rng = np.random.default_rng(7)
    return {
        "A": rng.integers(-50, 50, (2, 3, 4)), "A.strides": np.array([1, 5, 17]),
        "s": np.array(3, np.int64),
        "G": rng.integers(-50, 50, (4, 2, 3)), "G.offset": np.array(2),
        "G.strides": np.array([[3, 7], [2, 9], [4, 11], [6, 13]]),
        "out": np.zeros((2, 3, 4), np.int64), "out.strides": np.array([1, 2, 6]),
    }


@pytest.mark.opencl
def test_foreign_opencl_c_gets_its_arguments_in_the_interleaved_order(tmp_path):
    cl = tmp_path / "k.cl"
    cl.write_text(FOREIGN_CL)
    args = foreign_args()
    program = tlinterp.check(tlinterp.parse(FOREIGN_TL, "k.tl"))
    job = Job(FOREIGN_TL, args, filename="k.tl", program=program)
    got = resolve(f"opencl-c:sh -c 'cat {cl}' sh {{tl}}", ImplOptions(device="pocl")).run(job)
    assert got.status == "ok", got.message
    want = interp_run(program, args)["out"]
    assert np.array_equal(want, args["A"] + 3 * args["G"].transpose(1, 2, 0))  # the kernel's job
    assert np.array_equal(got.outputs["out"], want)


def _dynamic(case) -> bool:
    """Whether a case's function has an argument with a `?` size, stride or offset."""
    try:
        program = tlinterp.check(tlinterp.parse(case.source(), lang=case.lang))
    except tlinterp.TLError:
        return False
    for fn in program.functions:
        for a in fn.args:
            t = a.type.memref if isinstance(a.type, GroupType) else a.type
            if isinstance(t, MemrefType) and not t.is_static \
                    or isinstance(a.type, GroupType) and a.type.offset is None:
                return True
    return False


@pytest.mark.opencl
def test_dynamic_corpus_kernels_pass_on_our_lowering():
    cases = [c for c in load_corpus(default_corpus())
             if c.kind == "valid" and c.lang == "v0.3" and _dynamic(c)]  # lowering: v0.3
    # among them kernels whose order differs from sizes-then-strides (a ?x?x? memref)
    assert any("x?x?x?>" in c.source() for c in cases)
    verdicts = run_all(resolve("opencl", ImplOptions(device="pocl")), cases)
    failures = [f"{v.case.id}: {v.detail}" for v in verdicts if v.status != "pass"]
    assert not failures, "\n".join(failures)


def test_vendor_reproducers_list_the_arguments_in_the_same_order():
    """fuzz.triage.reproducer writes the arguments a stand-alone host program passes."""
    from fuzz.triage.reproducer import describe_args
    from tlinterp.io.args import bind

    program = tlinterp.check(tlinterp.parse(FOREIGN_TL, "k.tl"))
    fn = program.functions[0]
    spec, _ = describe_args(fn, bind(fn, foreign_args()), 0)
    shown = [a.get("name", a.get("value")) for a in spec if a["kind"] != "pointers"]
    assert shown == ["A", 2, 3, 5, 4, 17, 3, "G", "G_shape0", "G_stride0", "G_shape1",
                     "G_stride1", 2, "out", 2, 3, 2, 4, 6]
