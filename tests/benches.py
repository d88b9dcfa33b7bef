"""The benchmark scripts of bench/ as modules, for tests that share their kernels and
reference code (bench/ is not a package: its scripts run by path)."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


@cache
def bench(name: str):
    """bench/<name>.py, loaded once."""
    spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
