"""Fault injection with invariants: the pipeline under seeded faults, judged by its end state."""
