"""Observability: what a run shows while it trains and after (process diagnostics, the
reward-hacking watch, the console, evaluation metrics, W&B)."""
