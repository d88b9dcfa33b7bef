"""Hostile inputs, by class (issue 36): each test fails without the fix it guards.

- device choice: several platforms matching one --device name (two pocl releases)
- foreign text: an implementation's output with rich markup or terminal escape codes
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

import tlinterp
from tlgpu.runtime import devices as D
from tlgpu.runtime import workarounds as W

# --- device choice ---------------------------------------------------------------------------


def _pair(platform: str, version: str, device: str, platform_version: str = ""):
    p = SimpleNamespace(name=platform, version=platform_version or f"OpenCL 3.0 {version}")
    return p, SimpleNamespace(name=device, driver_version=version, platform=p)


POCL30 = _pair("Portable Computing Language", "3.0-rc2", "pthread-Intel(R) Xeon(R)")
POCL31 = _pair("Portable Computing Language", "3.1+debian", "pthread-skylake-avx512")
POCL5 = _pair("Portable Computing Language", "5.0", "cpu-x86-64")
GRIND = _pair("Oclgrind", "Oclgrind 21.10", "Oclgrind Simulator")
FAKES = [POCL30, POCL31, POCL5, GRIND]


def _pick(spec: str, devs, wheel):
    return D.rank(D._matches(spec, devs), wheel)[0][1]


def test_pocl_choice_never_depends_on_the_loaders_order():
    """The wheel's pocl (3.0 here) first, else the newest; the same for every order."""
    for seed in range(20):
        devs = FAKES[:]
        random.Random(seed).shuffle(devs)
        assert _pick("pocl", devs, (3, 0)) is POCL30[1]
        assert _pick("pocl", devs, None) is POCL5[1]  # no wheel: the newest release
        assert _pick("pocl", devs, (9, 9)) is POCL5[1]  # the wheel's pocl is not listed
        assert _pick("pocl@3.1", devs, (3, 0)) is POCL31[1]
        assert _pick("portable:pthread", devs, (3, 0)) is POCL30[1]


def test_device_table_names_a_string_for_every_device():
    rows = D.inventory(FAKES, (3, 0), kind=lambda d: "CPU")
    by_device = {r.device: r for r in rows}
    assert rows[0].device == POCL30[1].name  # best first
    assert by_device[POCL30[1].name].default_for == ("pocl",)
    assert by_device[GRIND[1].name].default_for == ("oclgrind",)
    for r in rows:  # each string picks exactly its row's device
        assert _pick(r.select, FAKES, (3, 0)).name == r.device, r
    assert by_device[POCL31[1].name].select == "pocl@3.1+debian"
    assert D.inventory([], None) == []


def test_list_devices_without_any_platform(monkeypatch, capsys):
    monkeypatch.setattr(D, "_all_devices", lambda: (_ for _ in ()).throw(
        tlinterp.BackendError("no OpenCL platform found")))
    from tlinterp.cli import main

    assert main(["--list-devices"]) == 0
    assert "no OpenCL platform found" in capsys.readouterr().out


def test_workarounds_match_the_release_tested_exactly():
    pocl = next(w for w in W.KNOWN if w.name == "pocl-barrier-in-branch-or-loop-nest")
    for version, hit in (("OpenCL 3.0 PoCL 3.0-rc2  Linux", True), ("PoCL 3.1+debian", True),
                         ("OpenCL 3.0 PoCL 3.01", False), ("PoCL 3.10", False),
                         ("OpenCL 3.0 PoCL 5.0", False)):
        dev = SimpleNamespace(platform=SimpleNamespace(name="Portable Computing Language",
                                                       version=version))
        assert pocl.applies_to(dev) == hit, version


# --- foreign text in reports -----------------------------------------------------------------

HOSTILE = "bad [/] and [/usr/include/foo] \x1b[2J\x1b[31mred\x07 \x9b6n"


def hostile_plugin(source, args, func=None, groups=None):
    raise tlinterp.SourceError(HOSTILE)


def test_foreign_text_is_shown_not_interpreted():
    from tlinterp.io.foreigntext import for_rich, shown

    assert shown(HOSTILE) == ("bad [/] and [/usr/include/foo] \\x1b[2J\\x1b[31mred\\x07 "
                              "\\x9b6n")
    assert shown("tab\tand\nnewline") == "tab\tand\nnewline"
    from rich.console import Console
    from rich.text import Text

    assert Text.from_markup(for_rich(HOSTILE)).plain == shown(HOSTILE)
    Console(file=open("/dev/null", "w")).print(for_rich(HOSTILE))


