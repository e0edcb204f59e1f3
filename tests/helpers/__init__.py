"""What several test modules share: running procrl (:mod:`~tests.helpers.cli`, :mod:`~tests.helpers.launch`,
:mod:`~tests.helpers.training`), rewards for tests (:mod:`~tests.helpers.rewards`) and reading what a run
recorded (:mod:`~tests.helpers.wandb_records`, :mod:`~tests.helpers.weights_digest`). A test module imports
from here, never from another test module."""
