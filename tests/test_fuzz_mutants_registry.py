"""The mutation registry (fuzz.mutants.lowering_v03): enough mutants across every category, and
every source rewrite still matches code the current lowering emits for generated kernels (a
rewrite that never matches could never be killed: the bench counts it as not applicable)."""

from __future__ import annotations

import re

import pytest

from fuzz.mutants import lowering_v03 as mutations
from fuzz.mutants import registry
from fuzz.strategies import sample_function, to_program
from tlgpu import LoweringConfig
from tlgpu.lowering.program import lower_program


def test_at_least_25_mutants_spanning_every_category():
    assert len(mutations.MUTATIONS) >= 25
    seen = {m.category for m in mutations.MUTATIONS.values()}
    assert seen == set(mutations.CATEGORIES)
    assert "crash" in registry.known() and "crash" not in mutations.MUTATIONS


@pytest.fixture(scope="module")
def sources() -> list[str]:
    out = []
    configs = [LoweringConfig(), LoweringConfig(register_tiles=False),
               LoweringConfig(local_staging_min_reuse=1)]
    for seed in range(60):
        fn, _, _, _ = sample_function(seed)
        out.append(lower_program(to_program([fn]), None, configs[seed % 3]).source)
    # and the first generated kernels (seeds bounded: a generator that stops reaching a path
    # leaves its mutants missing below) that take NVIDIA's tensor-core paths: two whose gemm
    # chain is fused, one with a narrow tile column, and, for the operands loaded two K steps
    # at a time (k_pairs: streamed operands, fuzz.gen.function.streamed_operand), one where B
    # is loaded in pairs and one where an operand is loaded one value at a time beside a pair;
    # each seed is lowered once, for all of them
    wanted = {"passed in registers": 2, r"tl_dshfl_xor\(": 1, r"tl_b\d+_\w+_v = ": 1,
              r"\(tl_k\d+ \+ 1\)": 1}
    fused = []
    for seed in range(2000):
        if not any(wanted.values()):
            break
        fn, _, _, _ = sample_function(seed)
        src = lower_program(to_program([fn]), None, LoweringConfig(tensor_cores=16)).source
        hits = [pat for pat, n in wanted.items() if n and re.search(pat, src)]
        for pat in hits:
            wanted[pat] -= 1
        if hits:
            fused.append(src)
    return out + fused


def test_every_source_rewrite_applies_to_generated_kernels(sources, monkeypatch):
    import tlgpu.runtime.launch as rt

    missing = []
    for m in mutations.MUTATIONS.values():
        monkeypatch.setattr(rt, "SOURCE_FILTER", None)
        if m.install.__qualname__.split(".")[0] != "_filter":
            continue  # rule patches: the bench checks those (they patch modules for good)
        m.install()
        mutations.HITS[0] = 0
        changed = sum(rt.SOURCE_FILTER(s) != s for s in sources)
        if not changed or not mutations.HITS[0]:
            missing.append(m.name)
    assert missing == []


def test_tlfuzz_names_the_known_mutations_and_checks_the_database(capsys):
    from fuzz.campaign.cli import build_parser, main

    assert main(["--mutation", "no-such-bug", "--time", "1"]) == 2
    err = capsys.readouterr().err
    assert "unknown mutation 'no-such-bug'" in err and "rem-sign" in err
    try:
        import redis  # noqa: F401
    except ImportError:
        assert main(["--database", "redis://localhost:1", "--time", "1"]) == 2
        assert "needs the 'redis' package" in capsys.readouterr().err
    import os

    assert build_parser().parse_args([]).jobs == (os.cpu_count() or 1)


def _rule_state() -> list:
    """Every attribute a rule-patch mutant may replace: the lowering modules' and classes'
    namespaces and the lowering's dispatch table."""
    import tlgpu.lowering.collectives as lc
    import tlgpu.lowering.function as lf
    import tlgpu.lowering.memory as mem
    import tlgpu.lowering.scalar as S
    import tlgpu.lowering.views as tv

    owners = [lf, lc, S, tv, mem, lf.FunctionLowerer, tv.View]
    return [(o, dict(vars(o))) for o in owners] + [(lf.LOWER, dict(lf.LOWER))]


def _restore(state: list) -> None:
    for owner, saved in state:
        if isinstance(owner, dict):
            owner.clear()
            owner.update(saved)
            continue
        for k, v in saved.items():
            if vars(owner).get(k) is not v:
                setattr(owner, k, v)


def test_every_rule_patch_applies_to_generated_kernels():
    """A rule patch must reach the rule the lowering really calls (the dispatch table holds
    the functions, so patching only the class attribute would be a silent no-op)."""
    programs = []
    for seed in range(40):
        fn, _, _, _ = sample_function(seed)
        programs.append(to_program([fn]))
    configs = [LoweringConfig(), LoweringConfig(register_tiles=False)]
    missing = []
    for m in mutations.MUTATIONS.values():
        if m.install.__qualname__.split(".")[0] == "_filter":
            continue
        state = _rule_state()
        try:
            m.install()
            mutations.HITS[0] = 0
            for k, p in enumerate(programs):
                lower_program(p, None, configs[k % 2])
            if not mutations.HITS[0]:
                missing.append(m.name)
        finally:
            _restore(state)
    assert missing == []
