"""The stand-alone reports under corpus/findings/tinytc-*/ (`tlfuzz report`) stay true without
tinytc: each `repro.sh` is what the generator writes now, it parses, and run against a
stand-in compiler (a script in tmp_path that records how it was called) it passes the exact
command (quoting, flags, stdin) and reads the outcome right: for a run-time finding the
stand-in emits our own lowering's code for the kernel (OpenCL C, or SPIR-V through clang-15
and llvm-spirv-15), host.py runs it on Intel's CPU runtime and exits 0, and with the bug
planted in that code (finding.json's `plant`) it exits 1."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.triage import vendor_report as vr
from tlinterp.impl.base import SpecError
from tlinterp.impl.command import check_template

FINDINGS = Path(__file__).resolve().parents[1] / "corpus" / "findings"
REPORTS = sorted(p for p in FINDINGS.glob("tinytc-*/*") if p.is_dir())
IDS = [f"{p.parent.name}/{p.name}" for p in REPORTS]
GENERATED = ("repro.sh", "host.py", "host.json")


def meta(report: Path) -> vr.Meta:
    return vr.load_meta(str(report))


def _run(cmd: list[str], cwd: Path, timeout: float = 120, **env: str):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **env})


def test_every_report_is_there():
    assert len(REPORTS) == 59
    kinds = {meta(r).kind for r in REPORTS}
    assert kinds == set(vr.KINDS)


@pytest.mark.parametrize("report", REPORTS, ids=IDS)
def test_the_committed_report_is_what_the_generator_writes(report: Path, tmp_path: Path):
    out = tmp_path / "out"
    assert vr.main([str(report), "--out", str(out)]) == 0
    for name in GENERATED:
        if (out / name).exists() or (report / name).exists():
            assert (report / name).read_text() == (out / name).read_text(), name
    assert os.access(report / "repro.sh", os.X_OK)
    assert (report / "README.md").read_text() == (out / "README.md").read_text()
    r = _run(["bash", "-n", str(report / "repro.sh")], tmp_path)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("report", REPORTS, ids=IDS)
def test_every_command_line_in_the_readme_parses_and_quotes_right(report: Path):
    text = (report / "README.md").read_text()
    blocks = re.findall(r"```\n(.*?)```", text, flags=re.S)
    for block in blocks:
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            command = line.split("  #")[0].strip()
            if not re.match(r"(\./repro\.sh|tinytc|tlrun|tlfuzz|tlconform|python3?|timeout)\b",
                            command):
                continue
            words = shlex.split(command)  # a ValueError is an unbalanced quote
            for flag, value in zip(words, words[1:]):
                if flag in ("--impl", "--backend") and ":" in value:
                    check_template(value.partition(":")[2], ("tl", "out"), ("tl",))
    assert vr.BEGIN in text and "## Reproduce" in text and "./repro.sh" in text


def test_a_template_quoted_as_one_word_is_refused_in_words():
    with pytest.raises(SpecError, match="one quoted word"):
        check_template("'tinytc {tl}'", ("tl", "out"), ("tl",))


# --- repro.sh against a stand-in compiler ----------------------------------------------------

def standin(tmp_path: Path, body: str) -> Path:
    """A compiler that records its argv and standard input, then runs `body` (sh)."""
    script = tmp_path / "bin" / "tinytc"
    script.parent.mkdir(exist_ok=True)
    log = tmp_path / "argv"
    script.write_text(f"""#!/bin/sh
