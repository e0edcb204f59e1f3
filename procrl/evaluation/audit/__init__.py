"""``procrl audit``: search how a reward mix can be gamed before a policy finds it. One job a module:
the named exploits, each knowing what it does to a solution's correctness
(:mod:`~procrl.evaluation.audit.exploits`); the search over their compositions on real problems
within a budget (:mod:`~procrl.evaluation.audit.search`); report.json, report.md and audit.png
(:mod:`~procrl.evaluation.audit.report`); a run: the recipe's mix, the problems, the output folder
(:mod:`~procrl.evaluation.audit.run`). The command line: :mod:`procrl.launch.commands.audit`.

``from procrl.evaluation.audit import audit_recipe`` imports the run's public names.
"""

import importlib

__all__ = ["Audit", "audit_recipe", "default_output_dir", "write_outputs"]


def __getattr__(name: str):
    # lazy: the run loads recipes and the mix; importing the exploits alone stays light
    if name in __all__:
        return getattr(importlib.import_module("procrl.evaluation.audit.run"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
