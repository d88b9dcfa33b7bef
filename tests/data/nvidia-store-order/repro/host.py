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
