"""Planted bugs for `tlfuzz --mutation` and bench/mutants.py: the v0.3 and v0.4 OpenCL
lowering's and the v0.4 interpreter's (as `python:` plug-ins)."""
