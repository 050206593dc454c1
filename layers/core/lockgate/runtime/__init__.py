"""Composition roots: each Lambda function's object graph, built in one place from its settings,
clients and a clock. Handlers, tests, the chaos harness, the local stack and the benchmarks all
build functions here, so what is tested and measured is what deploys."""
