"""The v0.4 calling convention and launch (docs/semantics.md "OpenCL calling convention"):
the parameter order of `tlgpu.lowering.callconv` under "v0.4" against a table written out by
hand; group members moved to aligned addresses and back; and another compiler's v0.4 code run
end to end on pocl. That compiler is a stand-in written here: a script that lowers the v0.3
form of a v0.4 file with our lowering, declaring and reading its parameters in the v0.4
convention and taking its grid from the v0.4 launch (LoweringConfig.convention = "v0.4"). A
stand-in with two parameters swapped must fail: the tests observe the order."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from test_callconv import _dynamic

import tlinterp
from fuzz.conform.cli import main as tlconform
from fuzz.conform.cli import run_all
from fuzz.conform.corpus import _opt_groups, default_corpus, load_corpus
from fuzz.triage.reproduce import AGREES, reproduce, request
from tlgpu.lowering.callconv import argument_params, launch_sizes
from tlgpu.runtime.launch import _moved, _restored, aligned_layout
from tlinterp.cli import tlrun as cli
from tlinterp.impl import ImplOptions, Job, resolve
from tlinterp.impl.base import tlrun_command
from tlinterp.lang.diagnostics import ArgumentError

# type of %a -> the suffixes of its kernel parameters, in order (the spec's own examples
# first: sizes left to right, then strides left to right, then a group's size and offset)
ORDER = [
    ("memref<f32x5x10>", [""]),
    ("memref<f64x5x?,strided<1,5>>", ["", "_shape1"]),
    ("memref<i64x5x?x6,strided<1,7,?>>", ["", "_shape1", "_stride2"]),
    ("memref<i64x5x?x6>", ["", "_shape1", "_stride2"]),
    ("memref<f32x?x?x?>", ["", "_shape0", "_shape1", "_shape2", "_stride1", "_stride2"]),
    ("memref<f32x?x5x?,strided<?,?,?>>",
     ["", "_shape0", "_shape2", "_stride0", "_stride1", "_stride2"]),
    ("group<memref<i16x5x6>x42>", [""]),
    ("group<memref<i32x5x?x6>x?>", ["", "_shape1", "_stride2", "_size"]),
    ("group<memref<f32x?>x?, offset: ?>", ["", "_shape0", "_size", "_offset"]),
    ("group<memref<f32x42>x42, offset: ?>", ["", "_offset"]),
    ("group<memref<f32x?x?>x3>", ["", "_shape0", "_shape1", "_stride1"]),
]


def _type(text: str):
    fn = tlinterp.check(tlinterp.parse(f"func @k(%a: {text}) {{}}\n", lang="v0.4")).functions[0]
    return fn.args[0].type


@pytest.mark.parametrize("typ,suffixes", ORDER, ids=[t for t, _ in ORDER])
def test_v04_order_is_sizes_then_strides_then_group_size_and_offset(typ, suffixes):
    params = argument_params("a", _type(typ), "v0.4")
    assert [p.suffix for p in params] == suffixes


def test_launch_sizes_per_convention_and_v03_order_unchanged():
    t = _type("group<memref<f32x?x?>x?, offset: ?>")
    assert [p.suffix for p in argument_params("a", t)] == \
        ["", "_shape0", "_shape1", "_stride1", "_offset"]  # interleaved, no group size
    assert launch_sizes("v0.4", (16, 2), (3, 2, 4)) == ((48, 4, 4), (16, 2, 1))
    assert launch_sizes("v0.3", (16, 2), (5, 1, 1)) == ((16, 2, 5), (16, 2, 1))
    with pytest.raises(ArgumentError, match="v0.4 calling convention"):
        launch_sizes("v0.3", (16, 2), (3, 2, 1))


@pytest.mark.parametrize("starts", [[0, 12, 24], [8, 20, 32], [0, 0, 16], [40], []])
def test_group_members_move_to_aligned_starts_and_back(starts):
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 256, 64, dtype=np.uint8)
    layout = aligned_layout(starts, 128)
    moved = _moved(raw, layout)
    shift = dict(layout)
    for s in starts:  # each member starts aligned and holds the same bytes after it
        assert (s + shift[s]) % 128 == 0
        end = min([t for t in starts if t > s] + [raw.size])
        assert np.array_equal(moved[s + shift[s]:end + shift[s]], raw[s:end])
    back = np.zeros_like(raw)
    _restored(moved, back, layout)
    assert np.array_equal(back, raw)  # red zones and gaps included


def test_groups_text_in_rerun_lines_and_corpus_meta():
    assert "--groups 3,2,2" in tlrun_command("interp", None, "k.tl", "a.npz", None, (3, 2, 2))
    assert _opt_groups([3, 2, 2]) and _opt_groups(4) and not _opt_groups([3, 2])


KERNEL = """func @k(%A: memref<f32x?x?x?, strided<1,?,?>>, %B: memref<f32x?x?x?>,
        %g: group<memref<f32x?x?>x?, offset: ?>, %s: f32) {
    %x = group_id.x : index
    %y = group_id.y : index
    %z = group_id.z : index
    %nz = num_groups.z : index
    %m = load %g[%x] : memref<f32x?x?>
    %w = load %m[%y, %z] : f32
    %v = load %A[%x, %y, %z] : f32
    %t = mul %v, %s : f32
    %u = add %t, %w : f32
    %k = cast %nz : f32
    %r = add %u, %k : f32
    store %r, %B[%x, %y, %z]
}
"""
GRID = (3, 2, 2)

# the stand-in compiler; argv[2:4], when given, are two parameters it swaps in its signature
STAND_IN = '''import sys
import tlgpu
import tlinterp
from tlinterp.front.pipeline import lowerable

text = open(sys.argv[1], encoding="utf-8").read()
program = lowerable(tlinterp.check(tlinterp.parse(text, sys.argv[1], lang="v0.4")))
code = tlgpu.lower(program, None, tlgpu.LoweringConfig(convention="v0.4"))
if len(sys.argv) > 2:
    a, b = sys.argv[2:4]
    code = (code.replace(f"long {a},", "@@,").replace(f"long {b},", f"long {a},")
            .replace("@@,", f"long {b},"))
sys.stdout.write(code)
'''


def kernel_args() -> dict[str, np.ndarray]:
    """Sizes and strides all different, members of different shapes, a group offset."""
    rng = np.random.default_rng(3)
    return {"A": rng.standard_normal((3, 2, 2)).astype(np.float32),
            "A.strides": np.array([1, 4, 9]),
            "B": np.zeros((3, 2, 2), np.float32),
            "g.0": rng.standard_normal((2, 2)).astype(np.float32),
            "g.1": rng.standard_normal((3, 2)).astype(np.float32),
            "g.2": rng.standard_normal((2, 3)).astype(np.float32),
            "g.offset": np.array(1), "s": np.array(0.5, np.float32)}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "k.tl").write_text(KERNEL)
    np.savez(tmp_path / "k.npz", **kernel_args())
    (tmp_path / "standin.py").write_text(STAND_IN)
    return tmp_path


def stand_in(d, swap: str = "") -> str:
    return f"opencl-c:{sys.executable} {d / 'standin.py'} {{tl}} {swap}".rstrip()


def expected() -> dict[str, np.ndarray]:
    return tlinterp.run(tlinterp.check(tlinterp.parse(KERNEL)), kernel_args(), groups=GRID)


@pytest.mark.opencl
def test_tlrun_runs_v04_code_on_a_3d_grid(files, capsys):
    out = files / "out.npz"
    rc = cli.main([str(files / "k.tl"), "--args", str(files / "k.npz"), "--groups", "3,2,2",
                   "--impl", stand_in(files), "--device", "pocl", "--out", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    want = expected()
    assert want["B"].any()  # every group id and member takes part
    got = np.load(out)
    assert all(np.array_equal(got[k], want[k]) for k in want)


@pytest.mark.opencl
@pytest.mark.parametrize("swap", ["v_A_shape2 v_A_stride1", "v_g_size v_g_offset"])
def test_a_stand_in_with_two_parameters_swapped_differs(files, swap, capsys):
    out = files / "out.npz"
    rc = cli.main([str(files / "k.tl"), "--args", str(files / "k.npz"), "--groups", "3,2,2",
                   "--impl", stand_in(files, swap), "--device", "pocl", "--out", str(out),
                   "-q"])
    capsys.readouterr()
    assert rc != 0 or not np.array_equal(np.load(out)["B"], expected()["B"])


def corpus(d):
    """A corpus of one v0.4 case with a 3-D grid, its expected outputs from the reference."""
    case = d / "corpus" / "valid" / "v04" / "grid3d"
    case.parent.mkdir(parents=True)
    for kind in ("invalid", "undefined"):
        (d / "corpus" / kind).mkdir()
    (case.parent / "grid3d.tl").write_text(KERNEL)
    np.savez(case.parent / "grid3d.args.npz", **kernel_args())
    np.savez(case.parent / "grid3d.expected.npz", **expected())
    (case.parent / "grid3d.json").write_text(json.dumps(
        {"func": None, "groups": list(GRID), "lang": "v0.4",
         "tags": {"instruction": ["group_id"], "type": ["f32"], "layout": ["strided"]}}))
    return d / "corpus"


@pytest.mark.opencl
def test_tlconform_runs_v04_code_on_a_3d_grid(files, capsys):
    base = ["--corpus", str(corpus(files)), "--lang", "v0.4", "--device", "pocl", "--impl"]
    assert tlconform(base + [stand_in(files)]) == 0, capsys.readouterr().out
    assert "1 passed" in capsys.readouterr().out
    assert tlconform(base + [stand_in(files, "v_A_shape2 v_A_stride1")]) == 1
    text = capsys.readouterr().out
    assert "--groups 3,2,2" in text  # the rerun line keeps the grid


def test_corpus_meta_grid_is_a_tuple(tmp_path):
    (case,) = load_corpus(corpus(tmp_path))
    assert case.groups == GRID
    assert "--groups 3,2,2" in case.reproduce()


def test_tlfuzz_reproduce_takes_a_grid(tmp_path):
    (tmp_path / "k.tl").write_text(KERNEL)
    np.savez(tmp_path / "k.npz", **kernel_args())
    req = request([str(tmp_path / "k.tl"), "--args", str(tmp_path / "k.npz"), "--groups",
                   "3,2,2", "--impl", "interp"])
    assert req.groups == GRID
    assert reproduce(req).status == AGREES


@pytest.mark.opencl
@pytest.mark.parametrize("device", ["pocl", "intel"])
def test_our_opencl_lowering_runs_a_3d_grid_as_the_interpreter(files, tmp_path, device):
    """A grid with Y and Z > 1: our lowering launches it in the v0.4 convention (the grid
    itself: group_id.y/.z, num_groups.z) and matches the interpreter."""
    outs = {}
    for impl in ("interp", "opencl"):
        out = tmp_path / f"{impl}.npz"
        rc = cli.main([str(files / "k.tl"), "--args", str(files / "k.npz"), "--groups",
                       "3,2,2", "--impl", impl, "--device", device, "--out", str(out), "-q"])
        assert rc == 0
        with np.load(out) as d:
            outs[impl] = d["B"].copy()
    assert np.array_equal(outs["interp"], outs["opencl"])
    assert outs["opencl"].any()


# scalars and memrefs of v0.4's new types, copied bit for bit by hand-written OpenCL C: c32 as
# float2, f16 and bf16 as their 16 bits (declared ushort: pocl need not know half)
TYPES_TL = """func @k(%Z: memref<c32x2>, %z: c32, %H: memref<f16x2>, %h: f16,
        %F: memref<bf16x2>, %f: bf16) {
}
"""
TYPES_CL = """kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void k(global float2* Z, float2 z, global ushort* H, ushort h, global ushort* F, ushort f) {
    Z[1] = Z[0] + z;
    H[1] = h;
    F[1] = (ushort)(F[0] + f);
}
"""


@pytest.mark.opencl
def test_new_element_types_keep_their_bytes(tmp_path):
    import ml_dtypes

    cl = tmp_path / "k.cl"
    cl.write_text(TYPES_CL)
    bf = ml_dtypes.bfloat16
    args = {"Z": np.array([1 + 2j, 0], np.complex64), "z": np.array(3 - 1j, np.complex64),
            "H": np.array([0, 0], np.float16), "h": np.array(1.5, np.float16),
            "F": np.array([1, 0], bf).view(np.uint16), "f": np.array(2, bf).view(np.uint16)}
    job = Job(TYPES_TL, args, filename="k.tl", lang="v0.4")
    got = resolve(f"opencl-c:sh -c 'cat {cl}' sh {{tl}}", ImplOptions(device="pocl")).run(job)
    assert got.status == "ok", got.message
    out = got.outputs
    assert out["Z"][1] == (4 + 1j) and out["H"][1] == np.float16(1.5)
    bits = np.asarray(out["F"]).view(np.uint16)
    assert bits[1] == np.array([1], bf).view(np.uint16)[0] + np.array([2], bf).view(np.uint16)[0]


# the work-group size from the function's attribute (no reqd_work_group_size, no flag), and
# every group member's base pointer aligned to the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN
ATTR_TL = """func @k(%G: group<memref<f32x3>x4>, %O: memref<i64x5>)
        attributes{work_group_size=[4, 1]} {
}
"""
ATTR_CL = """kernel void k(global ulong* G, global long* O) {
    size_t i = get_local_id(0);
    O[i] = (long)(G[i] % ALIGN);
    if (i == 0) O[4] = (long)get_local_size(0);
}
"""


@pytest.mark.opencl
def test_work_group_size_attribute_and_aligned_group_members(tmp_path):
    from tlgpu.runtime.devices import handle

    align = handle("pocl").device.mem_base_addr_align // 8
    cl = tmp_path / "k.cl"
    cl.write_text(ATTR_CL.replace("ALIGN", str(align)))
    args = {"G": np.ones((4, 3), np.float32), "O": np.full(5, -1, np.int64)}
    job = Job(ATTR_TL, args, filename="k.tl", lang="v0.4")
    got = resolve(f"opencl-c:sh -c 'cat {cl}' sh {{tl}}", ImplOptions(device="pocl")).run(job)
    assert got.status == "ok", got.message
    assert got.outputs["O"].tolist() == [0, 0, 0, 0, 4]
    assert np.array_equal(got.outputs["G"], args["G"])  # moved apart and back again


@pytest.mark.opencl
def test_a_bool_argument_is_refused_in_words(tmp_path, capsys):
    (tmp_path / "b.tl").write_text("func @k(%b: bool, %A: memref<f32x2>) {\n}\n")
    (tmp_path / "b.cl").write_text("kernel __attribute__((reqd_work_group_size(1, 1, 1))) "
                                   "void k(uchar b, global float* A) { A[0] = b; }\n")
    np.savez(tmp_path / "b.npz", b=np.array(True), A=np.zeros(2, np.float32))
    rc = cli.main([str(tmp_path / "b.tl"), "--args", str(tmp_path / "b.npz"), "--impl",
                   f"opencl-c:sh -c 'cat {tmp_path / 'b.cl'}' sh {{tl}}", "--device", "pocl"])
    err = capsys.readouterr().err
    assert rc == 2 and "takes no bool parameter" in err and "Traceback" not in err


@pytest.mark.opencl
def test_dynamic_corpus_kernels_pass_on_our_lowering_in_the_v04_convention():
    """Our lowering and our runtime under `--lowering convention=v0.4` (the knob the stand-in
    uses) agree on every v0.3 corpus kernel with a `?` size, stride or group offset."""
    cases = [c for c in load_corpus(default_corpus())
             if c.kind == "valid" and c.lang == "v0.3" and _dynamic(c)]
    assert any("x?x?x?>" in c.source() for c in cases)  # where the two orders differ
    impl = resolve("opencl", ImplOptions(device="pocl", lowering=("convention=v0.4",)))
    failures = [f"{v.case.id}: {v.detail}" for v in run_all(impl, cases) if v.status != "pass"]
    assert not failures, "\n".join(failures)


def test_tlrun_emit_opencl_follows_the_programs_language(tmp_path, capsys):
    """`tlrun --emit opencl` of a v0.4 program declares the v0.4 order (all sizes, then all
    strides, then the group's size and offset), what `opencl-c:` passes a v0.4 program's
    kernel; the same program in v0.3 text keeps the interleaved v0.3 order."""
    import re

    def params(text: str, name: str) -> list[str]:
        (tmp_path / name).write_text(text)
        assert cli.main([str(tmp_path / name), "--emit", "opencl"]) == 0
        code = capsys.readouterr().out
        return re.findall(r"\b(v_A_\w+)\b", code[code.index("void k("):code.index("{")])

    v04 = params(KERNEL, "k4.tl")
    assert v04 == ["v_A_shape0", "v_A_shape1", "v_A_shape2", "v_A_stride1", "v_A_stride2"]
    v03_text = "func @k(%A: memref<f32x?x?x?,strided<1,?,?>>) {}\n"
    assert params(v03_text, "k3.tl") == ["v_A_shape0", "v_A_shape1", "v_A_stride1",
                                         "v_A_shape2", "v_A_stride2"]
