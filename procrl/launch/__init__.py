"""Layer 8, launch: the ``procrl`` command line (:mod:`~procrl.launch.cli`), starting a recipe the way it
asks (:mod:`~procrl.launch.accelerate`), the pre-launch checks (:mod:`~procrl.launch.prelaunch`), one
training run in this process (:mod:`~procrl.launch.run`), ``procrl plan`` (:mod:`~procrl.launch.plan`)
and the output-dir rules (:mod:`~procrl.launch.output_dir`).

``procrl.launch`` keeps exporting what the flat ``procrl/launch.py`` did (the start-up hook and
older scripts import from it)."""

from procrl.launch.accelerate import *  # noqa: F401,F403
from procrl.launch.accelerate import (  # noqa: F401
    PRELAUNCH_CHECKED_ENV, check_accelerate_launch, flag_value, launch_training, run_recipe_script, run_train,
)
