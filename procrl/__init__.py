"""procrl: RL fine-tuning with process rewards on Hugging Face TRL."""

from procrl.core.threads import configure_thread_waits as _configure_thread_waits

__version__ = "0.1.0"

_configure_thread_waits()  # before torch loads: OpenMP reads its wait policy once (procrl.core.threads)
