"""How much of tinytc's code do we reach? Line and branch coverage of tinytc's src/, per
directory, for its own test suite, our corpus and a fuzzing campaign (issue 45).

    python bench/tinytc_coverage.py all --build BUILD --compiler BUILD/tools/offline_compiler/tinytc
                                        --tinytc-version 0.4.0 --time 30m --out DIR
    python bench/tinytc_coverage.py run {tests,corpus,passes,campaign} --build BUILD --compiler PATH
                                        --tinytc-version V [--time 30m] --json FILE.json
    python bench/tinytc_coverage.py union A.json B.json ... --build BUILD --json FILE.json
    python bench/tinytc_coverage.py table tests=A.json corpus=B.json ... [--markdown]

BUILD is a build of tinytc made with `--coverage -O0` (docs/testing-a-compiler.md, "How much of
your compiler do we reach?", has the recipe); it stays untouched: every scenario writes its
counters into a fresh directory of its own (GCOV_PREFIX, with BUILD's *.gcno files beside
them), so scenarios can run at the same time and none sees another's counts. Each `run`
leaves one gcovr JSON tracefile:

  tests     ctest in BUILD (tinytc's lit, doctest and OpenCL tests). The OpenCL tests ask for
            a GPU: Intel's CPU runtime is the only platform they see, presented as a GPU (an
            LD_PRELOAD of clGetDeviceIDs), so they build their kernels here
  corpus    tlconform over our corpus, with the implementation docs/testing-a-compiler.md
            spells for the version (v0.4.0: --lang v0.4, spirv:; v0.3.1: opencl-c:),
            -j 2, --device intel
  passes    (v0.4.0) tlconform over our corpus through tinytc-opt with the `ir:`
            implementation of docs/conformance.md: its lowering passes and clean-ups, whose
            printed IR our interpreter runs
  campaign  tlfuzz --time T -j 1 with the version's profile, the corpus's implementation

`union` adds tracefiles (gcovr --add-tracefile); `table` prints, for the tracefiles named,
lines % and branches % per directory of src/ side by side, the largest blocks that the one
named `union` never reaches (file:first-last, by size), and what it reaches that the one
named `tests` does not (files and functions). `all` runs the three scenarios one after the
other, the union of ours (corpus, passes, campaign), and the table, keeping the tracefiles
in --out.

Every external run is bounded in time (--limit) and address space (--memory); temporary
files live in one scratch directory, removed at the end (also after Ctrl-C or SIGTERM).
Exit status: 0 done; 2 bad arguments (no build, no coverage build, gcovr or a tool missing,
an unreadable tracefile); 3 a scenario ended unexpectedly (timed out, or its tool failed to
run: the end of its output is printed); 130/143 stopped by Ctrl-C/SIGTERM.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

# this directory holds bench/fuzz.py, named like the `fuzz` package: keep it off the path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

from tlinterp.impl.command import limit_memory, signal_group  # noqa: E402
from tlinterp.impl.shutdown import exit_status_of, scratch_dir, stop_on_signals  # noqa: E402

SCENARIOS = ("tests", "corpus", "passes", "campaign")
OURS = ("corpus", "passes", "campaign")  # the union adds these
BUILD_OPTIONS = "-cl-std=CL2.0 -cl-mad-enable"  # what tinytc's own OpenCL runtime builds with
GCOVR_OPTIONS = (
    # exception edges of C++ at -O0 are no decision of the compiler's logic
    "--exclude-throw-branches",
    # templates and inline functions of headers appear once per translation unit
    "--merge-mode-functions=separate",
)


@dataclass(frozen=True)
class Version:
    """How docs/testing-a-compiler.md runs one tinytc version through our tools."""

    impl: str  # the --impl template; {compiler} is the offline compiler's path
    lang: Optional[str]  # --lang of tlconform and tlfuzz
    profile: str  # tlfuzz --profile
    # the `ir:` implementation of docs/conformance.md with the version's IR pass tool
    # ({opt}), or None when it has none
    passes: Optional[str] = None
    ok_status: tuple[int, ...] = (0, 1)  # tlconform/tlfuzz: 1 = failures found, still a run


VERSIONS = {
    "0.4.0": Version("spirv:{compiler} {tl}", "v0.4", "tinytc-0.4.0",
                     # the lowering pipeline tinytc runs before SPIR-V, then the clean-ups
                     "ir:{opt} -p work-group-size -p lower-linalg -p lower-foreach "
                     "-p constant-propagation -p dead-code-elimination -p insert-barrier {tl}"),
    "0.3.1": Version("opencl-c:{compiler} {tl}", None, "tinytc-0.3.1"),
}


class Refused(Exception):
    """Bad input: exit status 2 with the message."""


class RunFailed(Exception):
    """A scenario ended unexpectedly: exit status 3 with the message."""


# ---------------------------------------------------------------------------------------------
# Tracefiles: reading gcovr's JSON and summing it up


@dataclass
class Counts:
    lines: int = 0
    lines_hit: int = 0
    branches: int = 0
    branches_hit: int = 0

    def add(self, other: Counts) -> None:
        self.lines += other.lines
        self.lines_hit += other.lines_hit
        self.branches += other.branches
        self.branches_hit += other.branches_hit

    @staticmethod
    def percent(hit: int, total: int) -> str:
        return f"{100.0 * hit / total:.1f}" if total else "-"

    def text(self) -> str:
        return (f"{self.percent(self.lines_hit, self.lines)} / "
                f"{self.percent(self.branches_hit, self.branches)}")


@dataclass
class FileCov:
    """One source file of a tracefile: line -> execution count (code lines only), line ->
    branch counts, line -> function, function (name, first line) -> execution count."""

    lines: dict[int, int] = field(default_factory=dict)
    branches: dict[int, dict[int, int]] = field(default_factory=dict)  # line -> number -> count
    function_of: dict[int, str] = field(default_factory=dict)
    functions: dict[tuple[str, int], int] = field(default_factory=dict)

    def counts(self) -> Counts:
        c = Counts(lines=len(self.lines), lines_hit=sum(1 for n in self.lines.values() if n))
        for counts in self.branches.values():
            c.branches += len(counts)
            c.branches_hit += sum(1 for n in counts.values() if n)
        return c


Trace = dict[str, FileCov]  # path relative to tinytc's source root -> its coverage


def load_trace(path: str, prefix: str = "src/") -> Trace:
    """The files under `prefix` of a gcovr JSON tracefile. Refused when it is no such file."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        files = data["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Refused(f"{path}: not a gcovr JSON tracefile ({e})") from None
    trace: Trace = {}
    try:
        for entry in files:
            name = entry["file"]
            if not name.startswith(prefix):
                continue
            fc = trace.setdefault(name, FileCov())
            for line in entry.get("lines", ()):
                if line.get("gcovr/excluded") or line.get("gcovr/noncode"):
                    continue
                n = line["line_number"]
                fc.lines[n] = fc.lines.get(n, 0) + int(line["count"])
                if line.get("function_name"):
                    fc.function_of.setdefault(n, line["function_name"])
                if line.get("branches"):
                    counts = fc.branches.setdefault(n, {})
                    for i, b in enumerate(line["branches"]):
                        k = int(b.get("branchno", i))
                        counts[k] = counts.get(k, 0) + int(b["count"])
            for fn in entry.get("functions", ()):
                if fn.get("gcovr/excluded"):  # gcovr's own exclusions carry no count
                    continue
                key = (fn.get("demangled_name") or fn.get("name") or "?", int(fn["lineno"]))
                fc.functions[key] = fc.functions.get(key, 0) + int(fn["execution_count"])
    except (KeyError, TypeError, ValueError) as e:
        raise Refused(f"{path}: not a gcovr JSON tracefile (a file entry lacks {e})") from None
    return trace


