"""Hostile inputs to tlrun and the tlinterp API (issue 14): every case ends with its documented
exit status and a clear message, never a traceback; files survive; time and memory stay
bounded. One parametrised case per instance, grouped by class: crashes, hangs and memory,
data loss, messages, and the new user's path."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tlinterp
from tlinterp.cli import tlrun as cli
from tlinterp.io import memlimit

ROOT = Path(__file__).resolve().parents[1]
SECONDS = 30  # generous for a loaded 2-core CI machine; each case needs well under a second

MEMREF = "func @m(%A: memref<f32x?>) {\n  %g = group_id\n  store 1.0, %A[%g] : memref<f32x?>\n}\n"
MEMREF2 = ("func @m(%A: memref<f32x?x?>) {\n  %g = group_id\n"
           "  store 1.0, %A[0, %g] : memref<f32x?x?>\n}\n")
STATIC = "func @s(%A: memref<f32x4>) {\n  store 1.0, %A[0] : memref<f32x4>\n}\n"
GROUP = ("func @g(%X: group<memref<f32x4>, offset: ?>) {\n  %g = group_id\n"
         "  %a = load %X[%g] : group<memref<f32x4>, offset: ?>\n"
         "  store 1.0, %a[0] : memref<f32x4>\n}\n")


def _nested(levels: int) -> str:
    return "\n".join(["func @f(%x: memref<f32x4>) {", "  %c = cmp.lt 0, 1 : index"]
                     + ["if %c {"] * levels + ["store 1.0, %x[0] : memref<f32x4>"]
                     + ["}"] * levels + ["}"])


def tlrun(argv: list[str], capsys) -> tuple[int, str]:
    """Run tlrun in-process: (exit status, stdout + stderr), asserting the promises every
    case shares: a documented status, no traceback, bounded time."""
    start = time.perf_counter()
    rc = cli.main([str(a) for a in argv])
    seconds = time.perf_counter() - start
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc in (0, 1, 2, 130), text[-2000:]
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert seconds < SECONDS, f"took {seconds:.1f} s"
    return rc, text


@pytest.fixture
def kernel(tmp_path):
    def write(text: str, name: str = "k.tl") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p
    return write


# --- crashes: deep nesting --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["run", "emit-ir", "check"])
def test_deepest_nesting_the_parser_accepts(mode, kernel, tmp_path, capsys):
    k = kernel(_nested(999))
    np.savez(tmp_path / "x.npz", x=np.zeros(4, np.float32))
    extra = {"run": ["--args", tmp_path / "x.npz", "--out", tmp_path / "o.npz"],
             "emit-ir": ["--emit", "ir"], "check": ["--check"]}[mode]
    rc, text = tlrun([k, *extra], capsys)
    assert rc == 0
    if mode == "run":
        assert np.load(tmp_path / "o.npz")["x"][0] == 1
    if mode == "emit-ir":
        assert tlinterp.parse(text.split("@f:")[0]) == tlinterp.parse(_nested(999))


def test_deep_ir_equality_does_not_recurse():
    a, b = tlinterp.parse(_nested(999)), tlinterp.parse(_nested(999))
    c = tlinterp.parse(_nested(999).replace("store 1.0", "store 2.0"))
    assert a == b and a != c


# --- crashes and silent truncation: .npz values -------------------------------------------------

F4 = np.zeros(4, np.float32)
X = np.zeros((3, 4), np.float32)
NPZ_CASES = {
    # id: (kernel, entries, words the message must contain)
    "string-strides": (MEMREF, {"A": F4, "A.strides": np.array(["x"])}, "integers"),
    "nan-strides": (MEMREF, {"A": F4, "A.strides": np.array([np.nan])}, "integers"),
    "float-strides": (MEMREF, {"A": F4, "A.strides": np.array([1.5])}, "integers"),
    "2d-strides": (MEMREF2, {"A": X, "A.strides": np.array([[1, 3], [3, 1]])}, "1-d"),
    "int64-overflowing-strides": (MEMREF2, {"A": X, "A.strides": np.array([1, 2**64 - 1],
                                                                           np.uint64)}, "2^63"),
    "huge-strides": (MEMREF2, {"A": X, "A.strides": np.array([1, 2**62])}, "GiB"),
    "string-offset": (GROUP, {"X": X, "X.offset": np.array("a")}, "integers"),
    "nan-offset": (GROUP, {"X": X, "X.offset": np.array(np.nan)}, "integers"),
    "float-offset": (GROUP, {"X": X, "X.offset": np.array(2.5)}, "integers"),
    "vector-offset": (GROUP, {"X": X, "X.offset": np.array([1, 2])}, "0-d"),
    "array-and-members": (GROUP, {"X": X, "X.0": X[0], "X.offset": np.array(0)}, "both"),
    "member-gaps": (GROUP, {"X.0": X[0], "X.2": X[0], "X.5": X[0], "X.offset": np.array(0)},
                    "'X.1' is missing"),
    "member-typo": (GROUP, {"X": X, "X.typo": X[0], "X.offset": np.array(0)}, "'X.typo'"),
    "member-leading-zero": (GROUP, {"X.0": X[0], "X.01": X[0], "X.offset": np.array(0)},
                            "leading zeros"),
}


@pytest.mark.parametrize("case", NPZ_CASES, ids=list(NPZ_CASES))
def test_bad_npz_values_exit_2(case, kernel, tmp_path, capsys):
    src, entries, words = NPZ_CASES[case]
    np.savez(tmp_path / "a.npz", **entries)
    before = (tmp_path / "a.npz").read_bytes()
    rc, text = tlrun([kernel(src), "--args", tmp_path / "a.npz", "--out", tmp_path / "a.npz"],
                     capsys)
    assert rc == 2 and words in text, text
    assert (tmp_path / "a.npz").read_bytes() == before


@pytest.mark.parametrize("groups", ["1234567890123456789012345678901", "-1"])
def test_absurd_group_counts_exit_2(groups, kernel, tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    rc, text = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--groups", groups], capsys)
    assert rc == 2 and "work-groups" in text


@pytest.mark.parametrize("groups", [4.5, "4", True, np.float64(2)])
def test_api_group_counts_must_be_integers(groups):
    with pytest.raises(tlinterp.ArgumentError, match="groups"):
        tlinterp.run(MEMREF, {"A": F4}, groups=groups)


# --- hangs and unbounded memory ------------------------------------------------------------------


def test_dev_zero_as_source_is_refused_quickly(capsys):
    tracemalloc.start()
    try:
        rc, text = tlrun(["/dev/zero", "--check"], capsys)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 2 and "MiB" in text
    assert peak < 100 * 2**20


def test_many_diagnostics_are_linear_and_capped(kernel, capsys):
    sample = (ROOT / "examples" / "fused_kernel.tl").read_text()
    rc, text = tlrun([kernel(sample * 600), "--check"], capsys)
    assert rc == 2
    assert text.count("defined twice") == 100
    assert "499 more error(s) not shown" in text


def test_a_runaway_scalar_loop_stops_within_seconds_by_default(kernel, tmp_path, capsys):
    k = kernel("func @l(%y: memref<indexx1>) {\n  for %i = 0, 1000000000 : index {\n"
               "    %a = arith.add %i, 1 : index\n    %b = arith.mul %a, 3 : index\n"
               "    store %b, %y[0] : memref<indexx1>\n  }\n}\n")
    np.savez(tmp_path / "y.npz", y=np.zeros(1, np.int64))
    start = time.perf_counter()
    rc, text = tlrun([k, "--args", tmp_path / "y.npz"], capsys)
    assert rc == 1 and "step budget" in text
    assert time.perf_counter() - start < 20


def test_memory_guard_counts_shadow_state(kernel, monkeypatch, capsys):
    # 12.5M f64 = 100 MB of data; with checking state ~560 MB, over a 300 MB limit
    monkeypatch.setattr(memlimit, "_memory_limit", lambda: 300 * 2**20)
    k = kernel("func @al() {\n  %t = alloca -> memref<f64x12500000>\n}\n")
    rc, text = tlrun([k, "--groups", "1"], capsys)
    assert rc == 1 and "alloca" in text and "GiB" in text
    rc, _ = tlrun([k, "--groups", "1", "--no-check"], capsys)  # data alone fits
    assert rc == 0


def _bomb(path: Path, elements: int, key: str = "A") -> None:
    """An .npz whose member inflates to `elements` float32 zeros from a few hundred KB."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (elements,)})
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open(f"{key}.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            chunk = bytes(1 << 22)
            for _ in range(elements * 4 // len(chunk)):
                f.write(chunk)


BOMB_ELEMENTS = 24 * 2**20  # 96 MiB inflated


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    d = tmp_path_factory.mktemp("bombs")
    for key in "AZ":
        _bomb(d / f"{key}.npz", BOMB_ELEMENTS, key)
        assert (d / f"{key}.npz").stat().st_size < 2**20
    return d


@pytest.mark.parametrize("kind", ["wrong-shape", "unknown-key", "too-big-for-memory"])
def test_zip_bomb_is_refused_before_inflating(kind, bombs, kernel, monkeypatch, capsys):
    bomb = bombs / ("Z.npz" if kind == "unknown-key" else "A.npz")
    src = STATIC if kind == "wrong-shape" else MEMREF
    if kind == "too-big-for-memory":
        monkeypatch.setattr(memlimit, "_memory_limit", lambda: 64 * 2**20)
    tracemalloc.start()
    try:
        rc, text = tlrun([kernel(src), "--args", bomb], capsys)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 2
    assert {"wrong-shape": "mode 0 must be 4", "unknown-key": "'Z'",
            "too-big-for-memory": "GiB"}[kind] in text
    assert peak < 32 * 2**20  # the 96 MiB array was never inflated


# --- data loss ------------------------------------------------------------------------------------


def test_out_is_written_to_exactly_the_path_given(kernel, tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    (tmp_path / "keep.npz").write_bytes(b"unrelated")
    rc, _ = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--out", tmp_path / "keep"],
                  capsys)
    assert rc == 0
    assert (tmp_path / "keep.npz").read_bytes() == b"unrelated"
    assert np.load(tmp_path / "keep", allow_pickle=False)["A"][0] == 1


def test_out_directory_is_refused_before_running(kernel, tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    rc, text = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--out", tmp_path], capsys)
    assert rc == 2 and "directory" in text and "@m" not in text


def test_out_through_a_symlink_writes_its_target_and_keeps_the_link(kernel, tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    (tmp_path / "link.npz").symlink_to("target.npz")  # dangling: the target is created
    rc, _ = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--out", tmp_path / "link.npz"],
                  capsys)
    assert rc == 0 and (tmp_path / "link.npz").is_symlink()
    assert np.load(tmp_path / "target.npz")["A"][0] == 1


def test_out_to_a_fifo_or_dev_null_writes_in_place(kernel, tmp_path, capsys):
    """Renaming a temporary file over a FIFO or a device would replace the node itself."""
    import threading

    np.savez(tmp_path / "a.npz", A=F4)
    os.mkfifo(tmp_path / "fifo")
    got = {}
    reader = threading.Thread(target=lambda: got.update(
        data=(tmp_path / "fifo").read_bytes()))
    reader.start()
    rc, _ = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--out", tmp_path / "fifo"],
                  capsys)
    reader.join(SECONDS)
    assert rc == 0 and (tmp_path / "fifo").is_fifo()
    assert np.load(io.BytesIO(got["data"]))["A"][0] == 1
    rc, _ = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--out", "/dev/null"], capsys)
    assert rc == 0 and Path("/dev/null").is_char_device()


def test_out_naming_the_kernel_source_or_nothing_is_refused(kernel, tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    k = kernel(MEMREF)
    (tmp_path / "alias.tl").symlink_to(k)
    for out, words in ((k, "kernel source"), (tmp_path / "alias.tl", "kernel source"),
                       ("", "empty")):
        rc, text = tlrun([k, "--args", tmp_path / "a.npz", "--out", out], capsys)
        assert rc == 2 and words in text
    assert k.read_text() == MEMREF


def test_out_equal_to_args_is_replaced_whole(kernel, tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    rc, _ = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--out", tmp_path / "a.npz"],
                  capsys)
    assert rc == 0 and np.load(tmp_path / "a.npz")["A"].tolist() == [1, 0, 0, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "k.tl"]


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt])
def test_a_failed_save_leaves_the_previous_file(failure, kernel, tmp_path, monkeypatch, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    before = (tmp_path / "a.npz").read_bytes()

    def broken(f, **arrays):
        f.write(b"PK partial")
        raise failure
    monkeypatch.setattr("tlinterp.io.outfile.np.savez", broken)
    rc, text = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--out", tmp_path / "a.npz"],
                     capsys)
    assert rc == (2 if isinstance(failure, OSError) else 130), text
    assert (tmp_path / "a.npz").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "k.tl"]  # no temp file


