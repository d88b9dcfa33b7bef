#!/usr/bin/env python3
"""Build and run a compiler's output for this report; compare with host_expected.npz.

usage: python3 host.py COMPILED [--device SUBSTRING] [--build-only]

COMPILED is the compiler's output: OpenCL C (.cl) or SPIR-V (.spv, built from IL).
--device picks the first OpenCL device whose "platform vendor device" names contain
SUBSTRING (case-insensitive); default: the first device that can build COMPILED.
--build-only: only build (for findings whose code does not build).
Exit status: 0 the results are the expected ones (or, with --build-only, it builds);
1 they differ, the code does not build, or the run fails (the bug); 2 nothing could be
tested (no such device, pyopencl missing, a bad command line).
Needs numpy and pyopencl only."""
import argparse
import json
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(text, status=2):
    print(f"host.py: {text}", file=sys.stderr)
    sys.exit(status)


def devices(cl, il):
    for p in cl.get_platforms():
        for d in p.get_devices():
            if il and not getattr(d, "il_version", "").strip():
                continue  # takes no SPIR-V
            yield d


def build(cl, ctx, dev, code, il, options):
    prog = cl.Program(ctx, code) if il else cl.Program(ctx, code.decode("utf-8"))
    return prog.build(options=options, devices=[dev])


def same(want, got, rtol):
    """Elementwise: equal bits for integers; for floats NaN equals NaN, zeros keep their
    sign, others within rtol of the expected value."""
    if want.dtype.kind == "c":
        return same(want.real, got.real, rtol) & same(want.imag, got.imag, rtol)
    if want.dtype.kind != "f":
        return want == got
    both_nan = np.isnan(want) & np.isnan(got)
    exact = (want == got) & (np.signbit(want) == np.signbit(got))
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(want - got) <= rtol * np.abs(want)
    return both_nan | exact | (near & (want != 0) & np.isfinite(want))


def main():
    ap = argparse.ArgumentParser(description="run a compiler's output for this report")
    ap.add_argument("compiled")
    ap.add_argument("--device", default=None)
    ap.add_argument("--build-only", action="store_true")
    ns = ap.parse_args()
    warnings.filterwarnings("ignore")  # pyopencl's note on a build log that is not empty
    try:
        import pyopencl as cl
    except ImportError:
        fail("needs pyopencl (pip install pyopencl)")
    spec = json.load(open(os.path.join(HERE, "host.json")))
    try:
        code = open(ns.compiled, "rb").read()
    except OSError as e:
        fail(f"cannot read {ns.compiled}: {e.strerror}")
    il = spec["format"] == "spirv"
    options = spec["options"]
    found = None
    for dev in devices(cl, il):
        label = f"{dev.platform.name} {dev.platform.vendor} {dev.name}"
        if ns.device is not None:
            if ns.device.lower() not in label.lower():
                continue
        elif spec.get("needs") and spec["needs"] not in dev.extensions:
            continue
        ctx = cl.Context([dev])
        try:
            prog = build(cl, ctx, dev, code, il, options)
        except cl.Error as e:
            if ns.device is not None or ns.build_only:
                print(f"device: {dev.platform.name.strip()} | {dev.name.strip()} | driver "
                      f"{dev.driver_version}")
                print(f"expected: the code builds\nactual: it does not build:\n{e}")
                sys.exit(1)
            continue  # the default is the first device that can build it
        found = (dev, ctx, prog)
        break
    if found is None:
        what = f"matching '{ns.device}'" if ns.device else "that can build it"
        fail(f"no OpenCL device {what}" + (" (SPIR-V needs a device with an IL version)"
                                          if il else ""))
    dev, ctx, prog = found
    print(f"device: {dev.platform.name.strip()} | {dev.name.strip()} | driver "
          f"{dev.driver_version}")
    if ns.build_only:
        print("expected: the code builds\nactual: it builds")
        sys.exit(0)
    try:
        kernel = getattr(prog, spec["kernel"])
    except AttributeError:
        print(f"expected: a kernel named {spec['kernel']}\nactual: none in the module")
        sys.exit(1)
    inputs = np.load(os.path.join(HERE, "host_args.npz"))
    expected = np.load(os.path.join(HERE, "host_expected.npz"))
    q = cl.CommandQueue(ctx)
    mf = cl.mem_flags
    bufs, args = {}, []
    for p in spec["params"]:
        if p["kind"] == "buffer":
            if p["buffer"] not in bufs:
                host = inputs[p["buffer"]].copy()
                bufs[p["buffer"]] = (host, cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                                     hostbuf=host))
            args.append(bufs[p["buffer"]][1])
        elif p["kind"] == "scalar":
            args.append(inputs[p["value"]][()])
        else:  # "pointers": member i is buffer + byte offset i (formed on the device)
            if p["buffer"] not in bufs:
                host = inputs[p["buffer"]].copy()
                bufs[p["buffer"]] = (host, cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                                                     hostbuf=host))
            offs = np.array(p["byte_offsets"], np.int64)
            ptrs = cl.Buffer(ctx, mf.READ_WRITE, 8 * len(offs))
            fill = cl.Program(ctx, "kernel void f(global char* b, global long* o, "
                                   "global ulong* p) { size_t i = get_global_id(0); "
                                   "p[i] = (ulong)(b + o[i]); }").build()
            ob = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=offs)
            fill.f(q, (len(offs),), None, bufs[p["buffer"]][1], ob, ptrs)
            args.append(ptrs)
    local = tuple(spec["local"])
    if not any(local):  # the kernel's reqd_work_group_size
        local = tuple(kernel.get_work_group_info(
            cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, dev))
    if not any(local):
        fail(f"kernel {spec['kernel']} has no reqd_work_group_size")
    grid = spec["grid"]
    if spec["launch"] == "v0.3":  # work-groups along axis 2
        glob = (local[0], local[1], grid[0])
    else:  # v0.4: the grid itself
        glob = (local[0] * grid[0], local[1] * grid[1], grid[2])
    try:
        kernel(q, glob, (local[0], local[1], 1), *args)
        for host, buf in bufs.values():
            cl.enqueue_copy(q, host, buf)
        q.finish()
    except cl.Error as e:
        print(f"expected: the kernel runs\nactual: {e}")
        sys.exit(1)
    bad = 0
    for name, (host, _) in bufs.items():
        want = expected[name]
        ok = same(want, host, spec["rtol"])
        where = np.flatnonzero(~ok)
        bad += len(where)
        for i in where[:8]:
            print(f"{name}[{i}]: expected {want[i].item()!r}, actual {host[i].item()!r}")
        if len(where) > 8:
            print(f"{name}: {len(where) - 8} more elements differ")
    if bad:
        print(f"MISMATCH: {bad} element(s) differ ({spec['what']})")
        sys.exit(1)
    print("OK: every buffer holds the expected values")
    sys.exit(0)


main()
