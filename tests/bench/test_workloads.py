import numpy as np
import pytest

from fusedlib.bench import workloads as w


def test_mixed_is_reproducible_and_seed_dependent():
    a, b = w.mixed(50, seed=3), w.mixed(50, seed=3)
    assert a == b
    assert w.mixed(50, seed=4) != a


def test_mixed_respects_lengths_budgets_and_vocab():
    specs = w.mixed(2000, seed=0, lengths=(4, 8, 16), budget=(4, 16), vocab_size=512)
    lengths = {len(s.prompt) for s in specs}
    budgets = [s.max_new_tokens for s in specs]
    tokens = np.concatenate([s.prompt for s in specs])
    assert lengths == {4, 8, 16}
    assert min(budgets) == 4 and max(budgets) == 16  # inclusive on both ends
    assert tokens.min() >= 0 and tokens.max() < 512
    assert all(s.arrival == 0.0 for s in specs)


def test_mixed_weights_shape_the_draw():
    specs = w.mixed(4000, seed=1, lengths=(4, 8), weights=(3, 1), vocab_size=16)
    share_short = np.mean([len(s.prompt) == 4 for s in specs])
    assert abs(share_short - 0.75) < 0.03
    with pytest.raises(ValueError):
        w.mixed(4, lengths=(4, 8), weights=(1, 1, 1))


def test_full_size_defaults():
    specs = w.mixed(200, seed=0)
    assert {len(s.prompt) for s in specs} <= set(w.MIXED_LENGTHS)
    assert all(64 <= s.max_new_tokens <= 256 for s in specs)
    assert max(max(s.prompt) for s in specs) < w.QWEN_VOCAB


def test_in_flight_contexts_take_the_lengths_in_equal_shares_plus_part_of_a_budget():
    contexts = w.in_flight_contexts(300, seed=2, lengths=(100, 1000, 10000), budget=(10, 50))
    assert contexts == w.in_flight_contexts(300, seed=2, lengths=(100, 1000, 10000), budget=(10, 50))
    assert contexts != w.in_flight_contexts(300, seed=3, lengths=(100, 1000, 10000), budget=(10, 50))
    bands = [[c - length for c in contexts if length < c <= length + 50] for length in (100, 1000, 10000)]
    assert [len(b) for b in bands] == [100, 100, 100]  # every row one prompt plus 1..50 tokens, equal shares
    done = np.concatenate(bands)
    assert done.min() == 1 and done.max() > 40 and 15 < done.mean() < 20  # uniform in 1..budget, budget in 10..50
    assert [c // 1000 for c in contexts] != [0, 1, 10] * 100  # shuffled, not the lengths in turn
    full = w.in_flight_contexts(256)  # expected mean: the lengths' 1,091.2 plus (budget + 1) / 2 = 80.5
    assert abs(np.mean(full) - 1171.7) < 20 and len(full) == 256


def test_poisson_arrivals_reproducible_and_start_at_zero():
    specs = w.mixed(100, seed=0, lengths=(4,), budget=(4, 4), vocab_size=8)
    a = w.poisson_arrivals(specs, rate=3.0, seed=7)
    assert a == w.poisson_arrivals(specs, rate=3.0, seed=7)
    assert a != w.poisson_arrivals(specs, rate=3.0, seed=8)
    times = [s.arrival for s in a]
    assert times[0] == 0.0 and np.all(np.diff(times) > 0)
    assert [s.prompt for s in a] == [s.prompt for s in specs]  # requests untouched


def test_poisson_mean_rate_for_large_n():
    specs = [w.RequestSpec(prompt=[0], max_new_tokens=1)] * 20001
    times = np.array([s.arrival for s in w.poisson_arrivals(specs, rate=4.0, seed=0)])
    measured_rate = (len(times) - 1) / times[-1]
    assert abs(measured_rate - 4.0) / 4.0 < 0.03
    with pytest.raises(ValueError):
        w.poisson_arrivals(specs, rate=0.0)


def test_arrival_times_are_the_draws_and_scale_with_rate():
    specs = w.mixed(50, seed=0, lengths=(4,), budget=(4, 4), vocab_size=8)
    times = w.arrival_times(50, rate=2.0, seed=3)
    assert list(times) == [s.arrival for s in w.poisson_arrivals(specs, rate=2.0, seed=3)]
    # Same seed, twice the rate: the same gaps halved, so the draw's own rate doubles exactly.
    assert np.allclose(w.arrival_times(50, rate=4.0, seed=3), times / 2)
