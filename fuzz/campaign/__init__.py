"""Differential campaigns: the harness, the Hypothesis hunt, the sandbox and `tlfuzz`."""
