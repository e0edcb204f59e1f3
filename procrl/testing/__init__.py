"""Test doubles for external services (used by tests and benchmarks, never by training)."""
