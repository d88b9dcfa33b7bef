"""Guard zones around the argument buffers of an isolated launch (tlgpu.runtime.isolated).

Each writable argument buffer is a sub-buffer in the middle of a larger buffer whose bytes
before and after it hold a known pattern. After the launch, a changed guard byte means the
kernel stored outside that argument: undefined behaviour that the OpenCL backend does not
locate, reported as an `ExecutionError` (exit 1) instead of results. Stores that land farther
than the guard's size away are not seen (the child process still keeps them from the caller).

Not used on Oclgrind, which checks every access itself: there an access just before a
sub-buffer would fall inside the larger buffer and go unreported.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from tlinterp.lang.diagnostics import ExecutionError

__all__ = ["Guards", "GUARD_BYTES"]

GUARD_BYTES = 4096
_FILL = 0xA5


class Guards:
    def __init__(self, dev):
        import pyopencl as cl

        self.cl = cl
        self.dev = dev
        align = max(1, dev.device.mem_base_addr_align // 8)  # sub-buffer origins align to it
        self.size = -(-GUARD_BYTES // align) * align
        self.zones: list[tuple[str, object, int]] = []  # (argument, whole buffer, body bytes)

    def buffer(self, body: np.ndarray, name: Optional[str]):
        """A device buffer holding `body`, with guards on both sides; returns the sub-buffer
        the kernel gets."""
        cl, g = self.cl, self.size
        raw = body.view(np.uint8).reshape(-1)
        whole = np.full(2 * g + raw.size, _FILL, np.uint8)
        whole[g:g + raw.size] = raw
        parent = cl.Buffer(self.dev.context,
                           cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=whole)
        self.zones.append((name or "?", parent, raw.size))
        return parent.get_sub_region(g, raw.size)

    def check(self, function_name: str,
              culprit: str = "the OpenCL backend does not locate it: run without --backend "
                             "to find it") -> None:
        """ExecutionError naming the first argument whose guard bytes changed; `culprit`
        ends the message (whose code it was, what to do)."""
        g = self.size
        for name, parent, n in self.zones:
            whole = np.empty(2 * g + n, np.uint8)
            self.cl.enqueue_copy(self.dev.queue, whole, parent)
            before = int(np.count_nonzero(whole[:g] != _FILL))
            after = int(np.count_nonzero(whole[g + n:] != _FILL))
            if before or after:
                where = " and ".join(
                    f"{k} byte(s) {side}" for k, side in ((before, "before its start"),
                                                          (after, "after its end")) if k)
                raise ExecutionError(
                    f"@{function_name} stored outside argument '{name}' on the device ({where} "
                    f"changed): undefined behaviour, so no results are reported; {culprit}")
