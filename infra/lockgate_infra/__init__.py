"""The tools around Lockgate, one package per tool; none of them is deployed but the eval rig.

Layers, each importing only from those below it (and from ``lockgate`` freely; the core never
imports these). ``tests/unit/test_layers.py`` checks::

    docsite         the docs' reference pages, generated from the CLI's parser, the config, the template
                    and the public API's docstrings
    cli, deploy,    the ``lockgate`` command: its parser and ``main``, dispatching to the tools below, and
    prices          operating a stack (inbox, runs, approvals, jobs, spend, secrets); ``make deploy``;
                    ``lockgate prices`` and ``make prices`` (the price table from genai-prices)
    cost            ``lockgate cost``: the example traffic metered as deployed, priced
    chaos           seeded fault injection with invariants
    evals           the eval rig, ``lockgate eval`` and the weekly eval job (shipped in EvalJobsFunction)
    testing         testing your workflow: the scripted model, ``TestStack``, ``RecordingApi`` (an outside
                    API's stand-in) and the pytest plugin
    local           the embedded stack from template.yaml (moto, the HTTP gateway, pollers), the demo
    stub            a stand-in Messages API on 127.0.0.1 with generic scripted models (a workflow's own
                    offline model is in its package) and ``Conversation``, for models written by hand
    mcp_example     an example MCP server (a ticketing service, built with the SDK) with faults to inject
    foundations     what several tools share: options (argument types), failures (exit codes and
                    one-line errors), inbox_ops and dead_letters (operating the inbox), serving (the
                    loopback servers' base), api_calls (the seam below every AWS call), workflow_path
                    (your workflows/ importable by the tools)
"""
