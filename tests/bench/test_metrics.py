import heapq

import numpy as np
import pytest

from fusedlib.bench.metrics import meets_slo, request_times, steady, steady_from_times, summarize, token_gaps
from fusedlib.bench.workloads import arrival_times

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


# ------------------------------------------------------------------------------ steady rate
def served_by_rows(arrivals, service, rows: int, admit_at=None) -> list[dict]:
    """The timeline of a FCFS server of `rows` rows: request i is admitted when it has arrived,
    the request before it was admitted and a row is free, and holds its row for service[i]
    seconds (one token, at the end). Its capacity is rows / mean(service)."""
    free, out, last = [0.0] * rows, [], 0.0
    for arrival, s in zip(arrivals, service):
        last = max(arrival, last, heapq.heappop(free))
        heapq.heappush(free, last + s)
        out.append({"arrival": float(arrival), "admitted": last, "token_times": [last + s]})
    return out


def poisson(n, rate, seed=0):
    return arrival_times(n, rate, seed=seed)


def test_past_capacity_the_steady_rate_is_the_capacity_and_the_drain_rate_is_lower():
    rows, service = 32, 1.0  # capacity 32 requests/s
    got = steady(served_by_rows(poisson(400, 64.0), [service] * 400, rows), rows)
    assert got["saturated"] and got["steady_rate"] == pytest.approx(rows / service, rel=0.02)
    assert got["steady_fraction"] >= 0.6
    start, end = got["steady_window_s"]
    assert 0 < start < end
    drained = summarize(served_by_rows(poisson(400, 64.0), [service] * 400, rows))["served_rate"]
    assert drained < 0.95 * got["steady_rate"]


def test_a_drain_tail_does_not_lower_the_steady_rate():
    rows, n = 32, 400
    service = np.random.default_rng(1).uniform(0.5, 1.5, n)
    arrivals = poisson(n, 64.0, seed=1)
    quick = served_by_rows(arrivals, service, rows)
    # The last batch to be admitted takes ten times as long: a slow drain, the same queue.
    slow_tail = served_by_rows(arrivals, np.concatenate([service[:-rows], 10 * service[-rows:]]), rows)
    a, b = steady(quick, rows), steady(slow_tail, rows)
    assert b["steady_rate"] == pytest.approx(a["steady_rate"], rel=0.02) and b["saturated"]
    assert a["steady_rate"] == pytest.approx(rows / service.mean(), rel=0.05)
    assert summarize(slow_tail)["served_rate"] < 0.8 * summarize(quick)["served_rate"]


@pytest.mark.parametrize("over", [1.25, 2.0])
def test_four_hundred_arrivals_at_32_rows_keep_most_completions_in_the_window(over):
    rows, n = 32, 400
    service = np.random.default_rng(2).uniform(0.5, 1.5, n)
    got = steady(served_by_rows(poisson(n, over * rows / service.mean(), seed=2), service, rows), rows)
    assert got["saturated"] and got["steady_fraction"] >= 0.6
    assert got["steady_rate"] == pytest.approx(rows / service.mean(), rel=0.05)


def test_below_capacity_the_run_says_so_and_serves_the_offered_rate():
    rows, n, rate = 32, 400, 16.0  # half the capacity
    arrivals = poisson(n, rate, seed=3)
    got = steady(served_by_rows(arrivals, [1.0] * n, rows), rows)
    assert got["saturated"] is False
    assert got["steady_rate"] == pytest.approx((n - 1) / arrivals[-1], rel=0.05)
    assert got["steady_window_s"][1] <= arrivals[-1] + 1e-9


def test_below_capacity_latencies_of_different_lengths_do_not_lower_the_rate():
    # Services of 0.5 to 5.5 s at 60% of capacity over a 25 s run: counted from the first
    # completion, short requests finish while long ones are in flight and the rate reads ~9% low.
    rows, n, rate = 64, 400, 16.0
    service = np.random.default_rng(5).uniform(0.5, 5.5, n)
    arrivals = poisson(n, rate, seed=5)
    got = steady(served_by_rows(arrivals, service, rows), rows)
    assert got["saturated"] is False
    assert got["steady_rate"] == pytest.approx((n - 1) / arrivals[-1], rel=0.04)
    assert got["steady_window_s"][0] > service.min() and got["steady_window_s"][1] == pytest.approx(arrivals[-1])


def test_a_queue_held_back_by_something_other_than_full_rows_is_not_saturation():
    # Every request waits 0.5 s for admission but never more than 4 of 32 rows are busy.
    n = 200
    arrivals = np.arange(n) * 0.1
    timeline = [{"arrival": t, "admitted": t + 0.5, "token_times": [t + 0.8]} for t in arrivals]
    got = steady(timeline, 32)
    assert got["saturated"] is False and got["steady_rate"] == pytest.approx(10.0)


def test_steady_fields_without_completions():
    got = steady([{"arrival": 0.0, "admitted": None, "token_times": []}], 4)
    assert got == {"steady_rate": None, "steady_window_s": None, "steady_fraction": 0.0, "saturated": False,
                   "steady_skip": 0}


