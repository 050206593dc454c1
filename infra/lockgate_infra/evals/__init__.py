"""The eval rig: a task's cases run on an isolated moto shop with a chosen model, attacks included;
``lockgate eval`` and the weekly ``eval`` job (``python -m lockgate_infra.evals``) drive it."""
