"""The generator writes what the original compiler's users write: names reused by sibling
regions (and by the code after a region) and `if %c -> ()`. The share of such kernels in a
fixed sample is measured here and must stay substantial."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, Phase, given, seed, settings

from fuzz.strategies import FuzzCase, kernels
from tlinterp import ir
from tlinterp.printer import format_program

SAMPLE = 150  # Hypothesis starts with small kernels: 60 held few if-statements


def reuses_a_name(f: ir.Function) -> bool:
    names = Counter(a.value.name for a in f.args)
    for inst in ir.walk(f.body):
        if isinstance(inst, (ir.For, ir.Foreach)):
            names[inst.var.name] += 1
        names.update(v.name for v in ir.results_of(inst))
    return any(n > 1 for n in names.values())


def resultless_ifs(f: ir.Function) -> tuple[int, int]:
    """(result-less ifs, those of them written `-> ()`)."""
    ifs = [i for i in ir.walk(f.body) if isinstance(i, ir.If) and not i.results]
    return len(ifs), sum(i.empty_arrow for i in ifs)


def share(strategy) -> tuple[float, float]:
    """The share of kernels that reuse a name and the share of result-less ifs written
    `-> ()`, over a fixed sample."""
    seen = Counter()

    @seed(20261122)
    @settings(max_examples=SAMPLE, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case: FuzzCase):
        f = case.program.functions[0]
        seen["kernels"] += 1
        seen["reuse"] += reuses_a_name(f)
        ifs, arrows = resultless_ifs(f)
        seen["ifs"] += ifs
        seen["arrow"] += arrows
        if arrows:
            assert "-> () {" in format_program(case.program)  # printed, hence reparsed

    collect()
    return seen["reuse"] / seen["kernels"], seen["arrow"] / max(seen["ifs"], 1)


def test_share_of_reused_names_and_empty_result_lists():
    reuse, arrow = share(kernels())
    print(f"{reuse:.0%} of kernels reuse a name; {arrow:.0%} of result-less ifs write -> ()")
    assert reuse >= 0.15 and arrow >= 0.3