def common_branches(traces: Sequence[Trace]) -> None:
    """Give every trace the same branches per line, in place. gcov lists a line's exception
    edges (which --exclude-throw-branches leaves out) as such only where the line ran; where
    it never ran they stay among its branches, so a run that misses a line counts more
    branches there than one that reaches it. A line's branches are therefore those that every
    trace in which it ran reports (all of them where it ran nowhere); absent ones count 0."""
    for name in {f for t in traces for f in t}:
        files = [t.get(name) for t in traces]
        for n in {n for fc in files if fc for n in fc.branches}:
            ran = [fc.branches[n] for fc in files if fc and fc.lines.get(n) and n in fc.branches]
            listed = ran or [fc.branches[n] for fc in files if fc and n in fc.branches]
            keep = set.intersection(*(set(b) for b in listed))
            for fc in files:
                if fc is not None and n in fc.lines:
                    old = fc.branches.get(n, {})
                    fc.branches[n] = {k: old.get(k, 0) for k in sorted(keep)}


def directory_of(name: str) -> str:
    return os.path.dirname(name) + "/"


def per_directory(trace: Trace) -> dict[str, Counts]:
    """Directory (with its files only, not its subdirectories) -> counts; "TOTAL" too."""
    table: dict[str, Counts] = defaultdict(Counts)
    for name, fc in trace.items():
        c = fc.counts()
        table[directory_of(name)].add(c)
        table["TOTAL"].add(c)
    return dict(table)