[ -e {log}.first ] || printf '%s\\n' "$@" > {log}.first
printf '%s\\n' "$@" > {log}
if [ -t 0 ]; then :; else cat > {tmp_path / 'stdin'}; fi
{body}
""")
    script.chmod(0o755)
    if not (script.parent / "tinytc-opt").exists():
        (script.parent / "tinytc-opt").symlink_to(script)
    return script


def called_right(report: Path, tmp_path: Path) -> None:
    m = meta(report)
    want = vr.compiler_argv(m, "tinytc")[1:]
    called = (tmp_path / "argv").read_text().splitlines()
    if m.kind == "roundtrip":  # the last call is the checker, on what the pass printed
        assert called[:2] == ["-p", "check-ir"] and called[2].endswith("/printed.tl")
        called = (tmp_path / "argv.first").read_text().splitlines()
    assert called == want
    if m.stdin:
        assert (tmp_path / "stdin").read_text() == (report / "kernel.tl").read_text()


COMPILE_TIME = [r for r in REPORTS
                if meta(r).kind in ("reject", "accept", "crash", "hang", "roundtrip")]

# per class: (stand-in behaving as the bug, as the fix)
BEHAVIOUR = {
    "reject": ("echo 'kernel.tl:3.5: error: unexpected token' >&2; exit 1", "exit 0"),
    "accept": ("exit 0", "echo 'kernel.tl:2.3-9: error: invalid' >&2; exit 1"),
    "crash": (None, "exit 0"),  # None: finding.json's message, with status 1
    "hang": ("exec sleep 60", "exit 0"),
    # the pass prints the kernel; its checker refuses that (the bug) or reads it (fixed)
    "roundtrip": ("[ \"$2\" = check-ir ] && [ \"${3##*/}\" = printed.tl ] && "
                  "{ echo 'printed.tl:3.5: Unknown token' >&2; exit 1; }; cat kernel.tl",
                  "cat kernel.tl"),
}


@pytest.mark.parametrize("report", COMPILE_TIME, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_repro_sh_reads_a_compile_time_outcome(report: Path, tmp_path: Path):
    m = meta(report)
    bug, fixed = BEHAVIOUR[m.kind]
    if bug is None:
        sample = re.sub(r"[\\^$()|?*+]", "", m.message.split("|")[0])
        bug = f"echo {shlex.quote(sample)} >&2; exit 1"
    limit = {"REPRO_TIMEOUT": "1"} if m.kind == "hang" else {}
    for body, status in ((bug, 1), (fixed, 0)):
        compiler = standin(tmp_path, body)
        r = _run([str(report / "repro.sh"), str(compiler)], tmp_path, timeout=60, **limit)
        assert r.returncode == status, (body, r.stdout, r.stderr)
        assert "expected:" in r.stdout and "actual:" in r.stdout
        called_right(report, tmp_path)
    if m.kind == "accept":  # a crash, or an internal error without a place, is no fix
        for body in ("kill -SEGV $$", "echo 'Error (5): Internal compiler error' >&2; exit 1"):
            r = _run([str(report / "repro.sh"), str(standin(tmp_path, body))], tmp_path,
                     timeout=60)
            assert r.returncode == 1, (body, r.stdout)


def test_repro_sh_without_the_compiler_tests_nothing(tmp_path: Path):
    report = COMPILE_TIME[0]
    r = _run([str(report / "repro.sh"), str(tmp_path / "no-such-tinytc")], tmp_path)
    assert r.returncode == 2 and "no compiler" in r.stderr


# --- run-time findings: host.py on our own lowering's code ----------------------------------

HOSTED = [r for r in REPORTS if (r / "host.py").exists()]
STANDINS = Path(__file__).resolve().parent / "data" / "vendor-standins"  # see its README


@pytest.fixture(scope="module")
def intel_device() -> str:
    from tlgpu.runtime import icd
    from tlgpu.runtime.devices import _all_devices

    icd.register()  # OCL_ICD_VENDORS, inherited by host.py
    if not any("intel" in p.name.lower() for p, _ in _all_devices()):
        if os.environ.get("CI"):
            pytest.fail("CI installs Intel's CPU OpenCL runtime")
        pytest.skip("no Intel OpenCL runtime (pip install .[intel])")
    return "Intel"


def _spirv(cl_path: Path) -> bytes:
    clang, translator = shutil.which("clang-15"), shutil.which("llvm-spirv-15")
    if clang is None or translator is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs clang-15 and llvm-spirv-15")
        pytest.skip("needs clang-15 and llvm-spirv-15")
    bc, spv = cl_path.with_suffix(".bc"), cl_path.with_suffix(".spv")
    # -O0: no `freeze` from clang's division/remainder pairing (llvm-spirv 15 cannot take it)
    subprocess.run([clang, "-cl-std=CL2.0", "-O0", "-target", "spir64", "-Xclang",
                    "-finclude-default-header", "-emit-llvm", "-c", "-o", str(bc),
                    str(cl_path)], check=True, timeout=120, capture_output=True)
    subprocess.run([translator, str(bc), "-o", str(spv)], check=True, timeout=120,
                   capture_output=True)
    return spv.read_bytes()


def our_code(report: Path, tmp_path: Path, source: str) -> bytes:
    m = meta(report)
    if m.format == "opencl-c":
        return source.encode()
    cl = tmp_path / "ours.cl"
    cl.write_text(source)
    return _spirv(cl)


def our_lowering(report: Path) -> str:
    import tlgpu
    import tlinterp
    from tlgpu.lowering.config import LoweringConfig
    from tlinterp.lang.diagnostics import TLError

    m = meta(report)
    lang = "v0.4" if m.version == "0.4.0" else "v0.3"
    program = tlinterp.check(tlinterp.parse((report / "kernel.tl").read_text(),
                                            filename="kernel.tl", lang=lang))
    try:
        return tlgpu.lower(program, config=LoweringConfig.from_overrides(
            [f"convention={vr.CONVENTION[m.version]}"]))
    except TLError:  # what our lowering does not take (v0.4 types, i1 arguments): by hand
        return (STANDINS / report.parent.name / f"{report.name}.cl").read_text()


def planted(report: Path, source: str) -> str:
    m = meta(report)
    if m.kind == "build" and not m.plant:  # a call of a function no device has
        out, n = re.subn(r"(\bvoid \w+\([^)]*\)\s*\{\n)", r"\1    tl_planted_missing();\n",
                         source, count=1)
        assert n == 1, source
        return "void tl_planted_missing(void);\n" + out
    assert m.plant, f"{report.name}: finding.json needs a `plant` [regex, replacement]"
    pattern, replacement = m.plant
    out, n = re.subn(pattern, replacement, source)
    assert n, f"{report.name}: the plant {pattern!r} matches nothing in our lowering's code"
    return out


@pytest.mark.opencl
@pytest.mark.parametrize("report", HOSTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_host_py_passes_our_code_and_catches_the_planted_bug(report: Path, tmp_path: Path,
                                                            intel_device: str):
    source = our_lowering(report)
    m = meta(report)
    for code, status in ((our_code(report, tmp_path, source), 0),
                         (our_code(report, tmp_path, planted(report, source)), 1)):
        out = tmp_path / ("code" + str(status))
        out.write_bytes(code)
        compiler = standin(tmp_path, f"cat {out}")
        r = _run([str(report / "repro.sh"), str(compiler), "--device", intel_device],
                 tmp_path, timeout=120, REPRO_TIMEOUT="20")
        assert r.returncode == status, (r.stdout, r.stderr)
        called_right(report, tmp_path)
        if m.kind == "run":
            assert ("MISMATCH" in r.stdout or "no answer" in r.stdout) if status \
                else "OK:" in r.stdout, r.stdout
        assert "Traceback" not in r.stderr, r.stderr


def test_every_stand_in_belongs_to_a_report_our_lowering_refuses():
    import tlgpu
    import tlinterp
    from tlinterp.lang.diagnostics import TLError

    standins = sorted(STANDINS.glob("*/*.cl"))
    assert len(standins) == 1  # an `i1` argument; the lowering now takes bf16, c32, coopmatrix
    for path in standins:
        report = FINDINGS / path.parent.name / path.stem
        assert (report / "host.py").exists(), report
        lang = "v0.4" if "0.4" in path.parent.name else "v0.3"
        program = tlinterp.check(tlinterp.parse((report / "kernel.tl").read_text(),
                                                filename="kernel.tl", lang=lang))
        with pytest.raises(TLError):
            tlgpu.lower(program)


def test_report_of_a_saved_finding(tmp_path: Path):
    """A saved tlfuzz finding of tinytc 0.4.0 (NAME.tl/.npz/.txt) becomes a report whose
    compiler command keeps the campaign's flags. Its line is unsigned (no key of this user's):
    `tlfuzz report` only reads the command, never runs it, so it needs no --impl."""
    src = FINDINGS / "tinytc-0.4.0" / "runtime-beta-zero-reads-output"
    base = tmp_path / "mismatch-0123456789ab"
    shutil.copyfile(src / "kernel.tl", str(base) + ".tl")
    shutil.copyfile(src / "args.npz", str(base) + ".npz")
    Path(str(base) + ".txt").write_text(
        f"tlfuzz reproduce {base}.tl --args {base}.npz --impl 'spirv:tinytc -d tgl {{tl}}' "
        "--reject-status 1 --lang v0.4\n\nB[0]: expected 1.0, got nan\n")
    out = tmp_path / "report"
    r = _run([sys.executable, "-m", "fuzz.campaign.cli", "report", str(base) + ".tl",
              "--out", str(out)], Path.cwd(), XDG_CONFIG_HOME=str(tmp_path / "config"))
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "config").exists()  # nothing signed, no key made
    m = vr.load_meta(str(out))
    assert (m.version, m.kind, m.flags) == ("0.4.0", "run", ["-d", "tgl"])
    assert "tinytc -d tgl > kernel.spv" not in (out / "README.md").read_text()
    assert "tinytc -d tgl kernel.tl > kernel.spv" in (out / "README.md").read_text()
    for name in ("repro.sh", "host.py", "host.json", "host_args.npz", "host_expected.npz"):
        assert (out / name).is_file(), name


def test_report_refuses_a_finding_it_cannot_use(tmp_path: Path):
    r = _run([sys.executable, "-m", "fuzz.campaign.cli", "report", str(tmp_path / "nothing"),
              "--out", str(tmp_path / "o")], Path.cwd())
    assert r.returncode == 2 and "tlfuzz report:" in r.stderr and "Traceback" not in r.stderr


def test_the_index_lists_every_report_by_severity():
    text = (FINDINGS / "README.md").read_text()
    assert text == vr.index_text(str(FINDINGS))
    for report in REPORTS:
        assert f"]({report.parent.name}/{report.name}/)" in text
    order = [vr.KINDS[k] for k in vr.SEVERITY]
    seen = [line.split("|")[1].strip() for line in text.splitlines()
            if line.startswith("| ") and "not yet reported" in line]
    assert seen == sorted(seen, key=order.index)
    assert "Disputed or spec-silent" in text and "accepts-float-constant-for-integer" in \
        text.split("Disputed or spec-silent")[1]


@pytest.mark.parametrize("readme", sorted(FINDINGS.rglob("README.md")),
                         ids=lambda p: str(p.relative_to(FINDINGS)))
def test_every_impl_option_in_the_findings_is_quoted_once(readme: Path):
    """An --impl/--backend anywhere in the reports (code blocks and inline) is one shell word
    whose command splits into a program and its arguments (no "opencl-c:'tinytc {tl}'")."""
    text = readme.read_text()
    for m in re.finditer(r"--(?:impl|backend) ('[^']*'|\"[^\"]*\"|[^\s`]+)", text):
        (value,) = shlex.split(m.group(1))
        kind, _, command = value.partition(":")
        if kind in ("opencl-c", "spirv", "ir"):
            check_template(command, ("tl", "out"), ("tl",))
