"""GRPO from a plain TRL script with a procrl recipe's rewards (open-r1's grpo.py shape; docs/engines.md).

    python examples/trl_grpo.py --recipe recipes/gsm8k_tiny_smoke.yaml --model_name_or_path procrl:tiny-qwen2 \
        --dataset_name /work/shared/data/gsm8k/train.jsonl --output_dir outputs/trl-grpo --max_steps 2 \
        --per_device_train_batch_size 4 --num_generations 4 --max_completion_length 32 --bf16 false --report_to none
"""

from dataclasses import dataclass, field

from datasets import load_dataset
from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser

from procrl.trl import GRPOTrainer, ProcessGRPOTrainer, model_path, recipe_rewards

SYSTEM_PROMPT = "Solve the problem step by step, one step per line, and end with '#### <answer>'."


@dataclass
class ProcrlScriptArguments(ScriptArguments):
    recipe: str = field(default="recipes/gsm8k_tiny_smoke.yaml", metadata={"help": "Recipe whose rewards to train on."})
    credit: str = field(default="outcome", metadata={"help": "outcome, or process (per-token credit from steps)."})


def main(script_args, training_args, model_args):
    # rewards: one TRL reward function per component, the recipe's weights, fallbacks and failure counts
    rewards = recipe_rewards(script_args.recipe)
    training_args.reward_weights = rewards.weights

    # dataset: GSM8K-style rows (question, answer); the answer column reaches the rewards as the gold
    dataset = load_dataset("json", data_files=script_args.dataset_name, split=script_args.dataset_train_split)
    system = {"role": "system", "content": SYSTEM_PROMPT}
    dataset = dataset.map(lambda row: {"prompt": [system, {"role": "user", "content": row["question"]}]})

    trainer_class = ProcessGRPOTrainer if script_args.credit == "process" else GRPOTrainer
    trainer = trainer_class(
        model=model_path(model_args.model_name_or_path),
        reward_funcs=rewards.funcs,
        args=training_args,
        train_dataset=dataset,
    )
    trainer.train()
    trainer.save_model(training_args.output_dir)
    return trainer


if __name__ == "__main__":
    parser = TrlParser((ProcrlScriptArguments, GRPOConfig, ModelConfig))
    main(*parser.parse_args_and_config())