@dataclass(frozen=True)
class Block:
    file: str
    first: int
    last: int
    size: int  # code lines in it
    function: str

    def place(self) -> str:
        return f"{self.file}:{self.first}-{self.last}"


def unreached_blocks(trace: Trace) -> list[Block]:
    """Maximal runs of code lines never executed (no executed code line between them), the
    largest first; each names the function most of its lines belong to."""
    blocks = []
    for name, fc in trace.items():
        run: list[int] = []
        for n in sorted(fc.lines) + [None]:
            if n is not None and fc.lines[n] == 0:
                run.append(n)
                continue
            if run:
                functions = Counter(fc.function_of.get(k, "?") for k in run)
                blocks.append(Block(name, run[0], run[-1], len(run),
                                    functions.most_common(1)[0][0]))
                run = []
    return sorted(blocks, key=lambda b: (-b.size, b.file, b.first))


@dataclass(frozen=True)
class Gain:
    file: str
    lines: int  # code lines `ours` executes and `theirs` never does
    functions: tuple[str, ...]  # functions `ours` enters and `theirs` never does


def reached_not_by(ours: Trace, theirs: Trace) -> list[Gain]:
    """Per file, what `ours` executes that `theirs` does not, the most lines first."""
    gains = []
    for name, fc in ours.items():
        other = theirs.get(name, FileCov())
        lines = sum(1 for n, k in fc.lines.items() if k and not other.lines.get(n))
        functions = tuple(sorted(f for (f, line), k in fc.functions.items()
                                 if k and not other.functions.get((f, line))))
        if lines or functions:
            gains.append(Gain(name, lines, functions))
    return sorted(gains, key=lambda g: (-g.lines, g.file))


# ---------------------------------------------------------------------------------------------
# Output


