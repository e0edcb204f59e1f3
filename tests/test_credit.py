"""Dense process credit formulas against hand-computed numbers (REWARDS.md section 5)."""

import math

import pytest
import torch
from transformers import AutoTokenizer

from procrl.models import TOKENIZER_ASSET
from procrl.text import segment
from procrl.trainers.credit import (
    combine_step_scores,
    gae,
    masked_whiten,
    process_advantages,
    scatter_step_rewards,
    step_last_tokens,
    token_char_ends,
    token_rewards,
)


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(TOKENIZER_ASSET)


# --- step -> token mapping ------------------------------------------------------------------


def test_token_char_ends_and_steps_on_token_boundaries(tokenizer):
    text = "Ava buys 3 x 4 = 12 apples.\nThen she has 12 + 5 = 17.\n#### 17"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    pieces = [tokenizer.decode([i], skip_special_tokens=True) for i in ids]
    # the tokenizer splits "Then" into "The" + "n": a step boundary inside a word's tokens
    assert pieces[10:12] == ["The", "n"]
    ends = token_char_ends(tokenizer, ids)
    assert ends[:12] == [3, 8, 10, 12, 14, 16, 19, 26, 27, 28, 31, 32]
    assert ends[-1] == ends[-2] == len(text)  # EOS decodes to nothing: ends where the text ends
    steps = segment(text).steps
    assert [(s.start, s.end) for s in steps] == [(0, 27), (28, 53)]
    # step 1 ends with "." = token 8; step 2 ends with "." after " 1", "7" = token 20
    assert step_last_tokens([s.end for s in steps], ends) == [8, 20]


def test_steps_straddling_token_boundaries(tokenizer):
    text = "Ava buys 3 x 4 = 12 apples.\nThen she has 12 + 5 = 17.\n#### 17"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    ends = token_char_ends(tokenizer, ids)
    # Character 29 ('h') lies inside token 10 ("The", chars 28-31): a step ending there ends at
    # token 10; one ending after "Then" (char 32) ends at token 11 ("n"); one ending in the
    # middle of " apples" (chars 19-26) ends at token 7.
    assert step_last_tokens([30, 32, 22], ends) == [10, 11, 7]
    # a step reaching past the decoded text (truncated completion) ends at the last text token
    assert step_last_tokens([len(text) + 40], ends) == [len(ids) - 1]
    # empty steps and completions without tokens map to no token
    assert step_last_tokens([0], ends) == [None]
    assert step_last_tokens([5, 9], []) == [None, None]
    assert step_last_tokens([5], [0, 0]) == [None]


def test_token_char_ends_with_split_multibyte_characters(tokenizer):
    # byte-level BPE: the euro sign is 3 byte tokens; per-token decoding yields replacement
    # characters, so the prefix-decoding fallback must give exact, monotonic ends
    text = "It costs 5€ each.\nSo 10€ in total."
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert "".join(tokenizer.decode([i]) for i in ids) != text  # the fast path cannot be used
    ends = token_char_ends(tokenizer, ids)
    assert len(ends) == len(ids)
    assert all(a <= b for a, b in zip(ends, ends[1:]))
    assert ends[-1] == len(text)
    for k, end in enumerate(ends):
        assert tokenizer.decode(ids[: k + 1]).startswith(text[:end]) or text[:end] == tokenizer.decode(ids[: k + 1])
    steps = segment(text).steps
    last = step_last_tokens([s.end for s in steps], ends)
    assert last[-1] == len(ids) - 1
    assert tokenizer.decode(ids[: last[0] + 1]) == text[: steps[0].end]


def test_combine_step_scores_weights_and_misaligned_components():
    assert combine_step_scores([[1.0, 0.0], [0.5, -1.0]], [1.0, 2.0], 2) == [2.0, -2.0]
    # a component with the wrong number of steps is skipped; None lists are "no step scores"
    assert combine_step_scores([[1.0, 0.0, 3.0], None, [1.0, 1.0]], [1.0, 1.0, 0.5], 2) == [0.5, 0.5]
    assert combine_step_scores([None], [1.0], 3) is None


# --- DeepSeekMath process advantages ------------------------------------------------------------


