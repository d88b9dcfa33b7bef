"""A stand-alone reproducer for a vendor: one directory with the (reduced) kernel.cl, the
kernel's arguments, the expected and the actual buffer contents, a short pyopencl host script
that needs none of our packages, and a README naming the device, driver and build options.

    kernel.cl  args.json  inputs.npz  expected.npz  actual.npz  host.py  README.md
"""

from __future__ import annotations

import json
import os
from typing import Optional

import numpy as np

from fuzz.triage.clexec import Prepared
from tlinterp.io.args import GroupArg, MemrefArg, bind
from tlinterp.lang.types import GroupType

HOST = '''\
"""Run kernel.cl as described in args.json; compare the buffers with expected.npz.
Usage: python host.py [PLATFORM-SUBSTRING]   (needs numpy and pyopencl only)"""
import json
import sys

import numpy as np
import pyopencl as cl

spec = json.load(open("args.json"))
name = sys.argv[1].lower() if len(sys.argv) > 1 else spec["platform"].lower()
dev = next(d for p in cl.get_platforms() for d in p.get_devices()
           if name in f"{p.name} {p.vendor} {d.name}".lower())
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx)
print("device:", dev.platform.name, "|", dev.name, "| driver", dev.driver_version)
prog = cl.Program(ctx, open("kernel.cl").read()).build(options=spec["options"])
inputs = np.load("inputs.npz")
expected = np.load("expected.npz")
mf = cl.mem_flags
bufs, args = {}, []
for a in spec["args"]:
    if a["kind"] == "buffer":
        host = inputs[a["name"]].copy()
        bufs[a["name"]] = (host, cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host))
        if a["pass"]:  # a group's data is reached through its pointer array only
            args.append(bufs[a["name"]][1])
    elif a["kind"] == "scalar":
        args.append(np.dtype(a["dtype"]).type(a["value"]))
    elif a["kind"] == "local":
        args.append(cl.LocalMemory(a["bytes"]))
    else:  # "pointers": device addresses base + offsets[i], formed on the device
        ptrs = cl.Buffer(ctx, mf.READ_WRITE, 8 * max(1, len(a["offsets"])))
        fill = cl.Program(ctx, "kernel void f(global T* b, global long* o, global ulong* p)"
                          "{ size_t i = get_global_id(0); p[i] = (ulong)(b + o[i]); }"
                          .replace("T*", a["ctype"] + "*")).build()
        offs = np.array(a["offsets"] or [0], np.int64)
        ob = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=offs)
        fill.f(q, (max(1, len(a["offsets"])),), None, bufs[a["base"]][1], ob, ptrs)
        args.append(ptrs)
getattr(prog, spec["kernel"])(q, tuple(spec["global"]), tuple(spec["local"]), *args)
bad = 0
for key, (host, buf) in bufs.items():
    cl.enqueue_copy(q, host, buf)
    q.finish()
    for i in np.flatnonzero(host != expected[key]):
        bad += 1
        print(f"{key}[{i}]: expected {expected[key][i]}, got {host[i]}")
print("MISMATCH" if bad else "OK: every buffer holds the expected bytes")
sys.exit(1 if bad else 0)
'''


def describe_args(function, bound, local_bytes: int) -> tuple[list[dict], dict[str, np.ndarray]]:
    """The kernel's arguments in the order tlgpu's runtime passes them, and the buffers
    (padded to 8 bytes as the runtime pads them)."""
    from tlgpu.lowering.callconv import dynamic_params
    from tlgpu.lowering.ctypes_map import ctype
    from tlgpu.runtime.launch import _padded

    args: list[dict] = []
    bufs: dict[str, np.ndarray] = {}

    def buffer(host: np.ndarray, name: str, passed: bool = True) -> str:
        bufs[name] = _padded(np.ascontiguousarray(host))
        args.append({"kind": "buffer", "name": name, "pass": passed})
        return name

    def scalar(value) -> None:
        v = np.asarray(value)
        args.append({"kind": "scalar", "dtype": v.dtype.str, "value": v.item()})

    for a in function.args:
        name, t = a.value.name, a.type
        v = bound.values[name]
        if isinstance(v, MemrefArg):
            buffer(v.buffer[v.offset:], name)
            for p in dynamic_params(name, t):  # tlgpu's order: per mode, ? size then ? stride
                scalar(np.int64((v.shape if p.role == "shape" else v.strides)[p.mode]))
        elif isinstance(v, GroupArg):
            assert isinstance(t, GroupType)
            m = t.memref
            base = v.members[0].buffer if v.members else np.zeros(1, m.element.dtype)
            buffer(base, name, passed=False)
            args.append({"kind": "pointers", "base": name, "ctype": ctype(m.element),
                         "offsets": [int(mm.offset - v.offset) for mm in v.members]})
            for p in dynamic_params(name, m):
                buffer(np.array([(mm.shape if p.role == "shape" else mm.strides)[p.mode]
                                 for mm in v.members] or [0], np.int64), name + p.suffix)
            if t.offset is None:
                scalar(np.int64(v.offset))
        else:
            scalar(v)
    if local_bytes:
        args.append({"kind": "local", "bytes": local_bytes})
    return args, bufs