def coverage_rows(traces: dict[str, Trace]) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the per-directory table: lines % / branches % per tracefile,
    directories sorted, TOTAL last with its line count."""
    common_branches(list(traces.values()))
    summaries = {label: per_directory(t) for label, t in traces.items()}
    dirs = sorted({d for s in summaries.values() for d in s if d != "TOTAL"})
    header = ["directory", "code lines"] + [f"{label} lines % / branches %"
                                            for label in traces]
    rows = []
    for d in dirs + ["TOTAL"]:
        size = max((s[d].lines for s in summaries.values() if d in s), default=0)
        rows.append([d, str(size)] + [s[d].text() if d in s else "-"
                                      for s in summaries.values()])
    return header, rows


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def print_report(traces: dict[str, Trace], blocks: int = 25, gains: int = 25,
                 markdown: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    out = print if markdown else console.print

    def table(title: str, header: Sequence[str], rows: list[list[str]]) -> None:
        if markdown:
            print(f"\n{title}\n\n{markdown_table(header, rows)}")
            return
        t = Table(title=title)
        for h in header:
            t.add_column(h, overflow="fold")
        for r in rows:
            t.add_row(*r)
        console.print(t)

    header, rows = coverage_rows(traces)
    table("tinytc src/: lines % / branches % per directory", header, rows)
    union = traces.get("union")
    if union is not None:
        found = unreached_blocks(union)[:blocks]
        table(f"the {len(found)} largest blocks the union never reaches",
              ["block", "lines", "function"],
              [[b.place(), str(b.size), b.function] for b in found])
    tests = traces.get("tests")
    if union is not None and tests is not None:
        found_gains = reached_not_by(union, tests)
        total = sum(g.lines for g in found_gains)
        table(f"reached by us (union), not by tinytc's tests: {total} lines in "
              f"{len(found_gains)} files (first {min(gains, len(found_gains))})",
              ["file", "lines", "functions never entered by the tests"],
              [[g.file, str(g.lines), "; ".join(g.functions[:6])
                + (f" (+{len(g.functions) - 6})" if len(g.functions) > 6 else "")]
               for g in found_gains[:gains]])
    elif union is None:
        out("(name a tracefile `union` for the unreached blocks, and one `tests` for what "
            "we reach that tinytc's tests do not)")


# ---------------------------------------------------------------------------------------------
# Running a scenario


def cmake_cache(build: Path) -> dict[str, str]:
    path = build / "CMakeCache.txt"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise Refused(f"{path}: {e.strerror or e}: --build must be a CMake build directory "
                      "of tinytc") from None
    cache = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_][\w.+-]*):[A-Z]+=(.*)$", line)
        if m:
            cache[m.group(1)] = m.group(2)
    return cache


def source_root(build: Path) -> Path:
    """tinytc's source directory, as the build's CMake cache names it."""
    cache = cmake_cache(build)
    root = cache.get("CMAKE_HOME_DIRECTORY") or cache.get("tiny-tensor-compiler_SOURCE_DIR")
    if not root or not (Path(root) / "src").is_dir():
        raise Refused(f"{build}: its CMakeCache.txt names no tinytc source directory with a "
                      "src/")
    return Path(root)


def gcno_files(build: Path) -> list[Path]:
    # CMake's compiler identification (CMakeFiles/3.25.1/CompilerIdCXX/) is no part of the
    # compiler, and gcov cannot find its source
    found = sorted(p for p in build.rglob("*.gcno")
                   if not any(part.startswith("CompilerId") for part in p.parts))
    if not found:
        raise Refused(f"{build}: no *.gcno file: not a coverage build (configure with "
                      "-DCMAKE_C_FLAGS='--coverage -O0' -DCMAKE_CXX_FLAGS='--coverage -O0')")
    return found


def stage_counters(build: Path, into: Path) -> dict[str, str]:
    """Make `into` a fresh place for one scenario's counters: BUILD's *.gcno files at their
    relative paths (gcov reads them beside the *.gcda), and the environment that makes every
    instrumented program write its *.gcda there instead of into BUILD."""
    build = build.resolve()
    for gcno in gcno_files(build):
        target = into / gcno.relative_to(build)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(gcno, target)
        except OSError:  # another file system
            shutil.copyfile(gcno, target)
    # the build's absolute path is stripped from each object's path, `into` put before it
    return {"GCOV_PREFIX": str(into), "GCOV_PREFIX_STRIP": str(len(build.parts) - 1)}


def gcovr_command(root: Path, *, search: Optional[Path] = None, tracefiles: Sequence[str] = (),
                  out: str) -> list[str]:
    gcovr = shutil.which("gcovr")
    if gcovr is None:
        raise Refused("gcovr is not installed: pip install gcovr (or the dev extra: "
                      "pip install -e '.[dev]')")
    argv = [gcovr, "--root", str(root), "--filter", str(root / "src") + "/", *GCOVR_OPTIONS,
            "--json", out]
    for t in tracefiles:
        argv += ["--add-tracefile", t]
    if search is not None:
        argv += ["-j", "2", str(search)]
    return argv


def run_bounded(argv: list[str], *, label: str, limit: float, memory: int, log: Path,
                env: Optional[dict[str, str]] = None, cwd: Optional[Path] = None,
                expected: Optional[float] = None) -> int:
    """Run argv in its own process group with its output in `log`, showing progress; at
    `limit` seconds SIGTERM (the tools end in order), 30 s later SIGKILL. Its exit status;
    RunFailed when it could not start or was stopped at the limit."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    full_env = dict(os.environ, **(env or {}))
    with open(log, "wb") as out:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=full_env, cwd=cwd,
                                    start_new_session=True)
        except OSError as e:
            raise RunFailed(f"{label}: cannot run {argv[0]}: {e.strerror or e}") from None
        limit_memory(proc, memory)
        columns = [SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()]
        if expected:
            columns.insert(2, BarColumn())
        stopped_at_limit = False
        try:
            with Progress(*columns, transient=True) as progress:
                task = progress.add_task(label, total=expected)
                start = time.monotonic()
                while proc.poll() is None:
                    elapsed = time.monotonic() - start
                    if elapsed > limit:
                        stopped_at_limit = True
                        break
                    progress.update(task, completed=min(elapsed, expected or 0))
                    time.sleep(0.5)
        finally:
            if proc.poll() is None:  # the limit, Ctrl-C or SIGTERM: stop it in order
                signal_group(proc, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
            signal_group(proc)  # whatever it left in its group
            proc.wait()
    if stopped_at_limit:
        raise RunFailed(f"{label}: no end within {limit:g} s (stopped)\n{tail(log)}")
    return proc.returncode


def tail(log: Path, lines: int = 25) -> str:
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 16384))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# Preloaded into tinytc's tests: a GPU for its OpenCL tests, which ask for CL_DEVICE_TYPE_GPU
# only (with Intel's CPU runtime the only platform, its CPU device answers), and the counters'
# place for its lit tests, since lit hands its tests a fixed list of variables (LD_PRELOAD among
# them, GCOV_PREFIX not); libgcov reads GCOV_PREFIX when the program ends.
_TESTS_SHIM = r"""
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdlib.h>
__attribute__((constructor)) static void counters_place(void) {
    setenv("GCOV_PREFIX", PREFIX, 0);
    setenv("GCOV_PREFIX_STRIP", STRIP, 0);
}
typedef cl_int (*get_ids)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
CL_API_ENTRY cl_int CL_API_CALL clGetDeviceIDs(cl_platform_id p, cl_device_type t, cl_uint n,
                                               cl_device_id *d, cl_uint *c) {
    static get_ids real;
    if (!real) real = (get_ids)dlsym(RTLD_NEXT, "clGetDeviceIDs");
    if (t == CL_DEVICE_TYPE_GPU) t = CL_DEVICE_TYPE_CPU;
    return real(p, t, n, d, c);
}
"""