def test_process_advantages_group_of_three_by_hand():
    # 9 step rewards: mean 2/3, population std sqrt(2)/3; a 1 normalises to a = 1/sqrt(2),
    # a 0 to b = -sqrt(2). Token t gets the sum over steps ending at or after t.
    rewards = [[1, 0], [1, 1, 0], [0, 1, 1, 1]]
    tokens = [[1, 4], [1, 3, 5], [0, 1, 2, 3]]
    lengths = [5, 6, 4]
    out = process_advantages(rewards, tokens, lengths, epsilon=0.0)
    a, b = 1 / math.sqrt(2), -math.sqrt(2)
    expected = [
        [a + b, a + b, b, b, b],  # -0.7071, -0.7071, -1.4142 x3
        [2 * a + b, 2 * a + b, a + b, a + b, b, b],  # 0, 0, -0.7071, -0.7071, -1.4142 x2
        [b + 3 * a, 3 * a, 2 * a, a],  # 0.7071, 2.1213, 1.4142, 0.7071
    ]
    for row, want in zip(out, expected):
        assert row == pytest.approx(want, abs=1e-9)
    assert out[2] == pytest.approx([0.70710678, 2.12132034, 1.41421356, 0.70710678], abs=1e-7)
    # TRL-style epsilon in the denominator changes values only slightly
    default = process_advantages(rewards, tokens, lengths)
    assert default[2][1] == pytest.approx(3 * (1 / 3) / (math.sqrt(2) / 3 + 1e-4), abs=1e-9)


def test_process_advantages_edge_cases():
    # a step mapping to no token counts in the statistics but credits nothing
    out = process_advantages([[1.0, 0.0], [0.0]], [[0, None], [1]], [2, 2], epsilon=0.0)
    # rewards 1, 0, 0: mean 1/3, std sqrt(2)/3 -> 1 -> sqrt(2), 0 -> -1/sqrt(2)
    assert out[0] == pytest.approx([math.sqrt(2), 0.0])
    assert out[1] == pytest.approx([-1 / math.sqrt(2)] * 2)
    # identical rewards: zero advantages; a single step in the group: zeros
    assert process_advantages([[1.0], [1.0]], [[0], [0]], [1, 1]) == [[0.0], [0.0]]
    assert process_advantages([[1.0], []], [[0], []], [2, 0]) == [[0.0, 0.0], []]


# --- PPO token rewards and GAE -------------------------------------------------------------------


def test_token_rewards_and_gae_by_hand():
    # 6 tokens; step 1 (reward 0.5) ends at token 2, step 2 (reward 1.0) at token 5; the
    # outcome reward 1.0 goes on the last token; KL 0.5 * [0.1, 0, 0.2, 0, 0, 0.1].
    # A second, padded row checks the mask (4 tokens, one step of reward 2.0 at token 3).
    step_tokens = scatter_step_rewards([[0.5, 1.0], [2.0]], [[2, 5], [3]], 6)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    kl = torch.tensor([[0.1, 0.0, 0.2, 0.0, 0.0, 0.1], [0.0, 0.0, 0.0, 0.0, 9.0, 9.0]])
    rewards = token_rewards(step_tokens, torch.tensor([1.0, 0.0]), mask, kl, kl_coef=0.5)
    assert rewards[0].tolist() == pytest.approx([-0.05, 0.0, 0.4, 0.0, 0.0, 1.95])
    assert rewards[1].tolist() == pytest.approx([0.0, 0.0, 0.0, 2.0, 0.0, 0.0])

    values = torch.tensor([[0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [0.1, 0.1, 0.1, 0.1, 5.0, 5.0]])
    advantages, returns = gae(rewards, values, mask, gamma=1.0, lam=0.95)
    # deltas row 0: [0.05, 0.1, 0.5, 0.1, 0.1, 1.25]; A_t = delta_t + 0.95 A_{t+1}
    assert advantages[0].tolist() == pytest.approx(
        [1.730664296875, 1.7691203125, 1.75696875, 1.323125, 1.2875, 1.25], abs=1e-6
    )
    assert returns[0].tolist() == pytest.approx([1.930664296875, 2.0691203125, 2.15696875, 1.823125, 1.8875, 1.95], abs=1e-6)
    # row 1: deltas [0, 0, 0, 1.9] (V after the last token is 0, padding ignored)
    assert advantages[1].tolist() == pytest.approx([1.9 * 0.95**3, 1.9 * 0.95**2, 1.9 * 0.95, 1.9, 0, 0], abs=1e-6)
    assert returns[1, 4:].tolist() == [0.0, 0.0]


def test_gae_lambda_one_gives_reward_to_go():
    rewards = torch.tensor([[1.0, 0.0, 2.0]])
    values = torch.tensor([[0.5, -1.0, 3.0]])
    advantages, returns = gae(rewards, values, torch.ones(1, 3), gamma=1.0, lam=1.0)
    assert returns[0].tolist() == pytest.approx([3.0, 2.0, 2.0])
    assert advantages[0].tolist() == pytest.approx([2.5, 3.0, -1.0])


def test_masked_whiten():
    values = torch.tensor([[1.0, 2.0, 3.0, 100.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    out = masked_whiten(values, mask)
    assert out[0, :3].tolist() == pytest.approx([-1.2247, 0.0, 1.2247], abs=1e-4)
    assert out[0, 3] == 0.0
