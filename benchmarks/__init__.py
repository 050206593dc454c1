"""Benchmarks for Lockgate's receiver: AWS calls per delivery and cold-start import time.

Run from the repository root: ``python -m benchmarks.receipt_calls`` and
``python -m benchmarks.cold_start``. See benchmarks/README.md.
"""