def tests_env(scratch: Path, limit: float, counters: dict[str, str]) -> dict[str, str]:
    """The environment in which tinytc's tests write their counters to `counters`'s place
    (lit's too) and its OpenCL tests see Intel's CPU runtime, alone, as a GPU. Refused
    without the runtime or a C compiler."""
    from tlgpu.runtime import icd

    library = icd.runtime_library()
    if library is None:
        raise Refused(f"tinytc's OpenCL tests need Intel's CPU runtime: {icd.INSTALL}")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise Refused("no C compiler (cc) to build the preloaded shim of the tests")
    source, shim = scratch / "tests_shim.c", scratch / "tests_shim.so"
    source.write_text(_TESTS_SHIM, encoding="utf-8")
    values = [f"-D{macro}={json.dumps(counters[name])}"  # C string literals
              for macro, name in (("PREFIX", "GCOV_PREFIX"), ("STRIP", "GCOV_PREFIX_STRIP"))]
    try:
        done = subprocess.run([cc, "-shared", "-fPIC", "-O1", *values, str(source), "-o",
                               str(shim), "-ldl"], capture_output=True, text=True,
                              timeout=limit)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"the tests' shim did not build within {limit:g} s") from None
    if done.returncode:
        raise Refused(f"the tests' shim did not build (OpenCL headers missing?):\n"
                      f"{done.stderr[-2000:]}")
    return {"OCL_ICD_VENDORS": str(library), "LD_PRELOAD": str(shim)}


def tool(module: str) -> list[str]:
    return [sys.executable, "-m", module]


def impl_options(version: Version, compiler: str) -> list[str]:
    # the template splits like a command line: a path with spaces stays one word
    impl = version.impl.replace("{compiler}", shlex.quote(compiler))
    options = ["--impl", impl, "--device", "intel",
               "--reject-status", "1", "--build-options", BUILD_OPTIONS]
    return options + (["--lang", version.lang] if version.lang else [])


def scenario_command(name: str, version: Version, compiler: str, build: Path, scratch: Path,
                     seconds: float, case_timeout: float,
                     opt: str = "") -> tuple[list[str], tuple[int, ...]]:
    """The command of a scenario and the exit statuses that mean "it ran"."""
    if name == "tests":
        # 8: some test failed (the inline-assembly kernels do on a CPU): still a run
        return (["ctest", "--test-dir", str(build), "--timeout", f"{case_timeout:g}",
                 "-j", "2", "--output-on-failure"], (0, 8))
    if name == "corpus":
        return (tool("fuzz.conform.cli") + impl_options(version, compiler)
                + ["-j", "2", "--timeout", f"{case_timeout:g}", "-q"], version.ok_status)
    if name == "passes":
        impl = (version.passes or "").replace("{opt}", shlex.quote(opt))
        return (tool("fuzz.conform.cli") + ["--impl", impl, "--reject-status", "1"]
                + (["--lang", version.lang] if version.lang else [])
                + ["-j", "2", "--timeout", f"{case_timeout:g}", "-q"], version.ok_status)
    return (tool("fuzz.campaign.cli") + impl_options(version, compiler)
            + ["--profile", version.profile, "--time", f"{seconds:g}", "-j", "1", "--seed", "1",
               "--out", str(scratch / "findings"), "-q"], version.ok_status)


