"""Lowering a checked program to OpenCL C: one module per part of the C (program, function,
scalars, collectives, tensor cores, views, memory, barriers) and the plain-data config."""
