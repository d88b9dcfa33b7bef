"""The campaign's triage of a finding it has just saved: our lowering's findings go to
`triage.investigate`, another implementation's to `triage_impl.investigate_impl`."""

from __future__ import annotations

from typing import Optional

from fuzz.triage.clexec import Target
from fuzz.triage.impl import investigate_impl
from fuzz.triage.triage import investigate

_MUTATED: set = set()


def triage_saved(finding, base: str, reduce_seconds: float,
                 mutation: Optional[str] = None) -> str:
    """Triage a finding a campaign has just saved at BASE; its short class for the live view
    (or "triage failed: ..."; a campaign must go on). A finding against another
    implementation is triaged against that implementation (fuzz.triage.impl)."""
    from tlgpu.lowering.config import LoweringConfig

    if mutation and mutation not in _MUTATED:  # the campaign planted it in its OpenCL side
        from fuzz.mutants.registry import apply

        apply(mutation)
        _MUTATED.add(mutation)
    try:
        config, device = finding.config or LoweringConfig(), finding.device or "pocl"
        if finding.impl is not None:
            spec, options = finding.impl
            if spec != "opencl":
                return investigate_impl(finding.case, spec, options, base,
                                        reduce_seconds).short
            # tlfuzz --lowering: our lowering with one config, run through the registry
            config = LoweringConfig.from_overrides(list(options.lowering))
            device = options.device or device
        result = investigate(finding.case, config, Target(device), base, reduce_seconds)
    except Exception as e:  # noqa: BLE001 - reported in the live view, never fatal
        return f"triage failed: {type(e).__name__}"
    return result.short
