"""Layer 5, observability: training diagnostics, the reward-hacking watch, console logging,
evaluation metrics and the W&B plumbing."""
