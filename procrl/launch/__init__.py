"""Layer 8, launch: the ``procrl`` command line (:mod:`~procrl.launch.cli`), starting a recipe the way it
asks (:mod:`~procrl.launch.accelerate`, the plan handed to the ranks :mod:`~procrl.launch.launched`), the
pre-launch checks of the machine (:mod:`~procrl.launch.prelaunch`), one training run in this process
(:mod:`~procrl.launch.run`, its safeguards :mod:`~procrl.launch.reliability`) and how a command line runs
(:mod:`~procrl.launch.entry`). The recipe's own checks and ``procrl check``'s plan live with the recipe
(:mod:`procrl.recipe.plan`). Import from those modules: this package exports nothing itself."""
