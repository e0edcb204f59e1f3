"""TRACE formula (docs/spec.md section 2): worked examples, bounds, invariances, edge cases."""

import itertools
import random

import pytest

from procrl.rewards.trace import (
    ALLOWED_STATES,
    BAD_TRANSITIONS,
    GOOD_TRANSITIONS,
    LABELS,
    SHORT,
    sentence_validity,
    trace_score,
)


def tags(*codes):
    """[{D}, {C}] written as tags("D", "C"); "" is a sentence without labels."""
    return [{SHORT[c] for c in code} for code in codes]


def test_worked_examples_from_the_spec():
    r = trace_score(tags("D", "C"))
    assert (r.state_validity, r.transition_coherence, r.score) == (1.0, 1.0, 1.0)
    assert (r.good_transitions, r.bad_transitions, r.total_transitions) == (1, 0, 1)

    r = trace_score(tags("M", "M"))
    assert (r.state_validity, r.transition_coherence, r.score) == (0.0, -1.0, 0.0)
    assert (r.good_transitions, r.bad_transitions, r.total_transitions) == (0, 1, 1)

    r = trace_score(tags("QC"))
    assert r.state_validity == 0.5
    assert r.transition_coherence == 0.0
    assert r.score == pytest.approx(0.35 + 0.15)


def test_empty_input_scores_zero():
    r = trace_score([])
    assert r.score == 0.0 and r.state_validity == 0.0 and r.transition_coherence == 0.0
    assert r.total_transitions == 0
    assert r.transition_counts == tuple(tuple(0 for _ in LABELS) for _ in LABELS)


def test_rule_tables_are_exactly_the_spec():
    assert len(ALLOWED_STATES) == 10 and len(GOOD_TRANSITIONS) == 13 and len(BAD_TRANSITIONS) == 7
    allowed = {"".join(sorted(c for c, label in SHORT.items() if label in s)) for s in ALLOWED_STATES}
    assert allowed == {"C", "CD", "CE", "D", "DW", "W", "BW", "B", "BE", "E"}
    for label in ("Qualifier", "Rebuttal", "Monitoring"):
        assert not any(label in s for s in ALLOWED_STATES)
    short = {v: k for k, v in SHORT.items()}
    good = {short[a] + short[b] for a, b in GOOD_TRANSITIONS}
    bad = {short[a] + short[b] for a, b in BAD_TRANSITIONS}
    assert good == {"DC", "WC", "CB", "BC", "BE", "CE", "DW", "MC", "MD", "MB", "ME", "RC", "RB"}
    assert bad == {"MM", "QQ", "MQ", "QM", "RR", "RQ", "QR"}


def test_state_validity_is_best_jaccard_and_unlabelled_is_zero():
    assert sentence_validity(set()) == 0.0
    assert sentence_validity({"Claim", "Data/Evidence"}) == 1.0
    # {C, D, W}: best allowed sets {C,D} or {D,W}, Jaccard 2/3
    assert sentence_validity({"Claim", "Data/Evidence", "Warrant"}) == pytest.approx(2 / 3)
    assert sentence_validity({"Monitoring"}) == 0.0
    assert sentence_validity({"Monitoring", "Evaluation"}) == 0.5


def test_transition_coherence_counts_every_label_pair_and_skips_unlabelled_sentences():
    # [{D,W}, {}, {C}]: the label-less sentence is dropped, so {D,W} -> {C}: D->C good, W->C good.
    r = trace_score(tags("DW", "", "C"))
    assert (r.good_transitions, r.bad_transitions, r.total_transitions) == (2, 0, 2)
    assert r.transition_coherence == 1.0
    assert r.state_validity == pytest.approx((1 + 0 + 1) / 3)
    # [{M,Q}, {Q}]: M->Q bad, Q->Q bad; neutral pairs count in the total only.
    r = trace_score(tags("MQ", "Q", "D"))
    # pairs: M->Q bad, Q->Q bad, Q->D neutral
    assert (r.good_transitions, r.bad_transitions, r.total_transitions) == (0, 2, 3)
    assert r.transition_coherence == pytest.approx(-2 / 3)
    counts = r.transition_counts
    index = {label: i for i, label in enumerate(LABELS)}
    assert counts[index["Monitoring"]][index["Qualifier"]] == 1
    assert counts[index["Qualifier"]][index["Qualifier"]] == 1
    assert counts[index["Qualifier"]][index["Data/Evidence"]] == 1
    assert sum(map(sum, counts)) == r.total_transitions


def test_single_labelled_sentence_or_all_unlabelled_gives_zero_coherence():
    assert trace_score(tags("", "C", "")).transition_coherence == 0.0
    r = trace_score(tags("", ""))
    assert r.transition_coherence == 0.0 and r.state_validity == 0.0
    assert r.score == pytest.approx(0.15)  # 0.7 * 0 + 0.3 * (0 + 1) / 2, as the formula says


def test_alpha_weights_are_configurable():
    labels = tags("QC", "M", "M")
    for alpha in (0.0, 0.3, 0.7, 1.0):
        r = trace_score(labels, alpha=alpha)
        expected = alpha * r.state_validity + (1 - alpha) * (r.transition_coherence + 1) / 2
        assert r.score == pytest.approx(expected)
    assert trace_score(labels, alpha=1.0).score == pytest.approx(trace_score(labels).state_validity)
    with pytest.raises(ValueError, match="alpha"):
        trace_score(labels, alpha=1.5)


def _random_sequence(rng):
    return [set(rng.sample(LABELS, rng.choice([0, 1, 1, 2, 2, 3, 8]))) for _ in range(rng.randint(0, 12))]


def test_bounds_and_determinism_over_many_random_sequences():
    rng = random.Random(1234)
    for _ in range(3000):
        labels = _random_sequence(rng)
        alpha = rng.random()
        r = trace_score(labels, alpha=alpha)
        assert 0.0 <= r.score <= 1.0
        assert 0.0 <= r.state_validity <= 1.0
        assert -1.0 <= r.transition_coherence <= 1.0
        assert r.good_transitions + r.bad_transitions <= r.total_transitions
        again = trace_score([set(s) for s in labels], alpha=alpha)
        assert again == r


def test_label_order_within_a_sentence_does_not_matter():
    rng = random.Random(7)
    for _ in range(500):
        labels = _random_sequence(rng)
        as_lists = [list(s) for s in labels]
        shuffled = [rng.sample(s, len(s)) for s in as_lists]
        reversed_ = [list(reversed(s)) for s in as_lists]
        reference = trace_score(as_lists)
        assert trace_score(shuffled) == reference
        assert trace_score(reversed_) == reference
        assert trace_score([tuple(s) for s in shuffled]) == reference
        # duplicates within a sentence are one label (sets, not strings)
        assert trace_score([s + s for s in as_lists]) == reference


def test_every_single_transition_has_the_documented_sign():
    for a, b in itertools.product(LABELS, repeat=2):
        r = trace_score([{a}, {b}])
        expected = 1.0 if (a, b) in GOOD_TRANSITIONS else -1.0 if (a, b) in BAD_TRANSITIONS else 0.0
        assert r.transition_coherence == expected, (a, b)


def test_unknown_labels_and_bare_strings_are_clear_errors():
    with pytest.raises(ValueError, match="unknown TRACE label"):
        trace_score([{"Claim"}, {"Conclusion"}])
    with pytest.raises(ValueError, match="unknown TRACE label"):
        trace_score([{"C"}])  # short codes are not label names
    with pytest.raises(ValueError, match="collection of label names"):
        trace_score(["Claim"])
