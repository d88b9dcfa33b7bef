"""Red zones: a write outside an argument's logical view is a finding on either side, naming
the buffer, the element offset and the instructions that write that argument."""

from __future__ import annotations

import numpy as np
import pytest

import tlinterp
from fuzz.campaign.harness import _interp, differential
from fuzz.strategies import FuzzCase
from tlinterp.io.args import RedZones, bind, red_zones

# %x has stride 2: every other element is a gap that only the sentinel may occupy
STRIDED = """
func @k(%x: memref<f32x4,strided<2>>, %y: memref<f32x4>) {
  %g = group_id
  %v = load %y[1] : memref<f32x4>
  store %v, %x[2] : memref<f32x4,strided<2>>
}
"""


def case() -> FuzzCase:
    program = tlinterp.check(tlinterp.parse(STRIDED))
    x = np.arange(4, dtype=np.float32)
    y = np.arange(4, dtype=np.float32) + 10
    return FuzzCase(program, "k", {"x": x, "y": y}, 1)


def test_bound_buffers_get_guards_and_sentinel_gaps():
    c = case()
    with red_zones(guard_bytes=64) as zones:
        bound = bind(c.program.functions[0], c.args)
    x = bound.values["x"]
    assert x.offset == 16  # 64 guard bytes of f32
    assert x.buffer.view(np.uint8)[:64].tolist() == [RedZones.SENTINEL] * 64
    assert x.buffer[x.offset + 1].view(np.uint32) == 0xA5A5A5A5  # the gap after x[0]
    np.testing.assert_array_equal(x.view(), c.args["x"])
    assert zones.damaged() == []
    x.buffer[x.offset + 3] = 0.0  # a write into the gap after x[1]
    (name, guard, idx), = zones.damaged()
    assert (name, guard, idx.tolist()) == ("x", 16, [19])


def test_interpreter_out_of_view_write_is_a_finding(monkeypatch):
    from tlinterp.interp.execute import DISPATCH
    from tlinterp.lang import ir

    real = DISPATCH[ir.Store]

    def one_past(self, inst, env, lanes, col):  # a planted bug: also writes the next element
        real(self, inst, env, lanes, col)
        dst = env.get(inst.operand.name)
        dst.buf.data[dst.off + 2 * 2 + 1] = 7.0

    monkeypatch.setitem(DISPATCH, ir.Store, one_past)
    out, finding = _interp(case())
    assert out is None and finding.kind == "red-zone"
    assert "the interpreter" in finding.message
    assert "%x: element offset +5 (an element no view covers" in finding.message
    assert "store at <input>:5" in finding.message


@pytest.mark.opencl
def test_opencl_out_of_view_write_is_a_finding(monkeypatch):
    import tlgpu.runtime.launch as rt

    # a planted miscompilation: the store also writes the element before the view's start
    def before(src: str) -> str:
        return src.replace("v_x[(((long)2L)) * 2] = v_v;", "v_x[(((long)2L)) * 2] = v_v; "
                           "v_x[-1] = v_v;")

    monkeypatch.setattr(rt, "SOURCE_FILTER", before)
    found = differential([case()], device="pocl")
    assert [f.kind for f in found] == ["red-zone"], [str(f) for f in found]
    assert "the OpenCL side" in found[0].message
    assert "%x: element offset -1 (before the buffer's first element)" in found[0].message
    monkeypatch.setattr(rt, "SOURCE_FILTER", None)
    assert differential([case()], device="pocl") == []
