"""Lockgate core: verified webhooks, an idempotent inbox, leases and the agent runtime."""

__version__ = "0.1.0"
