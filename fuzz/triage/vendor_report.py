"""`tlfuzz report`: a finding of an external compiler (tinytc) as a report its maintainer can
act on without our tools. The output directory holds one entry point, `repro.sh
[PATH-TO-COMPILER]` (exit 1 while the bug is there, 0 once it is fixed, 2 when nothing could be
tested), our minimal kernel, and for a run-time finding a numpy+pyopencl `host.py`
(fuzz/triage/vendor_host.py) with the arguments in the compiler's calling convention
(tlgpu/lowering/callconv.py, the one place of both conventions).

The facts of a finding are declared once, in `finding.json` beside its kernel (see
`Meta`); a saved `tlfuzz` finding (NAME.tl/.npz/.txt) without one gets them from its kind and
its implementation. docs/findings.md describes the layout and the exit statuses.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from dataclasses import asdict, dataclass, field
from typing import Optional

import numpy as np

from tlinterp.io.outfile import save_npz, write_text

from .vendor_host import HOST_PY

# What repro.sh checks, by the class of the finding (the index orders them in this order).
KINDS = {
    "run": "wrong result",  # the code builds and runs; host.py compares
    "crash": "crash or internal error",  # of the compiler, on a valid or invalid program
    "hang": "hang",  # of the compiler
    "build": "code does not build",  # the compiler's output is refused by the device
    "roundtrip": "prints IR it cannot read back",  # an IR pass of tinytc-opt (tlfuzz --passes)
    "reject": "rejects a valid program",
    "accept": "accepts an invalid program",
}
SEVERITY = ("run", "crash", "hang", "build", "roundtrip", "reject", "accept")
TIMEOUT = 60  # seconds for one compiler run or one host.py run, unless finding.json says
OUTPUT = {"0.3.1": ("opencl-c", "kernel.cl"), "0.4.0": ("spirv", "kernel.spv")}
CONVENTION = {"0.3.1": "v0.3", "0.4.0": "v0.4"}
SPEC = "docs/manual/tensor-ir.rst"  # the language reference in tinytc's source, per release tag


class ReportError(Exception):
    """A finding that cannot be made into a report (exit 2 of `tlfuzz report`)."""


@dataclass
class Meta:
    """finding.json: what a report is about and how its reproducer checks it."""

    title: str
    kind: str  # a key of KINDS
    version: str  # "0.3.1" or "0.4.0"
    compiler: str = "tinytc"
    tool: str = "tinytc"  # the program run: tinytc, or tinytc-opt beside it
    flags: list[str] = field(default_factory=list)  # e.g. ["-d", "tgl"], ["-O0"]
    stdin: bool = False  # the kernel on standard input (where the file name matters)
    message: str = ""  # a regular expression the compiler's output matches while the bug is
    # there (reject, crash: the message; accept: a fixed compiler must name a place)
    timeout: int = TIMEOUT
    rtol: float = 0.0  # relative tolerance of float results (0: exact, sign of zero too)
    build_options: list[str] = field(default_factory=lambda: ["-cl-std=CL2.0",
                                                              "-cl-mad-enable"])
    spec_section: str = ""
    spec_quote: str = ""  # at most one sentence
    disputed: str = ""  # non-empty: the other reading; the index lists it apart
    plant: list[str] = field(default_factory=list)  # [regex, replacement]: the bug planted
    # in our own lowering's output, for the tests (tests/test_vendor_reports.py)
    upstream: str = "not yet reported"
    func: str = ""  # the function of a file with several (its kernel); "": the only one
    groups: list[int] = field(default_factory=list)  # the grid (X, Y, Z); []: as tlrun's

    @property
    def format(self) -> str:
        return OUTPUT[self.version][0]

    @property
    def output(self) -> str:
        return OUTPUT[self.version][1]


def load_meta(directory: str) -> Meta:
    path = os.path.join(directory, "finding.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        meta = Meta(**data)
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, TypeError) as e:
        raise ReportError(f"{path}: {e}") from None
    if meta.kind not in KINDS:
        raise ReportError(f"{path}: kind '{meta.kind}' is not one of {', '.join(KINDS)}")
    if meta.version not in OUTPUT:
        raise ReportError(f"{path}: version '{meta.version}' is not one of "
                          f"{', '.join(OUTPUT)}")
    return meta


def save_meta(meta: Meta, directory: str) -> None:
    default = Meta(title="", kind="run", version="0.3.1")
    data = {k: v for k, v in asdict(meta).items()
            if k in ("title", "kind", "version") or v != getattr(default, k)}
    write_text(os.path.join(directory, "finding.json"),
               json.dumps(data, indent=1, ensure_ascii=False) + "\n")


# --- the compiler's command -------------------------------------------------------------

def compiler_argv(meta: Meta, compiler: str = "tinytc", kernel: str = "kernel.tl") -> list[str]:
    """The exact command, as words; the kernel comes on stdin when meta.stdin."""
    tool = compiler if meta.tool == "tinytc" else _beside(compiler, meta.tool)
    return [tool, *meta.flags, *([] if meta.stdin else [kernel])]


def _beside(compiler: str, tool: str) -> str:
    d = os.path.dirname(compiler)
    return os.path.join(d, tool) if d else tool


def command_line(meta: Meta, compiler: str = "tinytc") -> str:
    words = " ".join(shlex.quote(w) for w in compiler_argv(meta, compiler))
    redirect = " < kernel.tl" if meta.stdin else ""
    out = f" > {meta.output}" if meta.kind in ("run", "build") else " > /dev/null"
    if meta.kind == "roundtrip":  # what the pass printed goes to the tool's own checker
        checker = shlex.quote(compiler_argv(meta, compiler)[0])
        out = f" > printed.tl && {checker} -p check-ir printed.tl"
    return words + redirect + out


# --- host.json: the parameters in the compiler's calling convention ---------------------

def _host_array(a: np.ndarray) -> np.ndarray:
    """An array numpy alone can load: bf16 (ml_dtypes) as its 16-bit patterns."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind not in "biufc":
        a = a.view(f"u{a.dtype.itemsize}")
    return a