# ------------------------------------------------------------------------- request times
def test_request_times_by_hand():
    records = [  # out of arrival order; the run's first arrival is 100.0
        {"arrival": 101.0, "admitted": 101.25, "token_times": [101.5, 102.0000004]},
        {"arrival": 100.0, "admitted": 100.0, "token_times": [100.5]},
        {"arrival": 102.0, "admitted": 102.5, "token_times": []},  # admitted, no token yet
        {"arrival": 103.0, "admitted": None, "token_times": []},  # never admitted
    ]
    assert request_times(records) == {"arrival": [0.0, 1.0, 2.0, 3.0], "admitted": [0.0, 1.25, 2.5, None],
                                      "finished": [0.5, 2.0, None, None]}


def test_a_row_taken_microseconds_after_its_completion_keeps_the_queue_waiting():
    # One row, a queue of exactly one: request i + 1 arrives while i is served and takes the
    # row 30 us after i's last token, as the next step's start would. At every completion but
    # the last, one request waits: a resolution of 0.1 ms would merge the two instants.
    n, lag, records, t = 10, 30e-6, [], 0.0
    for i in range(n):
        records.append({"arrival": max(t - 0.5, 0.0), "admitted": t, "token_times": [t + 1.0]})
        t += 1.0 + lag
    times = request_times(records)
    assert all(a > f for a, f in zip(times["admitted"][1:], times["finished"]))
    got = steady(records, 1)
    assert got["saturated"] and got["steady_fraction"] == pytest.approx((n - 2) / n)  # the stretch less one batch (1 row)
    assert got["steady_rate"] == pytest.approx(1 / (1 + lag), rel=1e-6)


def _synthetic_runs():
    rows, service = 32, np.random.default_rng(4).uniform(0.5, 1.5, 400)
    return [(served_by_rows(poisson(400, rate, seed=4), service, rows), rows) for rate in (16.0, 32.0, 64.0)] + [
        ([{"arrival": 0.0, "admitted": None, "token_times": []}], 4), (RECORDS, 1)]


@pytest.mark.parametrize("case", range(5))
def test_steady_is_steady_from_times_skipping_one_batch(case):
    records, rows = _synthetic_runs()[case]
    got = steady(records, rows)
    assert steady_from_times(request_times(records), rows, skip=rows) == got
    assert got["steady_skip"] == (rows if got["saturated"] else 0)


def test_a_skip_starts_the_window_later_by_as_many_completions():
    rows, n = 32, 400
    records = served_by_rows(poisson(n, 64.0, seed=5), [1.0] * n, rows)
    times = request_times(records)
    base = steady_from_times(times, rows, skip=0)
    later = steady_from_times(times, rows)
    assert base["saturated"] and later["saturated"]
    assert later["steady_window_s"][0] > base["steady_window_s"][0]
    assert later["steady_window_s"][1] == base["steady_window_s"][1]
    assert later["steady_fraction"] == pytest.approx(base["steady_fraction"] - rows / n)
    assert later["steady_rate"] == pytest.approx(rows, rel=0.05)


def test_a_skip_past_the_stretch_leaves_no_rate_and_an_unsaturated_window_stays():
    rows, n = 32, 400
    saturated = request_times(served_by_rows(poisson(n, 64.0, seed=6), [1.0] * n, rows))
    for skip in (n, 10 * n):  # more completions than the stretch holds
        assert steady_from_times(saturated, rows, skip=skip) == {
            "steady_rate": None, "steady_window_s": None, "steady_fraction": 0.0, "saturated": True,
            "steady_skip": skip}
    below = request_times(served_by_rows(poisson(n, 16.0, seed=6), [1.0] * n, rows))
    assert steady_from_times(below, rows, skip=50) == steady_from_times(below, rows) and \
        not steady_from_times(below, rows)["saturated"]


@pytest.mark.parametrize("multiple", [2.0, 4.0])
def test_the_first_batchs_wave_reads_low_and_the_window_leaves_it_out(multiple):
    # 256 rows, service times uniform in 0.25..1.75 s, 1,500 arrivals (part 12's shape). Past
    # capacity the first batch is admitted at once and finishes in a wave of its budgets: from
    # the stretch's first completion the rate reads low, the more so the higher the offered
    # rate; after one batch's worth it reads the capacity, at 1.25x and at 4x alike.
    rows, n = 256, 1500
    service = np.random.default_rng(1).uniform(0.25, 1.75, n)
    capacity = rows / service.mean()
    times = request_times(served_by_rows(poisson(n, multiple * capacity, seed=1), service, rows))
    near = request_times(served_by_rows(poisson(n, 1.25 * capacity, seed=1), service, rows))
    got = steady_from_times(times, rows)
    assert got["saturated"] and got["steady_fraction"] >= 0.6
    assert got["steady_rate"] == pytest.approx(capacity, rel=0.02)
    assert got["steady_rate"] == pytest.approx(steady_from_times(near, rows)["steady_rate"], rel=0.02)
    assert steady_from_times(times, rows, skip=0)["steady_rate"] < 0.97 * capacity


@pytest.mark.parametrize("times,skip,problem", [
    ({"arrival": [0.0], "admitted": [0.0], "finished": [1.0]}, -1, "skip"),
    ({"arrival": [0.0], "admitted": [0.0], "finished": [1.0]}, 1.5, "skip"),
    ({"arrival": [0.0], "admitted": [0.0]}, 0, "finished"),
    ({"arrival": [0.0, 1.0], "admitted": [0.0], "finished": [1.0]}, 0, "one length, got lengths"),
])
def test_steady_from_times_refuses_bad_input(times, skip, problem):
    with pytest.raises(ValueError, match=problem):
        steady_from_times(times, 4, skip=skip)
