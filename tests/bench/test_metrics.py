from types import SimpleNamespace

import numpy as np
import pytest

from fusedlib.bench.metrics import summarize, token_gaps

# A hand-built timeline, every expected value worked out below by hand.
#   A: arrives 0.0, admitted 0.5, tokens at 1.0 1.5 2.5       ttft 1.0  e2e 2.5  tpot 1.5/2 = 0.75
#   B: arrives 1.0, admitted 1.0, one token at 1.2            ttft 0.2  e2e 0.2  tpot skipped
#   C: arrives 2.0, admitted 3.0, tokens at 4.0 4.25 4.5 6.0  ttft 2.0  e2e 4.0  tpot 2.0/3
RECORDS = [
    {"arrival": 0.0, "admitted": 0.5, "token_times": [1.0, 1.5, 2.5], "prompt_len": 10},
    {"arrival": 1.0, "admitted": 1.0, "token_times": [1.2], "prompt_len": 20},
    {"arrival": 2.0, "admitted": 3.0, "token_times": [4.0, 4.25, 4.5, 6.0], "prompt_len": 30},
]

# Linear percentiles on n sorted values: rank = q * (n - 1), interpolate between neighbours.
EXPECTED = {
    "n_requests": 3,
    "n_completed": 3,
    "n_output_tokens": 8,
    "n_prompt_tokens": 60,
    "span_s": 6.0,  # first arrival 0.0 -> last token 6.0
    "request_throughput": 0.5,  # 3 / 6
    "served_rate": 0.5,
    # arrivals span 0.0 -> 2.0; only B (last token 1.2) completes inside it
    "window_served_rate": 0.5,
    "output_throughput": 8 / 6,
    # ttft sorted [0.2, 1.0, 2.0]: p90 rank 1.8 -> 1.0 + 0.8 * 1.0; p99 rank 1.98
    "ttft_median_s": 1.0,
    "ttft_p90_s": 1.8,
    "ttft_p99_s": 1.98,
    # tpot sorted [2/3, 0.75]: median halfway; p90 rank 0.9; p99 rank 0.99
    "tpot_median_s": (2 / 3 + 0.75) / 2,
    "tpot_p90_s": 2 / 3 + 0.9 * (0.75 - 2 / 3),
    "tpot_p99_s": 2 / 3 + 0.99 * (0.75 - 2 / 3),
    # gaps A [0.5, 1.0], C [0.25, 0.25, 1.5] -> sorted [0.25, 0.25, 0.5, 1.0, 1.5]
    # p90 rank 3.6 -> 1.0 + 0.6 * 0.5; p99 rank 3.96 -> 1.0 + 0.96 * 0.5
    "itl_median_s": 0.5,
    "itl_p90_s": 1.3,
    "itl_p99_s": 1.48,
    "itl_max_s": 1.5,
    # e2e sorted [0.2, 2.5, 4.0]: p90 rank 1.8 -> 2.5 + 0.8 * 1.5; p99 -> 2.5 + 0.98 * 1.5
    "e2e_median_s": 2.5,
    "e2e_p90_s": 3.7,
    "e2e_p99_s": 3.97,
    # queue waits sorted [0.0, 0.5, 1.0]: p90 rank 1.8 -> 0.5 + 0.8 * 0.5
    "queue_wait_median_s": 0.5,
    "queue_wait_p90_s": 0.9,
}


def test_summarize_matches_hand_computed_values():
    got = summarize(RECORDS)
    assert set(got) == set(EXPECTED)
    for key, value in EXPECTED.items():
        assert got[key] == pytest.approx(value), key


def test_objects_with_prompt_lists_work_like_dicts():
    objects = [
        SimpleNamespace(arrival=r["arrival"], admitted=r["admitted"], token_times=r["token_times"],
                        prompt=[0] * r["prompt_len"], finished=r["token_times"][-1])
        for r in RECORDS
    ]
    assert summarize(objects) == pytest.approx(summarize(RECORDS))


def test_token_gaps_pools_per_request_gaps_in_order():
    np.testing.assert_allclose(token_gaps(RECORDS), [0.5, 1.0, 0.25, 0.25, 1.5])
    assert token_gaps([]).size == 0


def test_unfinished_requests_count_as_offered_not_completed():
    records = RECORDS + [{"arrival": 5.0, "admitted": None, "token_times": [], "prompt_len": 4}]
    got = summarize(records)
    assert got["n_requests"] == 4 and got["n_completed"] == 3
    assert got["served_rate"] == pytest.approx(0.5)
    # arrivals now span 0.0 -> 5.0, and A (2.5) and B (1.2) complete inside it
    assert got["window_served_rate"] == pytest.approx(2 / 5)
