"""The tools around Lockgate, one package per tool; none of them is deployed but the eval rig.

cli     the ``lockgate`` command (local stack, demo, inbox, runs, approvals, jobs, spend)
local   the embedded stack from template.yaml: moto, the HTTP gateway, pollers, the demo
stub    a stand-in Messages API on 127.0.0.1 with scripted and offline models
chaos   seeded fault injection with invariants
evals   the eval rig, ``lockgate eval`` and the weekly eval job (shipped in EvalJobsFunction)
cost    ``lockgate cost``: the example traffic metered as deployed, priced
"""
