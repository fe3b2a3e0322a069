"""Benchmarks of the kernel against hand-written mutable implementations."""
