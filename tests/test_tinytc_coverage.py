"""bench/tinytc_coverage.py without tinytc: its reading of gcovr tracefiles, the per-directory
table, the unreached blocks, what one tracefile reaches that another does not, and (with gcc
and gcovr) counters redirected away from the build and tracefiles added up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.benches import bench

cov = bench("tinytc_coverage")


def _line(n: int, count: int, function: str, branches: tuple[int, ...] = ()) -> dict:
    return {"line_number": n, "function_name": function, "count": count,
            "branches": [{"branchno": i, "count": b, "fallthrough": False, "throw": False}
                         for i, b in enumerate(branches)]}


def _trace(tmp_path: Path, name: str, files: dict[str, list[dict]],
           functions: dict[str, list[tuple[str, int, int]]]) -> str:
    data = {"gcovr/format_version": "0.15", "files": [
        {"file": f, "lines": lines,
         "functions": [{"demangled_name": fn, "lineno": line, "execution_count": k}
                       for fn, line, k in functions.get(f, ())]}
        for f, lines in files.items()]}
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.fixture
def traces(tmp_path):
    """`tests` reaches the parser's first lines; `union` the parser's branch and a pass."""
    tests = _trace(tmp_path, "tests.json", {
        "src/parser.cpp": [_line(1, 5, "parse()", (5, 0)), _line(2, 5, "parse()"),
                           _line(3, 0, "parse()"), _line(7, 0, "error()"),
                           _line(8, 0, "error()")],
        "src/pass/dce.cpp": [_line(10, 0, "dce()", (0, 0)), _line(11, 0, "dce()"),
                             _line(12, 0, "dce()"), _line(20, 0, "other()")],
        "include/tinytc.hpp": [_line(1, 0, "inline()")],  # outside src/: not counted
    }, {"src/parser.cpp": [("parse()", 1, 5), ("error()", 7, 0)],
        "src/pass/dce.cpp": [("dce()", 10, 0), ("other()", 20, 0)]})
    with open(tests, encoding="utf-8") as f:  # gcovr writes excluded functions without counts
        data = json.load(f)
    data["files"][0]["functions"].append({"name": "<unknown function 43>", "lineno": 43,
                                          "gcovr/excluded": True})
    with open(tests, "w", encoding="utf-8") as f:
        json.dump(data, f)
    union = _trace(tmp_path, "union.json", {
        "src/parser.cpp": [_line(1, 9, "parse()", (4, 5)), _line(2, 9, "parse()"),
                           _line(3, 4, "parse()"), _line(7, 0, "error()"),
                           _line(8, 0, "error()")],
        "src/pass/dce.cpp": [_line(10, 2, "dce()", (2, 0)), _line(11, 0, "dce()"),
                             _line(12, 0, "dce()"), _line(20, 0, "other()")],
    }, {"src/parser.cpp": [("parse()", 1, 9), ("error()", 7, 0)],
        "src/pass/dce.cpp": [("dce()", 10, 2), ("other()", 20, 0)]})
    return cov.load_trace(tests), cov.load_trace(union)


def test_per_directory_counts_lines_and_branches_of_src_only(traces):
    tests, union = traces
    assert set(tests) == {"src/parser.cpp", "src/pass/dce.cpp"}
    table = cov.per_directory(tests)
    assert table["src/"] == cov.Counts(lines=5, lines_hit=2, branches=2, branches_hit=1)
    assert table["src/pass/"] == cov.Counts(lines=4, lines_hit=0, branches=2, branches_hit=0)
    assert table["TOTAL"] == cov.Counts(lines=9, lines_hit=2, branches=4, branches_hit=1)
    header, rows = cov.coverage_rows({"tests": tests, "union": union})
    assert header[2:] == ["tests lines % / branches %", "union lines % / branches %"]
    assert rows == [["src/", "5", "40.0 / 50.0", "60.0 / 100.0"],
                    ["src/pass/", "4", "0.0 / 0.0", "25.0 / 50.0"],
                    ["TOTAL", "9", "22.2 / 25.0", "44.4 / 75.0"]]


def test_unreached_blocks_are_maximal_runs_largest_first(traces):
    _, union = traces
    blocks = cov.unreached_blocks(union)
    # 11, 12 and 20 are one block: no executed code line lies between them
    assert [(b.place(), b.size, b.function) for b in blocks] == [
        ("src/pass/dce.cpp:11-20", 3, "dce()"), ("src/parser.cpp:7-8", 2, "error()")]


def test_reached_by_us_not_by_the_tests(traces):
    tests, union = traces
    gains = cov.reached_not_by(union, tests)
    assert [(g.file, g.lines, g.functions) for g in gains] == [
        ("src/parser.cpp", 1, ()), ("src/pass/dce.cpp", 1, ("dce()",))]
    assert cov.reached_not_by(tests, union) == []


def test_branches_are_those_of_the_runs_that_reached_the_line(tmp_path):
    """gcov leaves a line's exception edges out only where the line ran: a trace that misses
    the line must not count them against itself, nor the union for it."""
    ran = cov.load_trace(_trace(tmp_path, "ran.json", {
        "src/a.cpp": [_line(1, 4, "f()", (4,)), _line(2, 0, "g()", (0, 0, 0))]}, {}))
    with open(tmp_path / "ran.json", encoding="utf-8") as f:  # branch 1 only, as gcov says
        data = json.load(f)
    data["files"][0]["lines"][0]["branches"][0]["branchno"] = 1
    (tmp_path / "ran.json").write_text(json.dumps(data), encoding="utf-8")
    ran = cov.load_trace(str(tmp_path / "ran.json"))
    missed = cov.load_trace(_trace(tmp_path, "missed.json", {
        "src/a.cpp": [_line(1, 0, "f()", (0, 0, 0)), _line(2, 0, "g()", (0, 0, 0))]}, {}))
    cov.common_branches([ran, missed])
    assert ran["src/a.cpp"].branches == {1: {1: 4}, 2: {0: 0, 1: 0, 2: 0}}
    assert missed["src/a.cpp"].branches == {1: {1: 0}, 2: {0: 0, 1: 0, 2: 0}}
    assert cov.per_directory(ran)["src/"].branches == cov.per_directory(missed)["src/"].branches


def test_the_report_prints_every_table(traces, capsys):
    tests, union = traces
    cov.print_report({"tests": tests, "union": union}, markdown=True)
    out = capsys.readouterr().out
    assert "| src/pass/ | 4 | 0.0 / 0.0 | 25.0 / 50.0 |" in out
    assert "| src/pass/dce.cpp:11-20 | 3 | dce() |" in out
    assert "| src/pass/dce.cpp | 1 | dce() |" in out
    assert "2 lines in 2 files" in out


def test_bad_tracefile_and_bad_build_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert cov.main(["table", f"x={bad}"]) == 2
    assert "not a gcovr JSON tracefile" in capsys.readouterr().err
    assert cov.main(["run", "corpus", "--build", str(tmp_path), "--compiler", "/bin/true",
                     "--tinytc-version", "0.4.0", "--json", str(tmp_path / "o.json")]) == 2
    assert "CMakeCache.txt" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse's own usage error: exit status 2
        cov.main(["table", "no-label.json"])


def test_scenario_commands_follow_the_documented_spelling(tmp_path):
    argv, ok = cov.scenario_command("corpus", cov.VERSIONS["0.4.0"], "/b/tinytc", tmp_path,
                                    tmp_path, 60, 120)
    assert argv[1:3] == ["-m", "fuzz.conform.cli"] and ok == (0, 1)
    assert argv[argv.index("--impl") + 1] == "spirv:/b/tinytc {tl}"
    assert argv[argv.index("--lang") + 1] == "v0.4"
    argv, _ = cov.scenario_command("campaign", cov.VERSIONS["0.3.1"], "/b/tinytc", tmp_path,
                                   tmp_path, 1800, 120)
    assert argv[argv.index("--impl") + 1] == "opencl-c:/b/tinytc {tl}"
    assert "--lang" not in argv
    assert argv[argv.index("--profile") + 1] == "tinytc-0.3.1"
    assert argv[argv.index("--time") + 1] == "1800"
    argv, _ = cov.scenario_command("passes", cov.VERSIONS["0.4.0"], "/b/tinytc", tmp_path,
                                   tmp_path, 60, 120, "/b/tinytc-opt")
    impl = argv[argv.index("--impl") + 1]
    assert impl.startswith("ir:/b/tinytc-opt -p work-group-size ") and impl.endswith(" {tl}")
    assert "--device" not in argv  # the interpreter runs what the passes print


def test_passes_of_a_version_without_an_ir_pass_tool_exit_2(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={tmp_path}\n",
                                             encoding="utf-8")
    assert cov.main(["run", "passes", "--build", str(tmp_path), "--compiler", "/bin/true",
                     "--tinytc-version", "0.3.1", "--json", str(tmp_path / "o.json")]) == 2
    assert "no IR pass tool" in capsys.readouterr().err


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs {tool} (gcc; gcovr with the dev extra)")
        pytest.skip(f"{tool} is not installed")
    return path


def test_counters_go_to_the_scenario_and_tracefiles_add_up(tmp_path):
    """A small coverage build: each run's counters land in its own directory (none in the
    build), gcovr reads them there, and the union reaches what either run reached."""
    gcc = _need("gcc")
    _need("gcovr")
    source, build = tmp_path / "source", tmp_path / "build"
    (source / "src" / "pass").mkdir(parents=True)
    build.mkdir()
    (build / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={source}\n",
                                          encoding="utf-8")
    (source / "src" / "pass" / "f.c").write_text(
        "int main(int argc, char **argv) {\n"
        "    (void)argv;\n"
        "    if (argc > 1)\n"
        "        return 1;\n"
        "    return 0;\n"
        "}\n", encoding="utf-8")
    subprocess.run([gcc, "--coverage", "-O0", "-c", str(source / "src" / "pass" / "f.c"),
                    "-o", "f.o"], cwd=build, check=True, timeout=60)
    subprocess.run([gcc, "--coverage", "f.o", "-o", "f"], cwd=build, check=True, timeout=60)
    probe = build / "CMakeFiles" / "3.25.1" / "CompilerIdC"  # CMake's, not the compiler's
    probe.mkdir(parents=True)
    shutil.copyfile(build / "f.gcno", probe / "a-CMakeCCompilerId.gcno")
    traces = []
    for i, extra in enumerate(([], ["x"])):
        counters = tmp_path / f"run{i}"
        env = cov.stage_counters(build, counters)
        subprocess.run([str(build / "f"), *extra], env=dict(os.environ, **env), timeout=60)
        assert list(counters.rglob("*.gcda")) and not list(build.rglob("*.gcda"))
        assert [p.name for p in counters.rglob("*.gcno")] == ["f.gcno"]
        out = tmp_path / f"run{i}.json"
        cov.collect(source, counters, out, 120, 4 << 30, tmp_path)
        traces.append(str(out))
    first, second = (cov.load_trace(t) for t in traces)
    assert first["src/pass/f.c"].lines[5] == 1 and first["src/pass/f.c"].lines[4] == 0
    assert second["src/pass/f.c"].lines[4] == 1 and second["src/pass/f.c"].lines[5] == 0
    union = tmp_path / "union.json"
    cov.union(build, traces, union, tmp_path, 4 << 30)
    both = cov.load_trace(str(union))["src/pass/f.c"]
    assert both.lines[4] == 1 and both.lines[5] == 1 and both.lines[1] == 2
    assert both.branches[3] == {0: 1, 1: 1}
    assert cov.unreached_blocks(cov.load_trace(str(union))) == []
