"""The agent runtime: tools, tasks, the guarded tool loop, durable runs and the operation ledger."""
