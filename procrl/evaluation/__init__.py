"""Layer 7, evaluation: ``procrl evaluate``, ``score``, ``validate``, ``judge-eval`` and the
reward-integrity cases. ``evaluate/`` and ``validate/`` hold the two commands, one job a module."""
