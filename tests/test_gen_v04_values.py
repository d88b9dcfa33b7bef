"""The value kinds the v0.4 generators make so that rounding and NaN rules are observable
(fuzz/gen/v04.py `gen_lowp_special`, fuzz/gen/spmd_coop.py `_wide_acc`): NaN reaching min/max,
f16 subnormal results, bf16 results that are not representable (rounded once), and a
mixed-precision coopmatrix mul_add whose exact result fits C's type but not A's and B's.

Each kind is shown to be generated AND observed: within a few sampled kernels, the v0.4
mutant that breaks exactly that rule (fuzz.mutants.interp_v04) gives outputs that the
oracle (fuzz.oracle.compare) tells from the reference's, while the reference itself runs the
same kernels free of undefined behaviour."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fuzz.gen.spmd import sample_spmd, spmd_program
from fuzz.mutants import interp_v04 as mutations_v04
from fuzz.oracle.compare import compare_outputs
from fuzz.strategies import case_of, sample_function
from tlinterp.interp import run

N = 40  # sampled kernels per kind


def _builder_kernel(seed: int):
    # every function without float collectives ends with special-value operations
    fn, args, groups, stats = sample_function(seed, lang="v0.4", lowp_special_percent=100)
    case = case_of(fn, args, groups, lang="v0.4")
    return case.program, case.args, case.groups, stats


def _spmd_kernel(seed: int):
    fn, args, groups, stats = sample_spmd(seed, weights={"coop": 30})  # mostly coop steps
    return spmd_program(fn), args, groups, stats


KINDS = {  # mutant -> the generator whose kernels carry the value kind, its statistics key
    "minmax-nan": (_builder_kernel, "lowp-special-m"),  # NaN operands of f16/bf16 min/max
    "f16-flush-subnormals": (_builder_kernel, "lowp-special-"),  # f16 subnormal results
    "bf16-truncate": (_builder_kernel, "lowp-special-"),  # bf16 results that are rounded
    # accumulators whose entries A's and B's type cannot hold
    "coop-mul-add-low": (_spmd_kernel, "coop.mul_add.wide_acc"),
}


def _copy(args: dict) -> dict:
    return {k: np.array(v, copy=True) for k, v in args.items()}


def _seen_by(mutant: str, kernel, stat: str) -> bool:
    program, args, groups, stats = kernel
    if not any(k.startswith(stat) for k in stats):
        return False  # the kind's own kernels: a mutant other kernels show does not count
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = run(program, _copy(args), groups=groups, check=True)  # UB-free
        try:
            got = mutations_v04.run(mutant, program, _copy(args), groups=groups)
        except Exception:  # a planted bug that makes the run fail is seen too
            return True
    return bool(compare_outputs(program, None, args, want, got, groups=groups))


@pytest.mark.parametrize("mutant", sorted(KINDS))
def test_each_value_kind_is_generated_and_observed_within_n_kernels(mutant):
    make, stat = KINDS[mutant]
    seen = next((s for s in range(N) if _seen_by(mutant, make(s), stat)), None)
    assert seen is not None, f"{mutant}: no kernel of {N} shows it"
    assert mutations_v04.active() is None


def test_special_inputs_hold_nan_infinities_signed_zeros_and_f16_subnormals():
    kinds: set[str] = set()
    for s in range(N):
        _, args, _, _ = _builder_kernel(s)
        for name in ("sf16", "sbf16"):
            if name in args:
                x = np.asarray(args[name]).astype(np.float32)
                kinds |= {"nan"} if np.isnan(x).any() else set()
                kinds |= {"inf"} if np.isinf(x).any() else set()
                kinds |= {"-0"} if ((x == 0) & np.signbit(x)).any() else set()
                if name == "sf16":
                    tiny = (x != 0) & (np.abs(x) < 2.0 ** -14)
                    kinds |= {"subnormal"} if tiny.any() else set()
    assert kinds == {"nan", "inf", "-0", "subnormal"}
