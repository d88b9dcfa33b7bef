"""The kernel generator behind `fuzz.strategies`: builds well-typed, UB-free IR directly."""
