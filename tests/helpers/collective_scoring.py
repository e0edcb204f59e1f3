"""Two ranks scoring ReCEval informativeness with ``lm: reference`` on a ZeRO-3-sharded reference
model, with failures injected on rank 1 (tests/test_collective_scoring.py starts it with
``accelerate launch --config_file launch/accelerate/zero3.yaml --num_processes 2``, gloo on CPU).

Every forward pass of the sharded model all-gathers its parameters, so a rank that makes fewer
passes than the other leaves it waiting until the collective timeout. Rounds (rank 0 always has
two chains of three steps, several passes at ``batch_size: 2``):

* ``ok``: both ranks score normally;
* ``forward_fails``: rank 1's second forward pass raises (an out-of-memory in one forward);
* ``over_caps``: rank 1's only completion is over the segmentation caps (never given to a component);
* ``empty``: rank 1 has no rows at all;
* ``fails_before``: rank 1's component raises before it reaches the scorer;
* ``after``: both score normally again (the ranks are still in step).

Each rank writes ``rank<k>.json``: per round, the component's failure counts and its scores.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

CHAIN = "Ava buys 3 x 4 = 12 apples.\nThen she has 12 + 5 = 17 apples.\nSo she has 17 apples.\n#### 17"
CHAIN_2 = "Ava has 2 bags of 8 apples.\nThat is 2 x 8 = 16 apples.\nOne more makes 17.\n#### 17"


def main(out_dir: str) -> None:
    import torch
    from accelerate import Accelerator, PartialState
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.models.utils import prepare_deepspeed

    from procrl.core.text import MAX_LINES
    from procrl.models.loading import TOKENIZER_ASSET, model_source
    from procrl.rewards import RewardBatch, RewardMix, parse_rewards
    from procrl.rewards.protocol import RuntimeContext

    torch.set_num_threads(1)
    # as TrainingArguments does before a Trainer's Accelerator (ddp_backend): on CPU, accelerate's
    # DeepSpeed state needs the backend named
    PartialState(backend="gloo")
    accelerator = Accelerator()  # launched with launch/accelerate/zero3.yaml on 2 processes
    config = accelerator.state.deepspeed_plugin.deepspeed_config
    # what a Trainer fills in for "auto" (one row per rank, no accumulation)
    config.update(
        {
            "train_micro_batch_size_per_gpu": 1,
            "gradient_accumulation_steps": 1,
            "train_batch_size": accelerator.num_processes,
        }
    )
    if config.get("gradient_clipping") == "auto":
        config.pop("gradient_clipping")
    rank = accelerator.process_index
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    model = AutoModelForCausalLM.from_pretrained(model_source("procrl:tiny-qwen2").path)
    reference = prepare_deepspeed(model, accelerator)
    trainer = SimpleNamespace(
        accelerator=accelerator, ref_model=reference, processing_class=tokenizer, model=reference, args=None
    )
    mix = RewardMix(parse_rewards({"info": {"type": "receval_informativeness", "lm": "reference", "batch_size": 2}}))
    mix.bind(RuntimeContext(device=accelerator.device, tokenizer=tokenizer, trainer=trainer))
    component = mix.components["info"]
    assert component.collective, "the component should see a collective (ZeRO-3, 2 ranks) world"
    scorer = component.scorer

    def batch(texts: list[str]) -> RewardBatch:
        n = len(texts)
        return RewardBatch(completions=texts, questions=["How many apples?"] * n, golds=["#### 17"] * n)

    normal = [CHAIN, CHAIN_2]
    rank_one = {
        "ok": normal,
        "forward_fails": normal,
        "over_caps": ["\n".join(["Ava has an apple."] * (MAX_LINES + 2)) + "\n#### 17"],
        "empty": [],
        "fails_before": normal,
        "after": [CHAIN_2],
    }
    results = {}
    for name, texts in rank_one.items():
        texts = normal if rank == 0 else texts
        restore = []
        if rank == 1 and name == "forward_fails":
            forward, calls = scorer._forward, []

            def failing(rows, forward=forward, calls=calls):
                calls.append(1)
                if len(calls) == 2:
                    raise RuntimeError("injected: CUDA out of memory in one forward pass")
                return forward(rows)

            scorer._forward = failing
            restore.append(("_forward", scorer))
        if rank == 1 and name == "fails_before":

            def raising(batch):
                raise ValueError("injected: the component failed before scoring")

            component.score = raising
            restore.append(("score", component))
        output = mix.score_all(batch(texts))["info"]
        for attribute, owner in restore:
            delattr(owner, attribute)
        results[name] = {"failures": dict(output.failures), "scores": output.scores}
    results["stats"] = dict(scorer.stats)
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    main(sys.argv[1])