def test_a_failed_run_never_touches_out(kernel, tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    (tmp_path / "o.npz").write_bytes(b"old")
    rc, _ = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--groups", "9", "--out",
                   tmp_path / "o.npz"], capsys)
    assert rc == 1 and (tmp_path / "o.npz").read_bytes() == b"old"


# --- messages -------------------------------------------------------------------------------------


def _zip(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


ARGS_FILES = {
    "giant-shape-header": (
        lambda p: _zip(p, {"A.npy": _npy(F4).replace(b"(4,)", b"(99999999999,)")}),
        "malformed"),
    "truncated-data": (lambda p: _zip(p, {"A.npy": _npy(F4)[:-3]}), "malformed"),
    "non-npy-member": (lambda p: _zip(p, {"A.txt": b"hello"}), "not an .npy array"),
    "bare-member": (lambda p: _zip(p, {"A": b"hello"}), "'A' is not an .npy array"),
    "garbage-npy": (lambda p: _zip(p, {"A.npy": b"\x93NUMPY garbage"}), "not a valid .npy"),
    # numpy's literal_eval names the AST node it met (<ast.Name object at 0x...>)
    "name-in-header": (lambda p: _zip(p, {"A.npy": _npy(F4).replace(b"(4,)", b"(n,)")}),
                       "header holds a name or expression"),
    "pickled-objects": (lambda p: np.savez(p, A=np.array([{}, 1], dtype=object)),
                        "Python objects"),
    "not-a-zip": (lambda p: p.write_bytes(b"\x00" * 100), "not an .npz file"),
    "dev-zero": (None, "not a regular file"),
    "directory": (lambda p: p.mkdir(), "directory"),
    "missing": (lambda p: None, "no such file"),
}


@pytest.mark.parametrize("case", ARGS_FILES, ids=list(ARGS_FILES))
def test_bad_argument_files_get_clear_messages(case, kernel, tmp_path, capsys):
    make, words = ARGS_FILES[case]
    path = Path("/dev/zero") if make is None else tmp_path / "a.npz"
    if make is not None:
        make(path)
    rc, text = tlrun([kernel(MEMREF), "--args", path], capsys)
    assert rc == 2 and words in text, text
    assert "allow_pickle" not in text and "out of memory" not in text and "<ast." not in text


def test_long_source_lines_are_clipped(kernel, capsys):
    k = kernel("func @f() {\n  %x = arith.add 1.5, 2 : index ; " + "A" * 2_000_000 + "\n}\n")
    rc, text = tlrun([k, "--check"], capsys)
    assert rc == 2 and "2.18-20" in text and "..." in text
    assert len(text) < 1000


@pytest.mark.parametrize("call, exc, words", [
    (lambda: tlinterp.run(MEMREF, None), TypeError, "args"),
    (lambda: tlinterp.run(MEMREF, {"A": F4}, func=123), TypeError, "func"),
    (lambda: tlinterp.run(123, {}), TypeError, "program"),
    (lambda: tlinterp.check("text"), TypeError, "check(program)"),
    (lambda: tlinterp.parse(b"text"), TypeError, "str"),
    (lambda: tlinterp.run(MEMREF, {"A": F4}, groups="4"), tlinterp.ArgumentError, "groups"),
    (lambda: tlinterp.run(MEMREF, {"A": F4}, max_steps="9"), TypeError, "max_steps"),
    (lambda: tlinterp.run(MEMREF, {"A": F4}, max_steps=-1), tlinterp.ArgumentError, "max_steps"),
], ids=["run-args-None", "func-123", "run-int", "check-text", "parse-bytes", "groups-str",
        "max-steps-str", "max-steps-negative"])
def test_api_misuse_names_the_parameter(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


OOB = """func @o(%A: memref<f32x4>) {
  %s = subview %A[2:4] : memref<f32x4>
  foreach %i = 0, 4 {
    %v = load %s[%i] : memref<f32x4>
  }
}"""


def test_out_of_bounds_reports_name_element_iteration_and_view(kernel, tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    rc, text = tlrun([kernel(OOB), "--args", tmp_path / "a.npz"], capsys)
    assert rc == 1
    assert "work-group 0, iteration 2: reads element (2) of %s, made by the subview at 2.3" \
        in text and "outside %A" in text
    heads = [line for line in text.splitlines() if line.startswith(str(tmp_path))]
    assert len(heads) == len(set(heads)) == 2


def test_repeated_reports_are_counted():
    from tlinterp.interp.ub import Collector, raise_reports

    col = Collector("k.tl", "")
    for _ in range(3):
        col.add("out-of-bounds", None, (0,), None, "the same thing")
    with pytest.raises(tlinterp.UndefinedBehaviour) as info:
        raise_reports(col)
    assert str(info.value).count("the same thing") == 1 and "(3 times)" in str(info.value)


# --- the new user's path --------------------------------------------------------------------------


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("tlrun ")
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "examples:" in out and "exit status:" in out and "130" in out
    assert "unroll_k" in out or "docs/" in out  # the --lowering keys (or where they are)


def test_python_dash_m_tlinterp():
    r = subprocess.run([sys.executable, "-m", "tlinterp", str(ROOT / "examples" / "bad.tl"),
                        "--check"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "incompatible tensor shapes" in r.stderr  # what the README shows for bad.tl


@pytest.mark.parametrize("package", ["tlinterp", "tlgpu", "fuzz", "corpus"])
def test_packages_are_typed(package):
    assert (ROOT / package / "py.typed").is_file()


def test_piped_output_is_not_wrapped(kernel, tmp_path, capsys):
    name = "a_kernel_with_a_long_name_" + "x" * 60
    np.savez(tmp_path / "a.npz", **{"an_argument_with_a_long_name_" + "y" * 50: F4})
    k = kernel(MEMREF.replace("@m", "@" + name).replace("%A", "%an_argument_with_a_long_name_"
                                                        + "y" * 50))
    rc, text = tlrun([k, "--args", tmp_path / "a.npz"], capsys)
    assert rc == 0
    assert any(line.startswith(f"@{name}: 1 work-group") for line in text.splitlines())


def test_damaged_archives_are_argument_errors(tmp_path):
    """Seeded byte mutations and truncations of stored and deflated .npz files: reading them
    either works or is an ArgumentError (found: zlib errors, unknown zip versions, numpy's
    header tokenizer)."""
    import random

    from tlinterp.io.npzcheck import load_npz

    fn = tlinterp.parse(GROUP).functions[0]
    files = []
    for save in (np.savez, np.savez_compressed):
        buf = io.BytesIO()
        save(buf, X=np.arange(12, dtype=np.float32).reshape(3, 4), **{"X.offset": np.array(0)})
        files.append(buf.getvalue())
    rng = random.Random(14)
    path = tmp_path / "d.npz"
    for _ in range(600):
        data = bytearray(rng.choice(files))
        if rng.random() < 0.15:
            data = data[:rng.randrange(1, len(data))]
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
        try:
            load_npz(str(path), fn, factor=4)
        except tlinterp.ArgumentError:
            pass


@pytest.mark.parametrize("text", ["", "; only a comment\n"])
def test_a_file_without_functions_says_so(text, tmp_path, capsys):
    path = tmp_path / "empty.tl"
    path.write_text(text)
    code, err = tlrun([str(path)], capsys)
    assert code == 2 and "defines no function" in err and "--func" not in err


@pytest.mark.parametrize("options, words", [
    (["--lowering", "work_group_size=16"], "--lowering needs --impl opencl"),
    (["--work-group-size", "0x0"], "expects W0xW1"),
    (["--backend", "interp", "--work-group-size", "3x"], "expects W0xW1"),
])
def test_options_the_backend_would_ignore_or_cannot_read_exit_2(options, words, kernel,
                                                                tmp_path, capsys):
    np.savez(tmp_path / "a.npz", A=F4)
    rc, text = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", *options], capsys)
    assert rc == 2 and words in text


def answers_in_float64(source, args, func=None, groups=None):
    return {k: np.asarray(v, np.float64) for k, v in tlinterp.run(source, args, func).items()}


def answers_an_extra_output(source, args, func=None, groups=None):
    return {**tlinterp.run(source, args, func), "extra": np.zeros(3)}


def answers_without_an_output(source, args, func=None, groups=None):
    return {}


def answers_right(source, args, func=None, groups=None):
    return tlinterp.run(source, args, func)


@pytest.mark.parametrize("plugin, words", [
    ("answers_in_float64", "its output 'A' is float64[4], the argument is float32[4]"),
    ("answers_an_extra_output", "its output 'extra' is not a memref or group argument"),
    ("answers_without_an_output", "its output 'A' is missing"),
    ("answers_right", None),
])
def test_another_backends_outputs_must_follow_the_convention(plugin, words, kernel, tmp_path,
                                                             capsys):
    """--out and the summary never pass on what the reference could not have written."""
    np.savez(tmp_path / "a.npz", A=F4)
    rc, text = tlrun([kernel(MEMREF), "--args", tmp_path / "a.npz", "--out", tmp_path / "o.npz",
                      "--backend", f"python:{__name__}:{plugin}"], capsys)
    if words is None:
        assert rc == 0 and np.load(tmp_path / "o.npz")["A"].dtype == np.float32
    else:
        assert rc == 1 and words in text and not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("storage", ["V2", "uint16"])
def test_bf16_arguments_given_as_bit_patterns_are_counted_in_the_summary(storage, tmp_path,
                                                                         capsys):
    """np.savez writes an ml_dtypes bfloat16 array as 2-byte voids (V2); bf16 arguments may
    also be uint16 patterns. The summary compares them with the bf16 outputs (it once
    stopped with "internal error: TypeError: Cannot compare structured or void to non-void
    arrays")."""
    import ml_dtypes

    kernel = tmp_path / "k.tl"
    kernel.write_text("""func @k(%A: memref<f32 x 2>, %B: memref<bf16 x 2>) {
    %c0 = constant 0 : index
    %x = load %A[%c0] : f32
    %y = cast %x : bf16
    store %y, %B[%c0]
}
""")
    b = np.array([0.0, np.nan], ml_dtypes.bfloat16).view(np.uint16)
    np.savez(tmp_path / "a.npz", A=np.array([1.5, 2.0], np.float32),
             B=b.view("V2") if storage == "V2" else b)
    status = cli.main([str(kernel), "--args", str(tmp_path / "a.npz"), "--lang", "v0.4",
                       "--out", str(tmp_path / "o.npz")])
    out = capsys.readouterr()
    assert status == 0, out.err
    assert "1 / 2" in out.err  # B[0] changed; the NaN in B[1] is unchanged (the summary: stderr)
