"""``procrl evaluate``: a policy's answers scored by the recipe's mix, answer-only against
reasoning-aware accuracy. One job a module: the run, its output folder and files, ``--judge``
(:mod:`~procrl.evaluation.evaluate.run`); sampling settings, the evaluated model's tokenizer and
prompts, generation (:mod:`~procrl.evaluation.evaluate.generation`); the mix in batches and per-sample
answer accuracy (:mod:`~procrl.evaluation.evaluate.scoring`); report.json's numbers
(:mod:`~procrl.evaluation.evaluate.report`); report.md and the printed summary
(:mod:`~procrl.evaluation.evaluate.text`); the plots (:mod:`~procrl.evaluation.evaluate.plot`);
``--wandb`` logging (:mod:`~procrl.evaluation.evaluate.wandb`). The command line:
:mod:`procrl.launch.commands.evaluate`.

``from procrl.evaluation.evaluate import evaluate, Sampling`` imports the run's public names.
"""

import importlib

__all__ = ["Sampling", "default_output_dir", "evaluate", "judge_overrides", "write_report"]


def __getattr__(name: str):
    # lazy: importing one of the jobs (``evaluate.text``) must not load the run and all it imports
    if name in __all__:
        return getattr(importlib.import_module("procrl.evaluation.evaluate.run"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
