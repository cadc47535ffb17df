import pytest

from fusedlib.bench.metrics import meets_slo, summarize, token_gaps

# A hand-built timeline, every expected value worked out below by hand.
#   A: arrives 0.0, admitted 0.5, tokens at 1.0 1.5 2.5       ttft 1.0  e2e 2.5
#   B: arrives 1.0, admitted 1.0, one token at 1.2            ttft 0.2  e2e 0.2
#   C: arrives 2.0, admitted 3.0, tokens at 4.0 4.25 4.5 6.0  ttft 2.0  e2e 4.0
RECORDS = [
    {"arrival": 0.0, "admitted": 0.5, "token_times": [1.0, 1.5, 2.5]},
    {"arrival": 1.0, "admitted": 1.0, "token_times": [1.2]},
    {"arrival": 2.0, "admitted": 3.0, "token_times": [4.0, 4.25, 4.5, 6.0]},
]

# Linear percentiles on n sorted values: rank = q * (n - 1), interpolate between neighbours.
EXPECTED = {
    "n_completed": 3,
    "n_output_tokens": 8,
    "span_s": 6.0,  # first arrival 0.0 -> last token 6.0
    "served_rate": 0.5,  # 3 / 6
    # only B meets both levels: A's TTFT is 1.0 s (<= 1 s) but its gaps are 0.5 s and 1.0 s
    "goodput_rate": 1 / 6,
    "output_tok_s": 8 / 6,
    # ttft sorted [0.2, 1.0, 2.0]: p90 rank 1.8 -> 1.0 + 0.8 * 1.0; p99 rank 1.98
    "ttft_p50_s": 1.0, "ttft_p90_s": 1.8, "ttft_p99_s": 1.98,
    # gaps A [0.5, 1.0], C [0.25, 0.25, 1.5] -> sorted [0.25, 0.25, 0.5, 1.0, 1.5]
    "itl_p50_s": 0.5, "itl_p90_s": 1.3, "itl_p99_s": 1.48,
    # e2e sorted [0.2, 2.5, 4.0]: p99 rank 1.98 -> 2.5 + 0.98 * 1.5
    "e2e_p50_s": 2.5, "e2e_p99_s": 3.97,
    "queue_wait_p50_s": 0.5,
}


def test_summarize_matches_hand_computed_values():
    got = summarize(RECORDS)
    assert set(got) == set(EXPECTED)
    for key, value in EXPECTED.items():
        assert got[key] == pytest.approx(value), key


def test_token_gaps_pools_per_request_gaps_in_order():
    assert token_gaps(RECORDS).tolist() == pytest.approx([0.5, 1.0, 0.25, 0.25, 1.5])


def test_unfinished_requests_are_not_completed():
    got = summarize(RECORDS + [{"arrival": 0.0, "admitted": 0.0, "token_times": []}])
    assert got["n_completed"] == 3 and got["served_rate"] == pytest.approx(0.5)


@pytest.mark.parametrize("times,ok", [
    ([0.9, 0.94, 0.98], True),  # TTFT 0.9 s, gaps 40 ms
    ([1.1, 1.12], False),  # TTFT over 1 s
    ([0.1, 0.2], False),  # a 100 ms gap
    ([0.5], True),  # one token: no gap to miss
])
def test_goodput_needs_both_service_levels(times, ok):
    assert meets_slo({"arrival": 0.0, "token_times": times}) is ok