def write(directory: str, source: str, prepared: Prepared, case, expected: dict, actual: dict,
          info: dict, options: tuple[str, ...], triage_text: str,
          reduction: Optional[object] = None, reference: str = "pocl",
          reproduce: str = "") -> str:
    """Write the reproducer directory; returns its path."""
    os.makedirs(directory, exist_ok=True)
    fn = prepared.function
    spec, inputs = describe_args(fn, bind(fn, case.args), prepared.local_bytes)
    _, want = describe_args(fn, bind(fn, {**case.args, **expected}), prepared.local_bytes)
    _, got = describe_args(fn, bind(fn, {**case.args, **actual}), prepared.local_bytes)
    geo = prepared.geometry
    meta = {"platform": info.get("platform", ""), "kernel": prepared.kernel,
            "options": list(options), "global": [geo.wg0, geo.wg1, case.groups],
            "local": [geo.wg0, geo.wg1, 1], "args": spec}
    with open(os.path.join(directory, "kernel.cl"), "w") as f:
        f.write(source)
    with open(os.path.join(directory, "args.json"), "w") as f:
        json.dump(meta, f, indent=1)
    np.savez(os.path.join(directory, "inputs.npz"), **inputs)
    np.savez(os.path.join(directory, "expected.npz"), **want)
    np.savez(os.path.join(directory, "actual.npz"), **got)
    with open(os.path.join(directory, "host.py"), "w") as f:
        f.write(HOST)
    diffs = []
    for key in want:
        for i in np.flatnonzero(want[key] != got[key])[:20]:
            diffs.append(f"    {key}[{i}]: expected {want[key][i]}, got {got[key][i]}")
    size = ""
    if reduction is not None:
        size = (f"\nThe kernel body was reduced from {reduction.original_lines} to "
                f"{reduction.body_lines} lines ({reduction.tests} tests, "
                f"{reduction.seconds:.0f} s).\n")
    with open(os.path.join(directory, "README.md"), "w") as f:
        f.write(README.format(
            device=info.get("device", "?"), platform=info.get("platform", "?"),
            driver=info.get("driver", "?"), opencl=info.get("opencl", "?"),
            opencl_c=info.get("opencl_c", "?"), options=" ".join(options) or "(none)",
            kernel=prepared.kernel, glob=meta["global"], loc=meta["local"],
            diffs="\n".join(diffs) or "    (none recorded)", size=size,
            triage=triage_text, reference=reference,
            finding=FINDING.format(line=reproduce) if reproduce else ""))
    return directory


FINDING = """\
The tensor-language finding behind it reproduces with (exit 1 while the implementation
differs from the reference; see docs/triage.md of tensor-language-reference):

    {line}

"""

README = """\
# Wrong result of `{kernel}` on {device}

- platform: {platform}; device: {device}; driver: {driver}; {opencl}; {opencl_c}
- build options: `{options}`
- NDRange: global {glob}, local {loc}
{size}
`kernel.cl` is valid OpenCL C without undefined behaviour: Oclgrind (data-race,
out-of-bounds, uninitialised-value and API checks) reports nothing, and the reference
({reference}) computes the expected result; the triage below shows this device agreeing when
the same source is built with `-cl-opt-disable`.

Reproduce (numpy and pyopencl only):

    python host.py            # exit 1 and a list of differing elements on the device above
    python host.py pocl       # the expected bytes (exit 0)

`args.json` lists the kernel arguments in order; `inputs.npz` holds the buffers before the
launch, `expected.npz` after a correct run, `actual.npz` after the run on this device.
Differences (buffer[element]: expected, got):

{diffs}

{finding}How the difference was triaged:

```
{triage}
```
"""
