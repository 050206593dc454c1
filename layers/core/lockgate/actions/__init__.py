"""What the agent may do and how it is done once: tools, the guard's ruling on a call, the
operation ledger, and the one path that runs a cleared or approved call through it."""
