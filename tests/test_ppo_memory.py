"""PPO's rollout takes log-probs and entropy from the completion positions a row at a time: the
same numbers as one forward over the batch with full-vocabulary logits and a float32 log-softmax
(the peak memory itself: benchmarks/ppo_memory_bench.py, docs/cost-at-scale.md)."""

from __future__ import annotations

import pytest
import torch

from procrl.trainers.ppo import ops
from procrl.trainers.ppo.model import PolicyAndValue, value_head_for
from procrl.trainers.ppo.trainer import rollout_scores


def _naive(logits, tokens, temperature):
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1), -(logp.exp() * logp).sum(-1)


@pytest.mark.parametrize("chunk_rows", [1, 2, 5])
def test_logprobs_and_entropy_match_the_full_log_softmax(chunk_rows):
    torch.manual_seed(0)
    logits = torch.randn(5, 7, 300) * 3
    tokens = torch.randint(0, 300, (5, 7))
    logprobs, entropy = ops.logprobs_and_entropy(logits, tokens, 0.7, chunk_rows=chunk_rows)
    expected_logprobs, expected_entropy = _naive(logits, tokens, 0.7)
    assert logprobs == pytest.approx(expected_logprobs, abs=1e-5)
    assert entropy == pytest.approx(expected_entropy, abs=1e-5)
    assert ops.logprobs(logits, tokens, 0.7, chunk_rows=chunk_rows) == pytest.approx(expected_logprobs, abs=1e-5)


def test_logprobs_keep_their_gradient():
    logits = torch.randn(3, 4, 50, requires_grad=True)
    tokens = torch.randint(0, 50, (3, 4))
    ops.logprobs(logits, tokens, 1.0).sum().backward()
    expected = logits.detach().clone().requires_grad_(True)
    _naive(expected, tokens, 1.0)[0].sum().backward()
    assert logits.grad == pytest.approx(expected.grad, abs=1e-5)


def test_rollout_scores_equal_one_forward_over_the_batch():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=257,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    policy = Qwen2ForCausalLM(config).eval()
    model = PolicyAndValue(policy, value_head_for(policy)).eval()
    with torch.no_grad():
        model.value.weight.normal_()
    prompt, length = 6, 9
    input_ids = torch.randint(0, 257, (4, prompt + length))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[0, :2] = 0  # a left-padded prompt
    completion_ids = input_ids[:, prompt:]
    with torch.no_grad():
        logits, values = model(input_ids=input_ids, attention_mask=attention_mask)
        expected_logprobs, expected_entropy = _naive(logits[:, prompt - 1 : -1], completion_ids, 0.8)
        logprobs, old_values, entropy = rollout_scores(
            lambda ids, mask, keep: model(input_ids=ids, attention_mask=mask, logits_to_keep=keep),
            input_ids,
            attention_mask,
            completion_ids,
            prompt,
            0.8,
            with_entropy=True,
        )
    assert logprobs == pytest.approx(expected_logprobs, abs=1e-4)
    assert entropy == pytest.approx(expected_entropy, abs=1e-4)
    assert old_values == pytest.approx(values[:, prompt - 1 : -1].float(), abs=1e-5)
    # the LM head ran on the completion positions only
    kept, _ = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=length + 1)
    assert kept.shape == (4, length + 1, 257)
