"""The generator writes what the original compiler's users write: names reused by sibling
regions (and by the code after a region) and `if %c -> ()`. The share of such kernels in a
fixed sample is measured here and must stay substantial."""

from __future__ import annotations

from collections import Counter

from fuzz.strategies import sample_function, to_program
from tlinterp.lang import ir
from tlinterp.lang.v03.printer import format_program

SAMPLE = 400  # kernels drawn by plain sampling: a few dozen result-less if-statements


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


def share() -> tuple[float, float]:
    """The share of kernels that reuse a name and the share of result-less ifs written
    `-> ()`, over a fixed sample. Plain random sampling (seeds 0..SAMPLE-1), not Hypothesis:
    a Hypothesis sample with a fixed seed still depends on what ran before it in the process
    (its pool of constants comes from the modules loaded), and held too few ifs to be stable."""
    seen = Counter()
    for s in range(SAMPLE):
        f, _, _, _ = sample_function(s)
        seen["kernels"] += 1
        seen["reuse"] += reuses_a_name(f)
        ifs, arrows = resultless_ifs(f)
        seen["ifs"] += ifs
        seen["arrow"] += arrows
        if arrows:
            assert "-> () {" in format_program(to_program([f]))  # printed, hence reparsed
    return seen["reuse"] / seen["kernels"], seen["arrow"] / max(seen["ifs"], 1)


def test_share_of_reused_names_and_empty_result_lists():
    reuse, arrow = share()
    print(f"{reuse:.0%} of kernels reuse a name; {arrow:.0%} of result-less ifs write -> ()")
    assert reuse >= 0.15 and arrow >= 0.3
