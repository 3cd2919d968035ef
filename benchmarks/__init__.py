"""Benchmarks: workloads x systems (NumPy, ndflow, and TensorFlow / JAX when installed).

Run ``python -m benchmarks`` (or ``make bench``) from the repository root.  Every
system runs in its own subprocess (``python -m benchmarks.run_one SYSTEM WORKLOAD``)
so that importing one framework cannot change the timings of another.

This package lives at the edge of the project: nothing in ``ndflow`` imports it.
"""
