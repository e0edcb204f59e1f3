"""Layer 8, launch: the ``procrl`` command line (:mod:`~procrl.launch.cli`), starting a recipe the way it
asks (:mod:`~procrl.launch.accelerate`), the pre-launch checks (:mod:`~procrl.launch.prelaunch`), one
training run in this process (:mod:`~procrl.launch.run`, its safeguards :mod:`~procrl.launch.reliability`),
how a command line runs (:mod:`~procrl.launch.entry`), the plan of ``procrl check``
(:mod:`~procrl.recipe.plan`, its memory estimate :mod:`~procrl.recipe.memory`) and the output-dir rules
(:mod:`~procrl.launch.output_dir`). Import from those modules: this package exports nothing itself."""
