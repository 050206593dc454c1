"""The ``lockgate`` command: the local stack, the demo, and operating a stack (inbox, runs,
approvals, jobs, spend, secrets) from a terminal. ``main`` is in ``lockgate_infra.cli.main``."""
