"""``procrl:tiny-qwen2``: a tiny random-weight Qwen2-architecture model (hidden 64, 2 layers) with the
small BPE tokenizer shipped in ``procrl/assets/tiny-tokenizer`` (512 tokens, trained on the embedded
GSM8K-style problems, Qwen-style chat template), written deterministically from a seed into
``$PROCRL_CACHE`` (:func:`cache_root`, default ``~/.cache/procrl``). The bottom of the models layer:
:mod:`procrl.models.reasoner` builds on it and :mod:`procrl.models.loading` resolves its name."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "CHAT_TEMPLATE",
    "TINY_MODEL",
    "TINY_VERSION",
    "TOKENIZER_ASSET",
    "cache_root",
    "ensure_tiny_model",
    "train_tiny_tokenizer",
]

TINY_MODEL = "procrl:tiny-qwen2"
TINY_VERSION = "v1"
TOKENIZER_ASSET = Path(__file__).resolve().parent.parent / "assets" / "tiny-tokenizer"

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def cache_root() -> Path:
    """``$PROCRL_CACHE`` (default ``~/.cache/procrl``); a one-line error when it names a file."""
    root = Path(os.environ.get("PROCRL_CACHE", Path.home() / ".cache" / "procrl"))
    if root.exists() and not root.is_dir():
        from procrl.core.config import ConfigError

        raise ConfigError(
            f"PROCRL_CACHE: {root} is not a directory; give a directory for procrl's built models "
            "(or unset PROCRL_CACHE for ~/.cache/procrl)"
        )
    return root


def train_tiny_tokenizer(output_dir: str | os.PathLike, vocab_size: int = 512) -> None:
    """Train the shipped tokenizer (run once; the result is committed under procrl/assets)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from procrl.data.synthetic import generate_problems

    corpus = []
    for problem in generate_problems(4000, seed=1234):
        corpus += [problem["question"], problem["answer"]]
    corpus += ["The answer is 42.", "Step 1: First, we compute the total. Therefore, the answer is \\boxed{7}."]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(output_dir)


def ensure_tiny_model(seed: int = 0, hidden_size: int = 64, num_layers: int = 2) -> Path:
    """Directory of the tiny model, written on first use (same seed, same weights)."""
    directory = cache_root() / f"tiny-qwen2-{TINY_VERSION}-h{hidden_size}-l{num_layers}-s{seed}"
    if (directory / "config.json").is_file() and (directory / "model.safetensors").is_file():
        return directory
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    torch.random.set_rng_state(generator_state)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    temporary = directory.with_name(directory.name + f".tmp{os.getpid()}")
    model.save_pretrained(temporary)
    tokenizer.save_pretrained(temporary)
    import shutil

    if not (temporary / "model.safetensors").is_file():
        # Under torch.distributed, save_pretrained writes weights on rank 0 only: wait for its copy.
        shutil.rmtree(temporary, ignore_errors=True)
        import time

        deadline = time.monotonic() + 300
        while not (directory / "model.safetensors").is_file():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for rank 0 to write the tiny model to {directory}")
            time.sleep(0.2)
        return directory
    from procrl.core.atomic import publish_directory

    publish_directory(temporary, directory)  # False: another rank wrote it first, and its copy stays
    return directory
