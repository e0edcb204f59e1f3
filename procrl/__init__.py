"""procrl: RL fine-tuning with process rewards on Hugging Face TRL."""

__version__ = "0.1.0"
