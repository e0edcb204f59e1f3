"""Layer 0, core: shared utilities with no procrl dependency above them (typed settings, YAML, JSONL,
redaction, text segmentation, answer parsing, paths, atomic writes, interrupts)."""
