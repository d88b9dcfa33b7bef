"""Autotuning the lowering knobs on a device."""
