"""Webhook signature verification, delivery identification and (for tests and the demo) signing."""
