"""``procrl validate``: does a reward mix tell sound reasoning from flawed, on labelled solutions?
One job a module: a run (recipe, data and peers read before scoring, the output folder, the files
written: :mod:`~procrl.evaluation.validate.run`); solutions through ``score``'s code, labels onto
procrl's steps (:mod:`~procrl.evaluation.validate.scoring`); ``--peer`` files
(:mod:`~procrl.evaluation.validate.peers`); report.json's numbers per component
(:mod:`~procrl.evaluation.validate.report`); AUROC, bootstrap, ProcessBench metrics, label -> step
offsets (:mod:`~procrl.evaluation.validate.metrics`); the terminal table and report.md
(:mod:`~procrl.evaluation.validate.text`); validate.png (:mod:`~procrl.evaluation.validate.plot`).
The command line: :mod:`procrl.launch.commands.validate`.

``from procrl.evaluation.validate import run_validation`` imports the run's public names.
"""

import importlib

__all__ = ["Validation", "choose_output_dir", "quiet_stdout", "run_validation", "select_specs", "write_outputs"]


def __getattr__(name: str):
    # lazy: the run imports procrl.evaluation.corpora, which imports validate.metrics; loading the run
    # here would make that import circular
    if name in __all__:
        return getattr(importlib.import_module("procrl.evaluation.validate.run"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
