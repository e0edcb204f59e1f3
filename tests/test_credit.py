"""Dense process credit formulas against hand-computed numbers (docs/spec.md section 5)."""

import math

import pytest
import torch
from transformers import AutoTokenizer

from procrl.core.text import segment
from procrl.models.loading import TOKENIZER_ASSET
from procrl.trainers.credit import (
    aggregate_step_rewards,
    combine_step_scores,
    gae,
    masked_whiten,
    min_form_weights,
    outcome_rewards,
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
    out = process_advantages(rewards, tokens, lengths, epsilon=0.0, aggregation="sum")
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
    default = process_advantages(rewards, tokens, lengths, aggregation="sum")
    assert default[2][1] == pytest.approx(3 * (1 / 3) / (math.sqrt(2) / 3 + 1e-4), abs=1e-9)


def test_process_advantages_edge_cases():
    # a step mapping to no token counts in the statistics but credits nothing
    out = process_advantages([[1.0, 0.0], [0.0]], [[0, None], [1]], [2, 2], epsilon=0.0, aggregation="sum")
    # rewards 1, 0, 0: mean 1/3, std sqrt(2)/3 -> 1 -> sqrt(2), 0 -> -1/sqrt(2)
    assert out[0] == pytest.approx([math.sqrt(2), 0.0])
    assert out[1] == pytest.approx([-1 / math.sqrt(2)] * 2)
    # identical rewards: zero advantages; a single step in the group: zeros
    assert process_advantages([[1.0], [1.0]], [[0], [0]], [1, 1]) == [[0.0], [0.0]]
    assert process_advantages([[1.0], []], [[0], []], [2, 0]) == [[0.0, 0.0], []]


# --- min-form (PURE) credit -------------------------------------------------------------------------


def test_min_form_weights_and_aggregation_by_hand():
    # rewards [0, -1], T = 0.1: softmax([0, 10]) = [1 / (1 + e^10), e^10 / (1 + e^10)]
    low = 1 / (1 + math.exp(10))
    assert min_form_weights([0.0, -1.0], 0.1) == pytest.approx([low, 1 - low], rel=1e-12)
    # equal rewards share the weight equally: the sum of the weighted rewards is the common value
    assert min_form_weights([0.5, 0.5, 0.5, 0.5]) == pytest.approx([0.25] * 4)
    assert aggregate_step_rewards([0.5, 0.5, 0.5, 0.5], "min") == pytest.approx([0.125] * 4)
    assert aggregate_step_rewards([0.5, 0.5, 0.5, 0.5], "sum") == [0.5] * 4
    # the weighted sum approaches the minimum as T shrinks; a large T gives the mean
    rewards = [0.9, 0.2, 0.7]
    assert sum(aggregate_step_rewards(rewards, "min", 0.01)) == pytest.approx(0.2, abs=1e-12)
    assert sum(aggregate_step_rewards(rewards, "min", 1e6)) == pytest.approx(sum(rewards) / 3, abs=1e-6)
    assert aggregate_step_rewards([], "min") == []
    with pytest.raises(ValueError):
        aggregate_step_rewards([1.0], "max")
    with pytest.raises(ValueError):
        min_form_weights([1.0], 0.0)


def test_process_advantages_min_form_by_hand():
    # first-error step scores: completion 0 errs at its step 1, completion 1 is error-free.
    # Rewards 0, -1, 0, 0: mean -1/4, std sqrt(3)/4, so 0 -> 1/sqrt(3) and -1 -> -sqrt(3).
    rewards, tokens, lengths = [[0.0, -1.0], [0.0, 0.0]], [[1, 3], [0, 2]], [4, 3]
    c, e = 1 / math.sqrt(3), -math.sqrt(3)
    tiny = 1 / (1 + math.exp((c - e) / 0.1))  # min-form weight of the error-free step next to the error
    out = process_advantages(rewards, tokens, lengths, epsilon=0.0, aggregation="min", temperature=0.1)
    # completion 0: weights [tiny, 1 - tiny]; tokens 0-1 see both steps, tokens 2-3 the error only
    assert out[0] == pytest.approx([tiny * c + (1 - tiny) * e] * 2 + [(1 - tiny) * e] * 2, abs=1e-12)
    assert out[0][0] == pytest.approx(e, abs=1e-9)  # ~ the worst step, not error + bonus
    # completion 1: equal weights 1/2: token 0 sees c/2 + c/2 = c, tokens 1-2 see c/2
    assert out[1] == pytest.approx([c, c / 2, c / 2], abs=1e-12)
    # DeepSeekMath's sum pays completion 1 once per step: 2c at its first token
    assert process_advantages(rewards, tokens, lengths, epsilon=0.0, aggregation="sum")[1] == pytest.approx(
        [2 * c, c, c]
    )


def _first_error_group(rng, size):
    """A group of completions with first-error step scores (0 before the error, -1 at it, 0
    after), random step counts 1-8, about half of them error-free; one token per step."""
    rewards, lengths = [], []
    for _ in range(size):
        n = rng.randint(1, 8)
        k = rng.randrange(n) if rng.random() < 0.5 else -1
        rewards.append([-1.0 if j == k else 0.0 for j in range(n)])
        lengths.append(n)
    return rewards, [list(range(n)) for n in lengths], lengths


def test_property_min_form_first_token_advantage_ignores_the_number_of_steps():
    """In every group, every error-free completion gets the same first-token process advantage
    whatever its number of steps under min-form credit (PURE); under DeepSeekMath's sum it grows
    with the steps. And no completion with an error gets more than an error-free one."""
    import random

    rng = random.Random(0)
    checked = 0
    for _ in range(300):
        rewards, tokens, lengths = _first_error_group(rng, 8)
        clean = [i for i, r in enumerate(rewards) if min(r) == 0.0]
        flawed = [i for i, r in enumerate(rewards) if min(r) < 0.0]
        out = process_advantages(rewards, tokens, lengths, aggregation="min")
        first = [out[i][0] for i in clean]
        if clean:
            assert max(first) - min(first) < 1e-9, (rewards, first)
        if clean and flawed:
            assert max(out[i][0] for i in flawed) < min(first)
            checked += 1
    assert checked > 100
    # the measured case of the issue: error-free chains of 2 and 6 steps in a group with errors
    rewards = [[0.0, 0.0], [0.0] * 6, [-1.0, 0.0], [0.0, -1.0, 0.0, 0.0]]
    tokens = [list(range(len(r))) for r in rewards]
    lengths = [len(r) for r in rewards]
    summed = process_advantages(rewards, tokens, lengths, aggregation="sum")
    assert summed[1][0] == pytest.approx(3 * summed[0][0])  # sum: 3x for 3x the steps
    assert summed[3][3] > 0  # ... and steps after the first error still earn
    minimum = process_advantages(rewards, tokens, lengths, aggregation="min")
    assert minimum[1][0] == pytest.approx(minimum[0][0], abs=1e-12)
    assert abs(minimum[3][3]) < abs(summed[3][3])  # after the error: only its weight's remainder


def test_outcome_rewards_count_no_component_twice():
    scores = {"accuracy": [1.0, 1.0, 0.0, None], "first_error": [0.0, -1.0, -1.0, None], "trace": [0.8, 0.0, 0.5, 0.3]}
    weights = {"accuracy": 1.0, "first_error": 0.5, "trace": 0.5}
    # completion 0: both process components gave step rewards; 1: no steps (first_error's
    # no-steps score and trace's 0 stay in the outcome); 2: first_error gave step rewards,
    # trace did not (e.g. it failed); 3: no opinion from accuracy, trace credited -> nothing left
    credited = {"first_error": [True, False, True, False], "trace": [True, False, False, True]}
    assert outcome_rewards(scores, weights, credited) == [1.0, 0.5, 0.25, None]
    # outcome credit (no process components): the whole weighted sum, None skipped
    assert outcome_rewards(scores, weights, {}) == pytest.approx([1.4, 0.5, -0.25, 0.15])


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
    assert returns[0].tolist() == pytest.approx(
        [1.930664296875, 2.0691203125, 2.15696875, 1.823125, 1.8875, 1.95], abs=1e-6
    )
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