def run_scenario(name: str, args: argparse.Namespace, json_out: Path, scratch: Path) -> str:
    """Run one scenario against fresh counters and write its tracefile; a one-line summary."""
    build = Path(args.build).resolve()
    root = source_root(build)
    compiler = os.path.abspath(args.compiler)
    if not os.access(compiler, os.X_OK):
        raise Refused(f"{args.compiler}: no executable compiler there")
    version = VERSIONS[args.tinytc_version]
    opt = os.path.abspath(args.opt or str(build / "tools" / "opt" / "tinytc-opt"))
    if name == "passes":
        if version.passes is None:
            raise Refused(f"tinytc {args.tinytc_version} has no IR pass tool: no passes "
                          "scenario")
        if not os.access(opt, os.X_OK):
            raise Refused(f"{opt}: no executable IR pass tool there (--opt)")
    if name == "tests":
        # tinytc's lit tests run `lit` and pipe into `filecheck` (both on PyPI)
        missing = [t for t in ("ctest", "lit", "filecheck") if shutil.which(t) is None]
        if missing:
            raise Refused(f"the tests scenario needs {', '.join(missing)}: ctest comes with "
                          "CMake; pip install lit filecheck")
    place = scratch / name
    counters = place / "counters"
    counters.mkdir(parents=True)
    env = stage_counters(build, counters)
    if name == "tests":
        env.update(tests_env(place, 120, env))
    argv, ok = scenario_command(name, version, compiler, build, place, args.time,
                                args.case_timeout, opt)
    limit = args.limit if args.limit else (args.time + 900 if name == "campaign" else 7200)
    log = place / "log.txt"
    started = time.monotonic()
    status = run_bounded(argv, label=f"{name}: {Path(argv[0]).name} {' '.join(argv[1:3])} …",
                         limit=limit, memory=args.memory, log=log, env=env, cwd=place,
                         expected=args.time if name == "campaign" else None)
    took = time.monotonic() - started
    if status not in ok:
        raise RunFailed(f"{name}: {shlex.join(argv)} ended with exit status {status}\n"
                        f"{tail(log)}")
    if not any(counters.rglob("*.gcda")):
        raise RunFailed(f"{name}: the run wrote no coverage counters (is {compiler} the "
                        f"offline compiler of the coverage build {build}?)\n{tail(log)}")
    collect(root, counters, json_out, limit, args.memory, place)
    summary = last_summary(log)
    return f"{name}: {took:.0f} s, exit status {status}" + (f"; {summary}" if summary else "")


def last_summary(log: Path) -> str:
    """The tool's own count line (ctest's "tests passed", tlconform's totals, tlfuzz's
    cases), for the record."""
    text = tail(log, 60)
    for pattern in (r"\d+% tests passed.*", r".*\bcases\b.*", r".*\bpass\b.*"):
        found = re.findall(pattern, text)
        if found:
            return found[-1].strip()[:200]
    return ""


@contextmanager
def one_gcovr_at_a_time(root: Path) -> Iterator[None]:
    """gcov writes its *.gcov files into the source root, and gcovr deletes them after
    reading: two gcovr runs over one root at the same time (scenarios run side by side) take
    each other's files away. An advisory lock on the root directory itself (no lock file to
    leave behind) makes them take turns."""
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def collect(root: Path, counters: Path, json_out: Path, limit: float, memory: int,
            place: Path) -> None:
    argv = gcovr_command(root, search=counters, out=str(json_out))
    with one_gcovr_at_a_time(root):
        status = run_bounded(argv, label="gcovr", limit=limit, memory=memory,
                             log=place / "gcovr.txt", cwd=root)
    if status:
        raise RunFailed(f"gcovr ended with exit status {status}\n{tail(place / 'gcovr.txt')}")


