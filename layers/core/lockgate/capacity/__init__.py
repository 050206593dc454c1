"""Capacity controls in front of every model call: the daily spend cap, rate limits, the circuit
breaker, and admission (the one place a call is let through them)."""