def _ctype(t) -> str:
    from tlgpu.lowering.ctypes_map import C_TYPES

    # the reports' kernel signatures in plain OpenCL C: f16 and bf16 as their 16 bits (the
    # lowering's own names for them, tl_f16/tl_bf16, are typedefs a maintainer never sees)
    return "ushort" if t.value in ("f16", "bf16") else C_TYPES[t]


def _extent(shape, strides) -> int:
    return 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0


ALIGN = 128  # bytes: every member pointer is this aligned (the devices' base alignment)


def _roundup(n: int, k: int) -> int:
    return (n + k - 1) // k * k


def host_spec(function, args: dict, expected: dict, convention: str,
              groups: Optional[int] = None) -> tuple[list[dict], dict, dict, tuple]:
    """(params, inputs, outputs, grid): every kernel parameter in `convention`'s order with
    its C type, the buffers and scalars before the launch and the buffers after a correct run
    (from the .npz convention's `args` and `expected`), and the launch grid."""
    from tlgpu.lowering.callconv import argument_params
    from tlinterp.io.args import GroupArg, MemrefArg, bind
    from tlinterp.lang.types import GroupType, MemrefType

    before, after = bind(function, args), bind(function, {**args, **expected})
    params: list[dict] = []
    inputs: dict[str, np.ndarray] = {}
    outputs: dict[str, np.ndarray] = {}

    def scalar(key: str, value, ctype: str) -> None:
        inputs[key] = _host_array(np.asarray(value))
        params.append({"name": key, "ctype": ctype, "kind": "scalar", "value": key})

    def index_buffer(key: str, values: list[int]) -> None:
        arr = np.array(values or [0], np.int64)
        inputs[key] = outputs[key] = arr
        params.append({"name": key, "ctype": "global long*", "kind": "buffer",
                       "buffer": key})

    for a in function.args:
        name, t = a.value.name, a.type
        v, w = before.values[name], after.values[name]
        for p in argument_params(name, t, convention):
            key = name + p.suffix
            if isinstance(v, MemrefArg):
                if p.role == "data":
                    n = _extent(v.shape, v.strides)
                    inputs[name] = _host_array(v.buffer[v.offset:v.offset + max(n, 1)])
                    outputs[name] = _host_array(w.buffer[w.offset:w.offset + max(n, 1)])
                    params.append({"name": name, "ctype": f"global {_ctype(t.element)}*",
                                   "kind": "buffer", "buffer": name})
                else:
                    scalar(key, np.int64((v.shape if p.role == "shape"
                                          else v.strides)[p.mode]), "long")
            elif isinstance(v, GroupArg):
                assert isinstance(t, GroupType) and isinstance(t.memref, MemrefType)
                if p.role == "data":
                    item = v.members[0].buffer.itemsize if v.members else 1
                    lead = _roundup(v.offset * item, ALIGN)
                    ins, outs, offs, at = [], [], [], 0
                    for m, mw in zip(v.members, w.members):
                        n = _extent(m.shape, m.strides)
                        slot = _roundup(lead + n * item, ALIGN)
                        pad = np.zeros(slot // item, m.buffer.dtype)
                        ins.append(pad.copy())
                        ins[-1][lead // item:lead // item + n] = m.buffer[m.offset:m.offset + n]
                        outs.append(pad.copy())
                        outs[-1][lead // item:lead // item + n] = \
                            mw.buffer[mw.offset:mw.offset + n]
                        offs.append(at + lead - v.offset * item)  # member i = a[i] + offset
                        at += slot
                    inputs[name] = _host_array(np.concatenate(ins))
                    outputs[name] = _host_array(np.concatenate(outs))
                    params.append({"name": name, "ctype":
                                   f"global {_ctype(t.memref.element)}*global*",
                                   "kind": "pointers", "buffer": name, "byte_offsets": offs})
                elif p.role in ("shape", "stride"):
                    index_buffer(key, [(m.shape if p.role == "shape" else m.strides)[p.mode]
                                       for m in v.members])
                elif p.role == "size":
                    scalar(key, np.int64(len(v.members)), "long")
                else:
                    scalar(key, np.int64(v.offset), "long")
            else:
                scalar(key, v, _ctype(t))
    count = before.num_groups(groups)
    return params, inputs, outputs, (count, 1, 1)


def signature(kernel: str, params: list[dict]) -> str:
    return f"kernel void {kernel}(" + ", ".join(f"{p['ctype']} {p['name']}"
                                                for p in params) + ")"


# --- repro.sh ------------------------------------------------------------------------------

REPRO_HEAD = """\
#!/usr/bin/env bash
# {title}
# tinytc {version}: {kind}. Usage: ./repro.sh [PATH-TO-TINYTC] [--device NAME]
# Exit status: 1 while the bug is there, 0 once it is fixed, 2 when nothing could be tested.
# Needs bash, timeout (coreutils){needs}.
set -u
here=$(cd "$(dirname "$0")" && pwd)
compiler=tinytc
if [ $# -gt 0 ] && [ "${{1#--}}" = "$1" ]; then compiler=$1; shift; fi
command -v "$compiler" > /dev/null || {{ echo "repro.sh: no compiler '$compiler'" >&2; exit 2; }}
tool=$compiler{tool_line}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cd "$here"
limit=${{REPRO_TIMEOUT:-{timeout}}}
echo "+ {shown}"
timeout -k 5 "$limit" {run} > "$tmp/out" 2> "$tmp/err"
status=$?
head -c 2000 "$tmp/err"
if [ $status -eq 126 ] || [ $status -eq 127 ]; then
  echo "repro.sh: cannot run $tool (exit status $status): nothing tested" >&2; exit 2
fi
"""

REPRO_TAIL = {
    "run": """\
if [ $status -ne 0 ]; then
  echo "expected: tinytc compiles the kernel; actual: exit status $status"
  exit 2
fi
mv "$tmp/out" "$tmp/{output}"
timeout -k 5 "$limit" python3 "$here/host.py" "$tmp/{output}" "$@"
status=$?
case $status in
  0|1|2) exit $status;;
  124|137) echo "expected: the kernel ends; actual: no answer within $limit s (the bug)";;
  *) echo "expected: host.py ends with 0 or 1; actual: it died with status $status"
     echo "(the OpenCL runtime crashed on the code: the bug)";;
esac
exit 1
""",
    "build": """\
if [ $status -ne 0 ]; then
  echo "expected: tinytc compiles the kernel; actual: exit status $status"
  exit 2
fi
mv "$tmp/out" "$tmp/{output}"
timeout -k 5 "$limit" python3 "$here/host.py" "$tmp/{output}" --build-only "$@"
status=$?
case $status in
  0|1|2) exit $status;;
  124|137) echo "expected: the kernel ends; actual: no answer within $limit s (the bug)";;
  *) echo "expected: host.py ends with 0 or 1; actual: it died with status $status"
     echo "(the OpenCL runtime crashed on the code: the bug)";;
esac
exit 1
""",
    "reject": """\
if [ $status -eq 0 ]; then
  echo "expected: exit 0 (a valid program); actual: exit 0 (fixed)"; exit 0
fi
echo "expected: exit 0 (a valid program); actual: exit status $status (the bug)"
exit 1
""",
    "crash": """\
if [ $status -eq 0 ]; then
  echo "expected: exit 0, no internal error or crash; actual: exit 0 (fixed)"; exit 0
fi
what="another error"
grep -Eq -- {message} "$tmp/err" "$tmp/out" && what="the reported error"
echo "expected: exit 0, no internal error or crash; actual: exit status $status, $what (the bug)"
exit 1
""",
    "hang": """\
if [ $status -eq 124 ] || [ $status -eq 137 ]; then
  echo "expected: the command ends; actual: no answer within $limit s (the bug)"; exit 1
fi
echo "expected: the command ends; actual: it ended with exit status $status (fixed)"
exit 0
""",
    "roundtrip": """\
if [ $status -ne 0 ]; then
  echo "expected: the pass prints the program; actual: exit status $status"; exit 2
fi
mv "$tmp/out" "$tmp/printed.tl"
echo "+ $tool -p check-ir printed.tl   (what it printed, read back)"
timeout -k 5 "$limit" "$tool" -p check-ir "$tmp/printed.tl" > "$tmp/out" 2> "$tmp/err"
status=$?
sed "s|$tmp/||g" "$tmp/err" | head -c 2000
if [ $status -eq 0 ]; then
  echo "expected: it reads back what it printed; actual: check-ir accepts it (fixed)"; exit 0
fi
echo "expected: it reads back what it printed; actual: check-ir exits $status on it (the bug)"
exit 1
""",
    "accept": """\
if [ $status -eq 0 ]; then
  echo "expected: an error (an invalid program); actual: exit 0 (the bug)"; exit 1
fi
if [ $status -ge 124 ]; then
  echo "expected: an error message; actual: exit status $status (a crash or timeout)"; exit 1
fi
# a fix names the place in the kernel (kernel.tl:LINE.COL, or <stdin>:LINE.COL)
if ! grep -Eq '(kernel\\.tl|<stdin>):[1-9][0-9]*\\.[0-9]' "$tmp/err" "$tmp/out"; then
  echo "expected: an error at a place in kernel.tl; actual: exit status $status without one"
  echo "(an internal error: the bug)"
  exit 1
fi
echo "expected: an error (an invalid program); actual: exit status $status, at a place (fixed)"
exit 0
""",
}


def repro_sh(meta: Meta) -> str:
    run = " ".join(['"$tool"', *(shlex.quote(w) for w in compiler_argv(meta)[1:])])
    if meta.stdin:
        run += " < kernel.tl"
    tool_line = ""
    if meta.tool != "tinytc":  # a program installed beside tinytc
        tool_line = (f'\ncase "$compiler" in */*) tool=$(dirname "$compiler")/{meta.tool};; '
                     f'*) tool={meta.tool};; esac')
    shown = command_line(meta, "tinytc" if meta.tool == "tinytc" else meta.tool)
    needs = ", python3 with numpy and pyopencl" if meta.kind in ("run", "build") else ""
    head = REPRO_HEAD.format(title=meta.title.replace("\n", " "), version=meta.version,
                             kind=KINDS[meta.kind], needs=needs, tool_line=tool_line,
                             timeout=meta.timeout, shown=shown, run=run)
    tail = REPRO_TAIL[meta.kind].format(output=meta.output,
                                        message=shlex.quote(meta.message or "a^"))
    return head + tail


# --- README --------------------------------------------------------------------------------

BEGIN = "<!-- generated by `tlfuzz report` (fuzz/triage/vendor_report.py) -->"
END = "<!-- end of the generated part -->"


def readme_block(meta: Meta, kernel: str = "", params: Optional[list[dict]] = None,
                 grid: tuple = (1, 1, 1), local: str = "the kernel's reqd_work_group_size"
                 ) -> str:
    target = "default target `pvc`" + (", default -O2" if meta.version == "0.4.0" else "")
    if meta.flags:
        target = f"`{' '.join(meta.flags)}`"
    tool = f"{meta.tool}, " if meta.tool != "tinytc" else ""
    what = "OpenCL C" if meta.format == "opencl-c" else "SPIR-V"
    if meta.tool != "tinytc":  # an IR pass driver: it prints the rewritten program
        what = (f"the rewritten program (`repro.sh` runs the {meta.tool} installed beside "
                "PATH-TO-TINYTC)")
    lines = [BEGIN, "",
             f"- Compiler: tinytc v{meta.version} ({tool}{target}); its output is {what}.",
             f"- Class: {KINDS[meta.kind]}. Upstream: {meta.upstream}."]
    if meta.spec_section:
        quote = f": \"{meta.spec_quote}\"" if meta.spec_quote else ""
        lines.append(f"- Spec: \"Tensor language reference\" > \"{meta.spec_section}\" "
                     f"(tinytc's {SPEC} at tag v{meta.version}){quote}")
    if meta.disputed:
        lines.append(f"- Disputed: {meta.disputed}")
    lines += ["", "## Reproduce", "", "```",
              "./repro.sh [PATH-TO-TINYTC] [--device NAME]   # exit 1: the bug, 0: fixed, "
              "2: not tested",
              "```", "",
              f"It runs, in this directory (within {meta.timeout} s; `REPRO_TIMEOUT=S` "
              "changes that):", "", "```", command_line(meta), "```", ""]
    if meta.stdin:
        lines += ["The kernel comes on standard input: the outcome depends on the file name "
                  "(see below).", ""]
    if meta.kind in ("run", "build"):
        opts = " ".join(meta.build_options)
        lines += [f"then `python3 host.py {meta.output}"
                  + (" --build-only" if meta.kind == "build" else "")
                  + "` (numpy and pyopencl only): it builds the module with `" + opts
                  + "` on `--device NAME` (default: the first OpenCL device that can build "
                  "it" + (" and takes SPIR-V" if meta.format == "spirv" else
                          " and has sub-groups") + ")"
                  + ("." if meta.kind == "build" else
                     ", runs it and prints expected against actual at the first differing "
                     "elements.")]
    if meta.kind == "run" and params is not None:
        conv = CONVENTION[meta.version]
        order = ("per argument its value or data pointer, then mode by mode a `?` size "
                 "then a `?` stride; a group's pointer array, its dope-vector arrays and its "
                 "`?` offset last" if conv == "v0.3" else
                 "per argument its value or data pointer, then every `?` size, then every "
                 "`?` stride; a group's pointer array, then its dope-vector arrays, its `?` "
                 "size and its `?` offset")
        launch = (f"global ({local.split('x')[0] if 'x' in local else 'W0'}, W1, "
                  f"{grid[0]}) work-items, work-groups along axis 2"
                  if conv == "v0.3" else
                  f"global (W0·{grid[0]}, W1·{grid[1]}, {grid[2]}), local (W0, W1, 1)")
        lines += ["", f"Calling convention of tinytc v{meta.version} ({order}); host.py "
                  "binds:", "", "```", signature(kernel, params), "```", "",
                  f"Launch: {launch}, (W0, W1) = the kernel's reqd_work_group_size. "
                  "host.json lists the parameters; host_args.npz holds the values before the "
                  "launch, host_expected.npz the buffers after a correct run (group members "
                  f"each at a {ALIGN}-byte aligned address; bf16 as 16-bit patterns)."]
    lines += ["", END, ""]
    return "\n".join(lines)


def merge_readme(old: str, block: str) -> str:
    """The README with `block` after its title: a previous generated block and an old
    `## Reproduce` section (our tools' commands) are replaced."""
    text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n*", "", old, flags=re.S)
    text = re.sub(r"\n## Reproduce\n.*?(?=\n## |\Z)", "\n", text, flags=re.S)
    text = text.rstrip() + "\n"
    title, _, rest = text.partition("\n")
    return f"{title}\n\n{block}\n{rest.lstrip()}"


# --- the report ----------------------------------------------------------------------------

def write_report(src: str, out: str, meta: Optional[Meta] = None) -> str:
    """Make the report of finding directory `src` in `out` (which may be `src`); returns
    `out`. ReportError when the finding is incomplete."""
    import tlinterp
    from tlinterp.io.args import load_npz
    from tlinterp.lang.diagnostics import TLError

    meta = meta or load_meta(src)
    kernel_path = os.path.join(src, "kernel.tl")
    try:
        with open(kernel_path, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        raise ReportError(f"cannot read {kernel_path}: {e.strerror}") from None
    os.makedirs(out, exist_ok=True)
    same = os.path.realpath(src) == os.path.realpath(out)
    if not same:
        for name in ("kernel.tl", "args.npz", "expected.npz", "README.md", "finding.json"):
            if os.path.exists(os.path.join(src, name)):
                shutil.copyfile(os.path.join(src, name), os.path.join(out, name))
        if not os.path.exists(os.path.join(out, "finding.json")):
            save_meta(meta, out)
    for stale in ("host.py", "host.json", "host_args.npz", "host_expected.npz"):
        if os.path.exists(os.path.join(out, stale)):
            os.unlink(os.path.join(out, stale))
    params, grid, kname = None, (1, 1, 1), ""
    if meta.kind in ("run", "build"):
        lang = "v0.4" if meta.version == "0.4.0" else "v0.3"
        try:
            program = tlinterp.check(tlinterp.parse(source, filename="kernel.tl", lang=lang))
        except TLError as e:
            raise ReportError(f"{kernel_path} does not check:\n{e}") from None
        try:
            fn = program.function(meta.func or None)
        except KeyError as e:
            raise ReportError(f"{kernel_path}: {e.args[0]} (finding.json: \"func\")") from None
        kname = fn.name
        spec = {"format": meta.format, "kernel": kname, "options": meta.build_options,
                "launch": CONVENTION[meta.version], "rtol": meta.rtol, "what": meta.title,
                "needs": "" if meta.format == "spirv" else "cl_intel_subgroups",
                "local": [0, 0, 0]}
        args_path = os.path.join(src, "args.npz")
        if os.path.exists(args_path):
            args = load_npz(args_path)
            exp_path = os.path.join(src, "expected.npz")
            if os.path.exists(exp_path):
                expected = load_npz(exp_path)
            else:  # what our tools compare with (the README's args.npz and expected.npz)
                expected = tlinterp.run(program, args, func=fn.name)
                save_npz(os.path.join(out, "expected.npz"), expected)
            try:
                params, inputs, outputs, grid = host_spec(fn, args, expected,
                                                          CONVENTION[meta.version])
            except TLError as e:
                raise ReportError(f"{args_path}: {e}") from None
            if meta.groups:
                grid = tuple(meta.groups) + (1,) * (3 - len(meta.groups))
            spec.update(params=params, grid=list(grid))
            save_npz(os.path.join(out, "host_args.npz"), inputs)
            save_npz(os.path.join(out, "host_expected.npz"), outputs)
        elif meta.kind == "run":
            raise ReportError(f"{src}: a run-time finding needs args.npz")
        else:
            spec.update(params=[], grid=[1, 1, 1])
        write_text(os.path.join(out, "host.json"), json.dumps(spec, indent=1) + "\n")
        _write_exec(os.path.join(out, "host.py"), HOST_PY)
    _write_exec(os.path.join(out, "repro.sh"), repro_sh(meta))
    readme = os.path.join(out, "README.md")
    old = open(readme, encoding="utf-8").read() if os.path.exists(readme) else \
        f"# tinytc {meta.version}: {meta.title}\n"
    block = readme_block(meta, kname, params, grid)
    write_text(readme, merge_readme(old, block))
    return out


def _write_exec(path: str, text: str) -> None:
    write_text(path, text)
    os.chmod(path, 0o755)


# --- a saved tlfuzz finding, and the command line ------------------------------------------

def meta_of_saved(base: str) -> tuple[Meta, str, str]:
    """(Meta, kernel path, arguments path) of a saved finding NAME (.tl/.npz/.txt) of an
    external compiler: the version from its implementation (opencl-c: tinytc 0.3.1, spirv:
    0.4.0), the flags from the command, the class from the finding's kind and message.

    The command line is only read, never run (its flags go, quoted, into repro.sh, which the
    maintainer runs with their own compiler), so no trust check (fuzz/campaign/trust.py)."""
    from .reproduce import UsageError, build_parser, saved_words

    try:
        req = build_parser().parse_args([base + ".tl"] + saved_words(base + ".txt"))
    except (UsageError, OSError, ValueError) as e:
        raise ReportError(f"cannot read the finding {base}: {e}") from None
    spec = req.impl or ""
    kind_of_impl, _, command = spec.partition(":")
    if kind_of_impl not in ("opencl-c", "spirv"):
        raise ReportError(f"{base} is a finding of '{spec}': a report is for an external "
                          "compiler (--impl opencl-c:... or spirv:...)")
    version = "0.4.0" if kind_of_impl == "spirv" else "0.3.1"
    words = shlex.split(command)
    flags = [w for w in words[1:] if "{" not in w]
    with open(base + ".txt", encoding="utf-8", errors="replace") as f:
        message = f.read().strip().splitlines()[-1] if os.path.getsize(base + ".txt") else ""
    name = os.path.basename(base)
    kind = "run"
    if "build failed" in message or "does not build" in message:
        kind = "build"
    elif name.startswith("backend-error") and "reject" in message:
        kind = "reject"
    title = f"{name}: {message[:100]}" if message else name
    grid = [] if req.groups is None else (
        [req.groups] if isinstance(req.groups, int) else list(req.groups))
    return (Meta(title=title, kind=kind, version=version, flags=flags, func=req.func or "",
                 groups=grid), base + ".tl", base + ".npz")


def report_finding(path: str, out: str) -> str:
    """A report in `out` of a finding directory (kernel.tl, finding.json, args.npz,
    expected.npz, README.md) or of a saved tlfuzz finding (NAME, NAME.tl, .npz or .txt)."""
    from .reproduce import finding_base

    if os.path.isdir(path):
        return write_report(path, out)
    base = finding_base(path)
    meta, tl, npz = meta_of_saved(base)
    if os.path.realpath(os.path.dirname(base)) == os.path.realpath(out):
        raise ReportError("--out must be a directory of its own, not the findings directory")
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(tl, os.path.join(out, "kernel.tl"))
    if os.path.exists(npz):
        shutil.copyfile(npz, os.path.join(out, "args.npz"))
    save_meta(meta, out)
    return write_report(out, out, meta)


def main(argv: Optional[list[str]] = None) -> int:
    import argparse
    import sys

    from tlinterp.lang.diagnostics import TLError

    p = argparse.ArgumentParser(
        prog="tlfuzz report",
        description="Write a stand-alone report of a finding of an external compiler "
                    "(tinytc): repro.sh [PATH-TO-TINYTC], our kernel, and for a run-time "
                    "finding host.py (numpy and pyopencl only). See docs/findings.md.",
        epilog="exit statuses: 0 written, 2 a bad command line or a finding that cannot be "
               "reported, 3 an internal error")
    p.add_argument("finding", metavar="FINDING_DIR_OR_FILE",
                   help="a report directory with kernel.tl and finding.json, or a saved "
                        "tlfuzz finding (NAME, NAME.tl, NAME.npz or NAME.txt)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the report's directory (may be FINDING_DIR itself)")
    try:
        ns = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        out = report_finding(ns.finding, ns.out)
    except ReportError as e:
        print(f"tlfuzz report: {e}", file=sys.stderr)
        return 2
    except TLError as e:
        print(f"tlfuzz report: {e}", file=sys.stderr)
        return 2
    except (KeyError, ValueError) as e:  # a kernel or arguments that do not fit
        print(f"tlfuzz report: {ns.finding}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"tlfuzz report: {e.filename or ns.out}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"tlfuzz report: wrote {out} (run {os.path.join(out, 'repro.sh')} "
          "[PATH-TO-TINYTC])")
    return 0


# --- the index of all findings -----------------------------------------------------------

INDEX_HEAD = """\
# Findings in other compilers

Every report below is a directory with `README.md`, our minimal `kernel.tl` and an executable
`repro.sh [PATH-TO-TINYTC] [--device NAME]` (exit 1 while the bug is there, 0 once it is
fixed, 2 when nothing could be tested); run-time reports add `host.py` (numpy and pyopencl
only). Written by `tlfuzz report DIR --out DIR` from each directory's `finding.json`; this
index by `python -m fuzz.triage.vendor_report corpus/findings`. Per release:
[tinytc-0.3.1/README.md](tinytc-0.3.1/README.md), [tinytc-0.4.0/README.md](tinytc-0.4.0/README.md).

By severity: wrong results and crashes first, then code that does not build, rejected valid
programs, accepted invalid programs.

| severity | tinytc | finding | report | upstream |
|---|---|---|---|---|
"""


def index_text(root: str) -> str:
    """corpus/findings/README.md: one line per report, by severity; disputed ones apart."""
    rows, disputed = [], []
    for compiler in sorted(os.listdir(root)):
        d = os.path.join(root, compiler)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not os.path.exists(os.path.join(d, name, "finding.json")):
                continue
            m = load_meta(os.path.join(d, name))
            link = f"[{name}]({compiler}/{name}/)"
            title = m.title.replace("|", "\\|")
            if m.disputed:
                disputed.append(f"- {link} (tinytc {m.version}): {title}. Readings: "
                                f"{m.disputed}")
                continue
            rows.append((SEVERITY.index(m.kind), m.version, name,
                         f"| {KINDS[m.kind]} | {m.version} | {title} | {link} | "
                         f"{m.upstream} |"))
    text = INDEX_HEAD + "\n".join(r[-1] for r in sorted(rows)) + "\n"
    if disputed:
        text += ("\n## Disputed or spec-silent\n\nNot counted as bugs above: the release's "
                 "text allows both readings.\n\n" + "\n".join(disputed) + "\n")
    return text


if __name__ == "__main__":
    import sys

    target = sys.argv[1] if len(sys.argv) > 1 else "corpus/findings"
    write_text(os.path.join(target, "README.md"), index_text(target))