def union(build: Path, tracefiles: Sequence[str], json_out: Path, scratch: Path,
          memory: int) -> None:
    for t in tracefiles:
        load_trace(t)  # refuse what is no tracefile before gcovr does, with our message
    root = source_root(build.resolve())
    argv = gcovr_command(root, tracefiles=[os.path.abspath(t) for t in tracefiles],
                         out=str(json_out))
    log = scratch / "union.txt"
    with one_gcovr_at_a_time(root):
        status = run_bounded(argv, label="gcovr --add-tracefile", limit=1800, memory=memory,
                             log=log, cwd=root)
    if status:
        raise RunFailed(f"gcovr ended with exit status {status}\n{tail(log)}")


# ---------------------------------------------------------------------------------------------
# Command line


def seconds_of(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 90, 30s, 30m, 1h)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def labelled(text: str) -> tuple[str, str]:
    label, sep, path = text.partition("=")
    if not sep or not label or not path:
        raise argparse.ArgumentTypeError(f"{text!r}: give LABEL=FILE.json")
    return label, path


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tinytc_coverage.py", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def build_options(q: argparse.ArgumentParser, compiler: bool = True) -> None:
        q.add_argument("--build", required=True, help="tinytc's coverage build directory")
        if compiler:
            q.add_argument("--compiler", required=True,
                           help="its offline compiler (BUILD/tools/offline_compiler/tinytc)")
            q.add_argument("--tinytc-version", required=True, choices=sorted(VERSIONS))
            q.add_argument("--opt", default=None,
                           help="its IR pass tool, for the passes scenario (default: "
                                "BUILD/tools/opt/tinytc-opt)")
            q.add_argument("--time", type=seconds_of, default=1800.0,
                           help="campaign length (default 30m)")
            q.add_argument("--case-timeout", type=float, default=120.0,
                           help="seconds per corpus case or ctest test (default 120)")
            q.add_argument("--limit", type=seconds_of, default=None,
                           help="bound of each run (default: campaign time + 15m, else 2h)")
        q.add_argument("--memory", type=lambda s: int(float(s) * (1 << 30)), default=16 << 30,
                       help="address-space bound of each run in GiB (default 16)")

    r = sub.add_parser("run", help="one scenario into a tracefile")
    r.add_argument("scenario", choices=SCENARIOS)
    build_options(r)
    r.add_argument("--json", required=True, help="the tracefile to write")
    a = sub.add_parser("all", help="every scenario, the union of ours, the table")
    build_options(a)
    a.add_argument("--out", required=True, help="directory for the tracefiles")
    a.add_argument("--markdown", action="store_true")
    u = sub.add_parser("union", help="add tracefiles")
    u.add_argument("tracefiles", nargs="+")
    build_options(u, compiler=False)
    u.add_argument("--json", required=True)
    t = sub.add_parser("table", help="the tables of LABEL=FILE.json tracefiles")
    t.add_argument("traces", nargs="+", type=labelled)
    t.add_argument("--blocks", type=int, default=25, help="unreached blocks listed")
    t.add_argument("--gains", type=int, default=25, help="files listed as reached by us only")
    t.add_argument("--markdown", action="store_true", help="Markdown tables, for the docs")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        with stop_on_signals(), scratch_dir("tinytc-coverage-") as scratch:
            return _main(args, Path(scratch))
    except Refused as e:
        print(f"tinytc_coverage: {e}", file=sys.stderr)
        return 2
    except RunFailed as e:
        print(f"tinytc_coverage: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt as e:
        print("tinytc_coverage: stopped", file=sys.stderr)
        return exit_status_of(e)


def _main(args: argparse.Namespace, scratch: Path) -> int:
    if args.command == "table":
        print_report({label: load_trace(path) for label, path in args.traces},
                     blocks=args.blocks, gains=args.gains, markdown=args.markdown)
        return 0
    if args.command == "union":
        union(Path(args.build), args.tracefiles, Path(args.json).resolve(), scratch,
              args.memory)
        return 0
    if args.command == "run":
        print(run_scenario(args.scenario, args, Path(args.json).resolve(), scratch))
        return 0
    out = Path(args.out).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Refused(f"{args.out}: {e.strerror or e}") from None
    version = VERSIONS[args.tinytc_version]
    names = [n for n in SCENARIOS if n != "passes" or version.passes is not None]
    files = {name: out / f"{name}.json" for name in names + ["union"]}
    for name in names:
        print(run_scenario(name, args, files[name], scratch))
    union(Path(args.build), [str(files[n]) for n in OURS if n in names], files["union"],
          scratch, args.memory)
    print_report({name: load_trace(str(path)) for name, path in files.items()},
                 markdown=args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
