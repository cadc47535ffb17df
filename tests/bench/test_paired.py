"""The paired method's statistics on small synthetic pairs with known answers."""
import numpy as np
import pytest

from fusedlib.bench import paired


def test_abba_order_alternates_and_balances():
    assert paired.abba_order(4) == [0, 1, 1, 0, 0, 1, 1, 0]
    order = paired.abba_order(5)
    assert order.count(0) == order.count(1) == 5
    with pytest.raises(ValueError, match="n_pairs"):
        paired.abba_order(0)


def test_a_clear_difference_is_resolved():
    rng = np.random.default_rng(1)
    b = rng.uniform(9, 11, size=8)
    a = b * 1.3 * rng.uniform(0.98, 1.02, size=8)  # 30% larger, 2% noise per pair
    c = paired.compare_pairs(a, b)
    assert c.n == 8 and c.resolved
    assert 1.25 < c.lo <= c.ratio <= c.hi < 1.35


def test_noise_alone_is_not_resolved():
    rng = np.random.default_rng(2)
    b = rng.uniform(9, 11, size=6)
    a = b * rng.uniform(0.8, 1.2, size=6)  # no effect, 20% noise per pair
    c = paired.compare_pairs(a, b)
    assert c.lo < 1.0 < c.hi and not c.resolved
    assert "not resolved" in c.describe()


def test_pairing_cancels_a_shared_drift():
    # Both sides slow down together from pair to pair (a drifting host): unpaired medians
    # spread wide, the paired ratio stays tight around the true 1.1.
    drift = np.linspace(1.0, 1.5, 6)
    a, b = 11.0 * drift, 10.0 * drift
    pairs = paired.compare_pairs(a, b)
    groups = paired.compare_groups(a, b)
    assert pairs.ratio == pytest.approx(1.1)
    assert pairs.hi - pairs.lo < 1e-9 < groups.hi - groups.lo


def test_bad_pairs_are_refused():
    with pytest.raises(ValueError, match="equal-length"):
        paired.compare_pairs([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="B must be > 0"):
        paired.compare_pairs([1.0], [0.0])


def test_pair_runs_skips_warmups_and_orders_by_pair():
    rows = [
        {"engine": "fused", "pair": 0, "warmup": True, "served": 99.0},
        {"engine": "chunked", "pair": 0, "warmup": True, "served": 99.0},
        {"engine": "fused", "pair": 2, "served": 12.0},
        {"engine": "fused", "pair": 1, "served": 11.0},
        {"engine": "chunked", "pair": 1, "served": 10.0},
        {"engine": "chunked", "pair": 2, "served": 10.5},
        {"engine": "fused", "pair": 3, "served": 13.0},  # unmatched: dropped
    ]
    a, b = paired.pair_runs(rows, "engine", "fused", "chunked", "served")
    assert a == [11.0, 12.0] and b == [10.0, 10.5]


def test_one_pair_resolves_nothing():
    assert not paired.compare_pairs([2.0], [1.0]).resolved
    assert paired.compare_pairs([2.0, 2.1], [1.0, 1.0]).resolved
