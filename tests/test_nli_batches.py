"""The NLI scorer's batches: length-sorted, at most batch_size pairs and max_batch_tokens padded
tokens; the probabilities do not depend on how the pairs are batched."""

from __future__ import annotations

import pytest

from procrl.rewards.scorers.nli import NLIScorer, length_batches, write_tiny_nli_model


def test_length_batches_respect_both_limits():
    lengths = [10, 300, 12, 11, 60, 58, 59, 61, 10]
    batches = length_batches(lengths, max_items=4, max_tokens=128)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # every pair exactly once
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)  # length order, so that padding is small
    for batch in batches:
        assert len(batch) <= 4
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 128
    assert [lengths[i] for i in batches[-1]] == [300]  # longer than the budget: alone
    assert [[lengths[i] for i in b] for b in batches] == [[10, 10, 11, 12], [58, 59], [60, 61], [300]]
    assert length_batches([], 4, 128) == []


def test_scores_do_not_depend_on_the_batching(tmp_path):
    model = write_tiny_nli_model(tmp_path / "nli", seed=3)
    pairs = [
        (f"There are {i} apples and {i + 1} pears in the basket " * (1 + i % 5), f"So there are {2 * i + 1} fruits.")
        for i in range(24)
    ]
    small = NLIScorer(str(model), batch_size=64, max_batch_tokens=100)
    large = NLIScorer(str(model), batch_size=64, max_batch_tokens=1 << 40)
    a, b = small.score(pairs), large.score(pairs)
    assert small.stats["forward_passes"] > large.stats["forward_passes"] == 1
    for pair in pairs:
        assert a[pair] == pytest.approx(b[pair], abs=1e-5)
    with pytest.raises(ValueError, match="max_batch_tokens"):
        NLIScorer(str(model), max_batch_tokens=0)
    assert NLIScorer(str(model), batch_size=8).max_batch_tokens == 512  # default: 64 tokens per pair
