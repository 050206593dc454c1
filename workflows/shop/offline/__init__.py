"""The shop's offline models: stand-ins for Claude on its tasks, for the demo, tests and evals.

``inbox`` answers the support-inbox task (and, through ``refund_summary``, the scheduled refund
summary); ``gullible`` is the same model obeying whatever the content it reads tells it, for the
attack evals. Both are written by hand on the test kit's public ``Conversation`` (a
``ScriptedModel``'s rules cannot compose a reply from several results); ``shop.model`` builds them.
"""
