"""kernel.cl on a pocl release (default 3.0) with inputs.npz; exit 1 when C61 or C88 differ
from expected.npz (what pocl 3.1, Intel's CPU runtime, Oclgrind and pocl 3.0 with
-cl-opt-disable compute), 0 when they agree, 2 when the release is not installed.

    python host.py [RELEASE] [BUILD OPTIONS...]   e.g.  python host.py 3.0 -cl-opt-disable

Needs numpy and pyopencl only."""
import os
import sys

import numpy as np
import pyopencl as cl

HERE = os.path.dirname(os.path.abspath(__file__))
release = sys.argv[1] if len(sys.argv) > 1 else "3.0"
options = sys.argv[2:]
devices = [d for p in cl.get_platforms() if f"PoCL {release}" in p.version
           for d in p.get_devices()]
if not devices:
    print(f"no pocl {release} platform here")
    sys.exit(2)
dev = devices[0]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx)
print("device:", dev.platform.version, "|", dev.name)
prog = cl.Program(ctx, open(os.path.join(HERE, "kernel.cl")).read()).build(options=options)
inputs = np.load(os.path.join(HERE, "inputs.npz"))
expected = np.load(os.path.join(HERE, "expected.npz"))
mf = cl.mem_flags
host = {n: inputs[n].copy() for n in ("B14", "B17", "B19", "C61", "C88")}
bufs = {n: cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=h) for n, h in host.items()}
prog.k(q, (64, 2, 1), (64, 2, 1), *bufs.values())
wrong = 0
for n in ("C61", "C88"):
    cl.enqueue_copy(q, host[n], bufs[n])
    q.finish()
    bad = np.flatnonzero(~((host[n] == expected[n])
                           | (np.isnan(host[n]) & np.isnan(expected[n]))))
    wrong += len(bad)
    for i in bad[:5]:
        print(f"{n}[{i}]: expected {expected[n][i]}, got {host[n][i]}")
    if len(bad) > 5:
        print(f"{n}: {len(bad) - 5} more elements differ")
print("wrong elements:", wrong)
sys.exit(1 if wrong else 0)
