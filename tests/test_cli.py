"""`tlrun` end to end: the spec's sample kernel and the matrix-chain kernel through .npz files,
--check / --emit ir, argument errors, exit statuses, and no tracebacks."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from kernels import SAMPLE

from tlinterp.cli import tlrun as cli

CHAIN = """; Q(:,:,e) += K P(:,:,e) A_e
func @chain(%K: memref<f64x56x56>, %P: memref<f64x56x9x?>, %A: group<memref<f64x9x9>>,
            %Q: memref<f64x56x9x?>) {
  %e = group_id
  %p = subview %P[:, :, %e] : memref<f64x56x9x?>
  %q = subview %Q[:, :, %e] : memref<f64x56x9x?>
  %a = load %A[%e] : group<memref<f64x9x9>>
  %t = alloca -> memref<f64x56x9>
  gemm.n.n 1.0, %K, %p, 0.0, %t
    : f64, memref<f64x56x56>, memref<f64x56x9>, f64, memref<f64x56x9>
  gemm.n.n 1.0, %t, %a, 1.0, %q
    : f64, memref<f64x56x9>, memref<f64x9x9>, f64, memref<f64x56x9>
}
"""


@pytest.fixture
def files(tmp_path):
    def write(name, text):
        p = tmp_path / name
        p.write_text(text)
        return str(p)
    return write


def _sample_args(seed: int, n: int, alpha: float) -> dict[str, np.ndarray]:
    """Random arguments for SAMPLE with `n` groups."""
    rng = np.random.default_rng(seed)
    return {"alpha": np.float32(alpha), "A": rng.standard_normal((n, 16, 8), dtype=np.float32),
            "B": rng.standard_normal((8, 8), dtype=np.float32),
            "C": rng.standard_normal((8, 16), dtype=np.float32),
            "D": rng.standard_normal((16, 16, n), dtype=np.float32)}


def test_sample_kernel_end_to_end(files, tmp_path, capsys):
    n = 7
    args = _sample_args(seed=0, n=n, alpha=0.75)
    np.savez(tmp_path / "args.npz", **args)
    out = tmp_path / "out.npz"
    rc = cli.main([files("sample.tl", SAMPLE), "--args", str(tmp_path / "args.npz"),
                   "--out", str(out)])
    assert rc == 0
    res = np.load(out)
    want = args["D"].astype(np.float64).copy()
    for e in range(n):
        want[:, :, e] += 0.75 * (args["A"][e].astype(np.float64) @ args["B"].T.astype(np.float64)
                                 @ args["C"].astype(np.float64))
    np.testing.assert_allclose(res["D"], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(res["A"], args["A"])
    err = capsys.readouterr().err
    assert "fused_kernel" in err and "7 work-group" in err and "1792 / 1792" in err


def test_matrix_chain_end_to_end_with_groups_flag(files, tmp_path):
    rng = np.random.default_rng(1)
    E = 5
    K = rng.standard_normal((56, 56))
    P = rng.standard_normal((56, 9, E))
    A = rng.standard_normal((E, 9, 9))
    Q = rng.standard_normal((56, 9, E))
    np.savez(tmp_path / "a.npz", K=K, P=P, A=A, Q=Q)
    rc = cli.main([files("chain.tl", CHAIN), "--args", str(tmp_path / "a.npz"), "--groups",
                   str(E), "--out", str(tmp_path / "o.npz"), "--func", "chain"])
    assert rc == 0
    got = np.load(tmp_path / "o.npz")["Q"]
    want = Q + np.stack([K @ P[:, :, e] @ A[e] for e in range(E)], axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    rc = cli.main([files("chain.tl", CHAIN), "--args", str(tmp_path / "a.npz"), "--no-check",
                   "--out", str(tmp_path / "o2.npz")])
    assert rc == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o2.npz")["Q"], got)


def test_check_and_emit_ir(files, capsys):
    path = files("sample.tl", SAMPLE)
    assert cli.main([path, "--check"]) == 0
    assert cli.main([path, "--emit", "ir"]) == 0
    out = capsys.readouterr().out
    assert "func @fused_kernel" in out and "gemm.n.t" in out
    # --check with --emit checks, then prints (it printed nothing)
    assert cli.main([path, "--check", "--emit", "ir"]) == 0
    assert "func @fused_kernel" in capsys.readouterr().out
    assert cli.main([path, "--check", "--emit", "opencl"]) == 0
    assert "kernel " in capsys.readouterr().out


def test_rejected_source_exits_2_with_a_diagnostic(files, capsys):
    bad = files("bad.tl", "func @f() {\n  %x = arith.add %y, 1 : i32\n}\n")
    assert cli.main([bad, "--check"]) == 2
    err = capsys.readouterr().err
    assert "bad.tl:2." in err and "Traceback" not in err
    assert cli.main([files("none.tl", "") + ".missing"]) == 2


def test_argument_problems_exit_2(files, tmp_path, capsys):
    path = files("sample.tl", SAMPLE)
    assert cli.main([path]) == 2
    assert "--args" in capsys.readouterr().err
    np.savez(tmp_path / "wrong.npz", alpha=np.float32(1), B=np.zeros((8, 8), np.float32))
    assert cli.main([path, "--args", str(tmp_path / "wrong.npz")]) == 2
    assert "missing argument" in capsys.readouterr().err
    (tmp_path / "junk.npz").write_text("not a zip")
    assert cli.main([path, "--args", str(tmp_path / "junk.npz")]) == 2
    two = files("two.tl", "func @a() {\n}\nfunc @b() {\n}\n")
    assert cli.main([two]) == 2
    assert "--func" in capsys.readouterr().err
    assert cli.main([two, "--func", "b"]) == 0
    assert cli.main([two, "--func", "nope"]) == 2


def test_undefined_behaviour_exits_1(files, capsys):
    src = "func @f() {\n  %x = arith.div 1, 0 : i32\n}\n"
    assert cli.main([files("ub.tl", src)]) == 1
    err = capsys.readouterr().err
    assert "ub.tl:2.3-27: division by zero: work-group 0\n" in err
    assert cli.main([files("ub.tl", src), "--no-check"]) == 0


def test_step_budget_exits_1(files, capsys):
    src = "func @f() {\n  for %i = 0, 1000000 {\n    barrier\n  }\n}\n"
    assert cli.main([files("loop.tl", src), "--max-steps", "100"]) == 1
    assert "step budget" in capsys.readouterr().err


def test_interrupt_and_internal_error_statuses(files, monkeypatch, capsys):
    path = files("e.tl", "func @f() {\n}\n")

    def interrupted(ns):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_run", interrupted)
    assert cli.main([path]) == 130

    def broken(ns):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "_run", broken)
    assert cli.main([path]) == 3
    assert "internal error" in capsys.readouterr().err


def test_console_script_runs_without_traceback(files):
    p = subprocess.run([sys.executable, "-m", "tlinterp.cli", files("x.tl", "func @f( {")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "x.tl:1." in p.stderr


def test_emit_opencl_and_lowering_overrides(files, capsys):
    path = files("sample.tl", SAMPLE)
    assert cli.main([path, "--emit", "opencl"]) == 0
    code = capsys.readouterr().out
    assert "kernel" in code and "fused_kernel" in code
    assert cli.main([path, "--emit", "opencl", "--lowering", "no_such_key=1"]) == 2
    assert cli.main([path, "--emit", "opencl", "--lowering", "novalue"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


@pytest.mark.opencl
def test_opencl_backend_agrees_with_the_interpreter(files, tmp_path):
    args = _sample_args(seed=5, n=3, alpha=1.25)
    np.savez(tmp_path / "a.npz", **args)
    path = files("sample.tl", SAMPLE)
    assert cli.main([path, "--args", str(tmp_path / "a.npz"),
                     "--out", str(tmp_path / "i.npz")]) == 0
    assert cli.main([path, "--args", str(tmp_path / "a.npz"), "--out", str(tmp_path / "g.npz"),
                     "--backend", "opencl"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "g.npz")["D"], np.load(tmp_path / "i.npz")["D"],
                               rtol=1e-4, atol=1e-4)
