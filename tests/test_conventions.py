"""One set of conventions for tlrun, tlconform and tlfuzz (and its subcommands): the same
--help layout with examples and every exit status the docs name, --version, one spelling per
flag, tlconform -x/-v, every argument error reported at once, findings in the per-user cache
directory, and a line saying what --out (--json, --log) wrote."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fused_kernel.tl"
EXAMPLE_ARGS = ROOT / "examples" / "fused_kernel.npz"


def _tlrun(argv):
    from tlinterp.cli import main

    return main(argv)


def _tlconform(argv):
    from fuzz.conform.cli import main

    return main(argv)


def _tlfuzz(argv):
    from fuzz.campaign.cli import main

    return main(argv)


TOOLS = {
    "tlrun": (_tlrun, []),
    "tlconform": (_tlconform, []),
    "tlfuzz": (_tlfuzz, []),
    "tlfuzz reproduce": (_tlfuzz, ["reproduce"]),
    "tlfuzz triage": (_tlfuzz, ["triage"]),
}

# where docs/ states each tool's exit statuses: (file, the words that open the statement)
DOCUMENTED = {
    "tlrun": [("docs/language.md", "## Exit statuses\n"),
              ("docs/semantics.md", "`tlrun` exit statuses:")],
    "tlconform": [("docs/conformance.md", "Exit status:")],
    "tlfuzz": [("docs/fuzzing.md", "| status | meaning |")],
    "tlfuzz reproduce": [("docs/triage.md", "| exit | meaning |")],
    "tlfuzz triage": [("docs/triage.md", "Exit status:")],
}

SECTION = re.compile(r"^(usage:|[a-z][a-z ]*:$)")


def _run(tool: str, argv: list[str], capsys) -> tuple[int, str, str]:
    main, prefix = TOOLS[tool]
    try:
        rc = main([*prefix, *argv])
    except SystemExit as e:  # argparse's own end of --help and --version
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def _help(tool: str, capsys) -> str:
    rc, out, _ = _run(tool, ["--help"], capsys)
    assert rc == 0
    return out


def _sections(text: str) -> list[str]:
    return [m.group(1).split()[0] if m.group(1).startswith("usage") else m.group(1)
            for m in map(SECTION.match, text.splitlines()) if m]


def _statuses_in_help(text: str) -> set[int]:
    part = text.split("\nexit status:\n", 1)[1]
    return {int(m.group(1)) for m in re.finditer(r"^  (\d+) ", part, re.MULTILINE)}


def _documented_statuses(doc: str, opening: str) -> set[int]:
    text = (ROOT / doc).read_text()
    start = text.index(opening) + len(opening)
    if opening.startswith("|"):  # a table: | N | meaning |
        rows = text[start:].split("\n\n", 1)[0]
        return {int(n) for n in re.findall(r"^\| (\d+) \|", rows, re.MULTILINE)}
    paragraph = text[start:].lstrip().split("\n\n", 1)[0]
    return {int(n) for n in re.findall(r"(?:^|[:;,]\s+)\**(\d+)\**\s", paragraph)}


TOP = ["usage:", "implementation options:", "run options:", "output options:",
       "general options:", "examples:", "exit status:"]


def test_the_three_tools_help_has_one_structure(capsys):
    layouts = {tool: _sections(_help(tool, capsys)) for tool in ("tlrun", "tlconform", "tlfuzz")}
    assert layouts == {tool: TOP for tool in layouts}
    for sub in ("tlfuzz reproduce", "tlfuzz triage"):  # they write no report: no output group
        assert _sections(_help(sub, capsys)) == [s for s in TOP if s != "output options:"]


@pytest.mark.parametrize("tool", list(TOOLS))
def test_help_lists_every_documented_exit_status_and_examples(tool, capsys):
    text = _help(tool, capsys)
    documented = set()
    for doc, opening in DOCUMENTED[tool]:
        found = _documented_statuses(doc, opening)
        assert {0, 1, 2} <= found, (doc, opening, found)  # the statement was found
        documented |= found
    assert documented <= _statuses_in_help(text)
    examples = text.split("\nexamples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert examples and all(line.strip().startswith(tool.split()[0]) for line in examples)


@pytest.mark.parametrize("tool", list(TOOLS))
def test_version(tool, capsys):
    from importlib.metadata import version

    rc, out, _ = _run(tool, ["--version"], capsys)
    assert rc == 0 and out.strip() == f"{tool.split()[0]} {version('tensor-language-reference')}"


def test_one_spelling_per_flag(capsys):
    helps = {tool: _help(tool, capsys) for tool in TOOLS}
    for tool, text in helps.items():
        assert "--impl NAME" in text, tool
        assert "--backend" not in text.split("\nexamples:")[0], tool  # a hidden alias only
    for tool in ("tlconform", "tlfuzz"):
        assert "-j N, --jobs N" in helps[tool]
    for tool in ("tlrun", "tlconform", "tlfuzz"):
        assert "-v, --verbose" in helps[tool] and "-q, --quiet" in helps[tool]
    # the old spellings still work
    from fuzz.campaign.cli import build_parser

    assert build_parser().parse_args(["--backend", "opencl"]).impl == "opencl"
    assert build_parser().parse_args(["-j", "3"]).jobs == 3
    rc, _, err = _run("tlconform", ["--impl", "interp", "-j", "0"], capsys)
    assert rc == 2 and "-j/--jobs: must be a whole number >= 1, got '0'" in err


def test_tlrun_impl_backend_alias_and_out_says_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "out.npz"
    rc, _, err = _run("tlrun", [str(EXAMPLE), "--args", str(EXAMPLE_ARGS), "--impl", "interp",
                                "--out", str(out), "-q"], capsys)
    assert rc == 0, err
    assert err.strip().splitlines() == [f"tlrun: wrote {out} (4 arrays)"]  # -q: no summary
    rc, _, err = _run("tlrun", [str(EXAMPLE), "--args", str(EXAMPLE_ARGS), "--backend",
                                "nonsense"], capsys)
    assert rc == 2 and "--impl: 'nonsense' is not an implementation" in err


# --- every argument error at once ----------------------------------------------------------


def test_every_bad_npz_entry_in_one_message(tmp_path, capsys):
    args = dict(np.load(EXAMPLE_ARGS))
    args.update(B=np.zeros(8), C=np.zeros((8, 16), np.int32), junk=np.zeros(1))
    np.savez(tmp_path / "bad.npz", **args)
    rc, _, err = _run("tlrun", [str(EXAMPLE), "--args", str(tmp_path / "bad.npz")], capsys)
    assert rc == 2
    assert "unexpected entries 'junk'" in err
    assert "argument 'B' has element type f32: expected dtype float32, got float64" in err
    assert "argument 'C' has element type f32: expected dtype float32, got int32" in err


def test_bad_members_of_an_archive_in_one_message(tmp_path, capsys):
    import zipfile

    path = tmp_path / "members.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("notes.txt", "hello")
        z.writestr("A.npy", b"not an array")
    rc, _, err = _run("tlrun", [str(EXAMPLE), "--args", str(path)], capsys)
    assert rc == 2
    assert "member 'notes.txt' is not an .npy array" in err
    assert "member 'A.npy' is not a valid .npy array" in err


def test_a_shape_mismatch_in_20_work_groups_is_one_line_with_a_count(tmp_path, capsys):
    args = dict(np.load(EXAMPLE_ARGS))
    del args["A"]
    args.update({f"A.{g}": np.zeros((16, 4), np.float32) for g in range(20)})
    args["D"] = np.zeros((16, 16, 20), np.float32)
    np.savez(tmp_path / "g20.npz", **args)
    rc, _, err = _run("tlrun", [str(EXAMPLE), "--args", str(tmp_path / "g20.npz")], capsys)
    assert rc == 2
    assert err.strip().splitlines() == [
        "error: arguments 'A.0', 'A.1', 'A.2' and 17 more (20 members of group 'A') are "
        "memref<f32x16x8>: mode 1 must be 8, got 4"]


# --- tlconform -x and -v --------------------------------------------------------------------


def off_by_one(source, args, func=None, groups=None):
    """A planted bug: every float result one too large, and a complaint in rich markup and a
    terminal escape, which the report must show as text."""
    import tlinterp

    out = tlinterp.run(tlinterp.parse(source), args, func=func, groups=groups)
    return {k: v + 1 if v.dtype.kind == "f" else v for k, v in out.items()}


def shouts(source, args, func=None, groups=None):
    raise RuntimeError("[/] [/usr/include/foo] \x1b[2J cleared the screen")


def test_tlconform_max_failures_stops_early_and_says_so(tmp_path, capsys):
    report = tmp_path / "r.json"
    rc, out, err = _run("tlconform", ["--impl", f"python:{__name__}:off_by_one", "--filter",
                                      "valid/blas/gemm_f32", "-x", "-q", "--json",
                                      str(report)], capsys)
    assert rc == 1
    assert "1 failed" in out and "stopped early after 1 failure (-x/--max-failures)" in out
    assert re.search(r"\d+ cases? not run", out)
    assert f"tlconform: wrote {report} (1 cases)" in err
    rc, out, _ = _run("tlconform", ["--impl", f"python:{__name__}:off_by_one", "--filter",
                                    "valid/blas/gemm_f32", "--max-failures", "3", "-q"], capsys)
    assert rc == 1 and "3 failed" in out and "stopped early after 3 failures" in out


def test_tlconform_verbose_shows_the_failing_output_inline(capsys):
    rc, out, _ = _run("tlconform", ["--impl", f"python:{__name__}:off_by_one", "--filter",
                                    "valid/blas/gemm_f32_canonical", "-x", "-q", "-v"], capsys)
    assert rc == 1
    assert re.search(r"^     differs: \S+\[.*expected .*, got ", out, re.MULTILINE)
    rc, out, _ = _run("tlconform", ["--impl", f"python:{__name__}:shouts", "--filter",
                                    "valid/blas/gemm_f32_canonical", "-x", "-q", "-v"], capsys)
    assert rc == 1
    # markup shown as written; the terminal sequence removed where the output was captured
    assert "| raised RuntimeError: [/] [/usr/include/foo]  cleared the screen" in out
    assert "\x1b[2J" not in out
    rc, out, _ = _run("tlconform", ["--impl", f"python:{__name__}:shouts", "--filter",
                                    "valid/blas/gemm_f32_canonical", "-x", "-q"], capsys)
    assert rc == 1 and "differs:" not in out and "| raised" not in out  # without -v


# --- tlfuzz's findings directory ------------------------------------------------------------


def test_tlfuzz_findings_default_to_the_user_cache_directory(tmp_path, monkeypatch, capsys):
    from fuzz.campaign import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    seen = {}

    def campaign(ns):  # the campaign itself is tested elsewhere: only where it would save
        seen["out"] = ns.out
        return 0

    monkeypatch.setattr(cli, "run_campaign", campaign)
    assert cli.main(["--time", "1", "--frontend"]) == 0
    want = tmp_path / "cache" / "tensor-language" / "findings"
    assert seen["out"] == str(want) and want.is_dir()
    assert not (tmp_path / "corpus").exists()
    assert str(want) in _help("tlfuzz", capsys)


def test_tlfuzz_says_where_it_saved(tmp_path, capsys):
    out = tmp_path / "findings"
    rc = _tlfuzz(["--frontend", "--time", "5", "-j", "1", "-q", "--out", str(out),
                  "--shrink-time", "1", "--triage-time", "0"])
    err = capsys.readouterr().err
    assert rc in (0, 1)
    assert re.search(rf"^tlfuzz: wrote {re.escape(str(out))} \(\d+ new findings?\)$", err,
                     re.MULTILINE)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
