"""Trainers: TRL's GRPO wiring (outcome and process credit) and procrl's PPO."""