def test_tlconform_reports_an_implementations_markup_and_escapes(tmp_path, capsys):
    from fuzz.conform.cli import main

    log, junit = tmp_path / "log.txt", tmp_path / "j.xml"
    status = main(["--impl", f"python:{__name__}:hostile_plugin", "--filter",
                   "valid/control", "--quiet", "--log", str(log), "--junit-xml", str(junit)])
    assert status == 1
    out = capsys.readouterr()
    assert "[/usr/include/foo]" in out.out and "\x1b[2J" not in out.out + out.err
    assert "\\x1b[2J" in out.out
    assert "\x1b" not in log.read_text() and "\\x1b[2J" in log.read_text()
    import xml.etree.ElementTree as ET

    ET.parse(junit)  # a control character would make it unreadable


# --- nesting as deep as the parser accepts ---------------------------------------------------


def _nest(levels: int, kind: str) -> str:
    body = "store 1, %a[0] : memref<i32x4>\n"
    for i in range(levels):
        body = f"if 1 {{\n{body}}}\n" if kind == "if" else f"for %i{i} = 0, 1 {{\n{body}}}\n"
    return "func @k(%a: memref<i32x4>) {\n" + body + "}\n"


@pytest.mark.parametrize("kind", ["if", "for"])
def test_lowering_takes_deep_nests_or_says_why_not(kind):
    import tlgpu
    from tlinterp.lang.v03.parser import MAX_NESTING

    deep = tlinterp.check(tlinterp.parse(_nest(245, kind), "deep.tl"))
    assert tlgpu.lower(deep).count("store") >= 0  # lowered, no RecursionError
    deepest = tlinterp.check(tlinterp.parse(_nest(MAX_NESTING - 1, kind), "deepest.tl"))
    with pytest.raises(tlinterp.BackendError, match="OpenCL C compilers accept at most 256") as e:
        tlgpu.lower(deepest)
    assert e.value.diagnostics[0].span.line == 253  # where the nest gets too deep


@pytest.mark.opencl
def test_a_deep_nest_runs_in_the_isolated_child():
    """run_isolated pickles the program: a 245-deep one needs a deep stack on both sides."""
    import numpy as np

    from tlgpu.runtime.isolated import run_isolated

    deep = tlinterp.check(tlinterp.parse(_nest(245, "if"), "deep.tl"))
    got = run_isolated(deep, {"a": np.zeros(4, np.int32)}, device="pocl", timeout=120)
    assert got.outputs["a"].tolist() == [1, 0, 0, 0]


# --- the public API's parameters -------------------------------------------------------------

_K = "func @k(%a: memref<f32x4>) {\n  %g = group_id\n}\n"


def _api_misuses():
    import numpy as np

    import tlgpu

    p = tlinterp.check(tlinterp.parse(_K, "k.tl"))
    a = {"a": np.zeros(4, np.float32)}
    return [
        ("run(device=", lambda: tlgpu.run(p, a, device=12345)),
        ("run(config=", lambda: tlgpu.run(p, a, config={"tile_m": 4})),
        ("run(func=", lambda: tlgpu.run(p, a, func=3)),
        ("run(groups=", lambda: tlgpu.run(p, a, groups="2")),
        ("lower(config=", lambda: tlgpu.lower(p, config={"tile_m": 4})),
        ("lower(func=", lambda: tlgpu.lower(p, func=3)),
        ("compile(device=", lambda: tlgpu.compile(p, device=5)),
        ("tune(device=", lambda: tlgpu.tune(p, a, device=5)),
        ("tune(use_cache=", lambda: tlgpu.tune(p, a, use_cache="no")),
        ("check(warnings=", lambda: tlinterp.check(p, warnings="x")),
        ("parse(filename=", lambda: tlinterp.parse(_K, filename=5)),
        ("run(check=", lambda: tlinterp.run(p, a, check="no")),
    ]


def test_api_misuse_is_a_type_error_naming_the_parameter():
    for name, call in _api_misuses():
        with pytest.raises(TypeError) as e:
            call()
        assert str(e.value).startswith(name), (name, str(e.value))


@pytest.mark.parametrize("extra", [
    {"a.strides": [1, 2**63 - 1]}, {"a.strides": [1, 2**64 - 1]}, {"a.strides": [1, 2**70]},
    {"a.offset": 2**63 - 1}, {"a.offset": 2**70}, {"a.strides": [1, 2**62], "a.offset": 2**62},
])
def test_maximal_strides_and_offsets_are_argument_errors(extra):
    """Regression guard (issue 36 saw OverflowError here; main already gave ArgumentError)."""
    import numpy as np

    p = tlinterp.check(tlinterp.parse(
        "func @k(%a: memref<f32x?x?,strided<1,?>>) {\n  %g = group_id\n}\n", "k.tl"))
    args = {"a": np.zeros((4, 4), np.float32),
            **{k: np.array(v, dtype=object).astype(np.float64 if max(np.ravel(v)) >= 2**64
                                                   else np.uint64) for k, v in extra.items()}}
    with pytest.raises(tlinterp.ArgumentError):
        tlinterp.run(p, args)


