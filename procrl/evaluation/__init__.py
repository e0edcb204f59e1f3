"""Layer 7, evaluation: ``procrl evaluate``, ``score``, ``validate``, ``judge-eval`` and the
reward-integrity cases."""