# --- messages about the source text ----------------------------------------------------------


def _syntax_message(text: str) -> str:
    with pytest.raises(tlinterp.SourceError) as e:
        tlinterp.parse(text, "k.tl")
    return e.value.diagnostics[0].message


def test_a_byte_order_mark_is_named():
    assert _syntax_message("\ufeff" + _K).startswith("byte order mark (U+FEFF)")


def test_a_non_ascii_identifier_is_named():
    text = _K.replace("%g", "%\u00e9")
    msg = _syntax_message(text)
    assert msg == "identifiers are ASCII letters, digits and '_': found 'é' (U+00E9)"


def test_a_huge_bad_token_is_not_echoed_whole():
    msg = _syntax_message("func @k() {\n  %x = " + "z" * 100_000 + "\n}\n")
    assert len(msg) < 200 and "(100000 characters)" in msg


def test_a_byte_that_is_not_utf8_is_placed_by_line_and_column(tmp_path, capsys):
    from tlinterp.cli import main

    path = tmp_path / "k.tl"
    path.write_bytes(_K.replace("group_id", "group_id \xe9t\xe9".encode("latin-1").decode(
        "latin-1")).encode("latin-1"))
    assert main(["--check", str(path)]) == 2
    err = capsys.readouterr().err
    assert (f"{path}:2.17-17: the source is not UTF-8 text (byte 0xe9: invalid continuation "
            "byte)") in err


# --- out of memory ---------------------------------------------------------------------------

_ALLOCA = """func @k(%a: memref<i8x4>) {
  %t = alloca -> memref<i8x1000>
  store 1, %t[0] : memref<i8x1000>
}
"""


@pytest.mark.parametrize("groups", [1, 3])
def test_out_of_memory_names_the_allocation(monkeypatch, groups):
    import numpy as np

    from tlinterp.interp import execute

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(execute, "AllocaBuffer", no_memory)
    with pytest.raises(tlinterp.ExecutionError) as e:
        tlinterp.run(_ALLOCA, {"a": np.zeros(4, np.int8)}, groups=groups)
    msg = e.value.diagnostics[0].message
    assert msg.startswith("out of memory at alloca %t (memref<i8x1000>: 1000 bytes for each "
                          f"of {groups} work-group(s)"), msg
    assert ("fewer work-groups" in msg) == (groups > 1)
    assert e.value.diagnostics[0].span.line == 2


# --- flag messages name the flag -------------------------------------------------------------


@pytest.mark.parametrize("tool, argv, flag", [
    ("tlconform", ["--impl", "interp", "--jobs", "0"], "-j/--jobs"),
    ("tlconform", ["--impl", "interp", "-j", "0"], "-j/--jobs"),
    ("tlfuzz", ["--jobs", "0"], "-j/--jobs"),
    ("tlfuzz", ["--batch", "0"], "--batch"),
    ("tlfuzz", ["--rounds", "0"], "--rounds"),
    ("tlfuzz", ["--seed", "-1"], "--seed"),
])
def test_a_bad_count_names_its_flag(capsys, tool, argv, flag):
    from fuzz.campaign.cli import main as tlfuzz
    from fuzz.conform.cli import main as tlconform

    assert {"tlfuzz": tlfuzz, "tlconform": tlconform}[tool](argv) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: must be a whole number >= " in err, err


def test_a_bad_lowering_option_names_lowering(tmp_path, capsys):
    from fuzz.conform.cli import main as tlconform
    from tlinterp.cli import main as tlrun

    kernel = tmp_path / "k.tl"
    kernel.write_text(_K)
    assert tlrun([str(kernel), "--backend", "opencl", "--lowering", "nosuch=1", "--emit",
                  "opencl"]) == 2
    assert "error: --lowering: unknown lowering option 'nosuch'" in capsys.readouterr().err
    assert tlconform(["--impl", "opencl", "--lowering", "nosuch=1"]) == 2
    assert "tlconform: --lowering: unknown lowering option" in capsys.readouterr().err


def test_tlrun_shows_an_implementations_escape_codes_escaped(tmp_path, capsys):
    import numpy as np

    from tlinterp.cli import main as tlrun

    kernel, args = tmp_path / "k.tl", tmp_path / "a.npz"
    kernel.write_text(_K)
    np.savez(args, a=np.zeros(4, np.float32))
    assert tlrun([str(kernel), "--args", str(args), "--backend",
                  f"python:{__name__}:hostile_plugin"]) == 2
    err = capsys.readouterr().err
    assert "\\x1b[2J" in err and "\x1b" not in err and "[/usr/include/foo]" in err
