"""fusedlib.bench.plots: each figure from synthetic rows, None from none."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fusedlib.bench import plots as P
from fusedlib.bench.workloads import arrival_times
from fusedlib.bench.figures import chapter, data, part08, part10, part11, part12
from tests.bench import synthetic_rows


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return synthetic_rows.write(tmp_path_factory.mktemp("rows"))


def arrived_rate(n: int, rate: float, seed: int) -> float:
    """The rate a run's draw arrived at: (n - 1) over the last of its arrival times."""
    return (n - 1) / arrival_times(n, rate, seed)[-1]


def figures(d):
    bw, gemm = data.rates(d)
    return {
        "capacity": P.capacity_vs_rate(chapter.capacity_sweeps(d), "part10"),
        "latency": P.latency_vs_rate(chapter.capacity_sweeps(d), "part10"),
        "steps": P.steps_vs_floor(chapter.step_rows(d)),
        "roofline": P.roofline(part10.roofline_points(d), bw, gemm),
        "attention": P.attention_vs_copy(part08.attention_table(d)),
        "scale": P.scale_capacity(part11.scale_settings(d)),
        "tail": P.scale_tail(part11.scale_sweeps(d)),
        "request_time": P.request_time_by_class(part12.census(d=d)[0]),
        "census": P.census_stacked(part12.census_steps(d)),
    }


def test_every_figure_draws_from_rows(rows):
    for name, fig in figures(rows).items():
        assert isinstance(fig, Figure), name
        assert all(ax.has_data() for ax in fig.axes), name


def test_no_rows_no_figure(tmp_path):
    assert all(f is None for f in figures(tmp_path).values())


def test_the_roofline_is_log_log_with_both_roofs(rows):
    bw, gemm = data.rates(rows)
    fig = P.roofline(part10.roofline_points(rows), bw, gemm)
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    x, y = ax.lines[0].get_data()
    assert max(y) == pytest.approx(gemm / 1e12)  # compute roof
    i = 0
    assert y[i] == pytest.approx(bw * x[i] / 1e12)  # bandwidth roof at low intensity
    points = sum(len(c.get_offsets()) for c in ax.collections)
    assert points == len(part10.roofline_points(rows))  # one point per step kind / class
    assert not ax.texts or all("roof" in t.get_text() for t in ax.texts)  # points are named in the legend


def test_capacity_plot_shows_both_engines_of_the_highlighted_part(rows):
    fig = P.capacity_vs_rate(chapter.capacity_sweeps(rows), "part8")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "part 8, fused" in labels and "part 8, chunked" in labels and "part 9, fused" not in labels


def test_latency_of_a_part_without_rows_is_none(rows):
    assert P.latency_vs_rate(pd.DataFrame(), "part7") is None
    assert P.latency_vs_rate(chapter.capacity_sweeps(rows), "part11") is None


def _overlapping_tick_labels(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of visible tick labels, on one axis, whose drawn boxes overlap."""
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        for labels in (ax.get_xticklabels(which="both"), ax.get_yticklabels(which="both")):
            shown = [t for t in labels if t.get_visible() and t.get_text().strip()]
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in shown]
            out += [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]
    return out


@pytest.fixture(scope="module")
def cpu_rows(rows, tmp_path_factory):
    """The synthetic rows as a CPU run writes them: no GPU time."""
    folder = tmp_path_factory.mktemp("cpu")
    for path in rows.glob("*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        lines = [r | {"device_name": "cpu", "gpu_ms": None, "flops": None, "bytes": None} for r in lines]
        (folder / path.name).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


@pytest.mark.slow(3)
def test_no_figure_has_overlapping_tick_labels_or_an_empty_axis(rows, cpu_rows):
    for d in (rows, cpu_rows, data.REPO / "data"):
        for name, fig in figures(d).items():
            if fig is None:
                continue
            assert all(ax.has_data() for ax in fig.axes), (d, name)
            assert not _overlapping_tick_labels(fig), (d, name, _overlapping_tick_labels(fig))


def test_the_tick_check_can_fail():
    fig = Figure(figsize=(2, 2))
    ax = fig.subplots()
    ax.plot([1, 2], [1, 2])
    ax.set_xticks([1, 1.01], ["a long label", "another long label"])
    assert _overlapping_tick_labels(fig)


def test_a_highlighted_capacity_plot_is_fitted_to_its_part(rows):
    sweeps = chapter.capacity_sweeps(rows)
    ax = P.capacity_vs_rate(sweeps, "part7").axes[0]
    own = sweeps[sweeps["config"] == "part7"]
    assert ax.get_ylim()[1] <= own["served_rate"].max() * 1.2
    assert ax.get_xlim()[1] <= own["rate"].max() * 1.1


def test_the_capacity_plot_marks_runs_below_saturation_and_the_rounds_spread():
    c = pd.DataFrame([{"config": "part7", "engine": "fused", "rate": r, "round": k, "seed": k, "n_requests": 400,
                       "steady_rate": v, "saturated": sat, "served_rate": v}
                      for r, k, v, sat in ((4.0, 0, 3.9, False), (8.0, 0, 6.5, True), (8.0, 1, 7.5, True),
                                           (8.0, 2, 7.0, True))])
    sweeps = chapter.sweep_table(c)
    assert sweeps[["capacity", "capacity_min", "capacity_max", "n"]].values.tolist() == [[3.9, 3.9, 3.9, 1],
                                                                                        [7.0, 6.5, 7.5, 3]]
    ax = P.capacity_vs_rate(sweeps, "part7").axes[0]
    assert list(ax.lines[1].get_ydata()) == [3.9, 6.5]  # the sweep's line: round 0 at every rate, not the median
    # at the rate round 0's draw arrived at (seed 0's 400 arrivals land 11% under the Poisson rate), not the offered
    assert list(ax.lines[1].get_xdata()) == pytest.approx([arrived_rate(400, r, 0) for r in (4.0, 8.0)])
    assert ax.lines[1].get_xdata()[1] < 0.9 * 8.0 and ax.get_xlabel().startswith("arrived")
    hollow = [list(line.get_xdata()) for line in ax.lines
              if line.get_marker() == "o" and line.get_markerfacecolor() == "white" and len(line.get_xdata())]
    assert hollow == [[pytest.approx(arrived_rate(400, 4.0, 0))]]
    bars = [s.tolist() for c in ax.collections for s in c.get_segments()]  # at the median of the rounds' arrived rates
    x = float(np.median([arrived_rate(400, 8.0, k) for k in range(3)]))
    assert bars == [[[pytest.approx(x), 6.5], [pytest.approx(x), 7.5]]]
    labels = ax.get_legend_handles_labels()[1]
    assert "queue ran dry (below saturation)" in labels and "range and median (tick) over the rounds" in labels


def test_every_latency_axis_has_a_labelled_tick_either_side_of_its_data(rows):
    for d in (rows, data.REPO / "data"):
        for name in ("latency", "tail"):  # log y axes of data (the roofline's lines are roofs, clipped)
            for ax in figures(d)[name].axes:
                y = np.concatenate([line.get_ydata() for line in ax.lines]).astype(float)
                y = y[np.isfinite(y) & (y > 0)]
                lo, hi = ax.get_ylim()
                ticks = [t for t in ax.get_yticks() if lo <= t <= hi]
                labelled = [t for t, label in zip(ticks, ax.yaxis.major.formatter.format_ticks(ticks)) if label]
                assert min(labelled) <= y.min() and max(labelled) >= y.max(), (d, name, labelled, y.min(), y.max())


def test_the_tails_tell_budgets_apart_by_marker_and_spell_out_their_axes(rows):
    fig = P.scale_tail(part11.scale_sweeps(rows))
    budgets = part11.scale_sweeps(rows)["chunk_tokens"].nunique()
    for ax in fig.axes:
        assert len({line.get_marker() for line in ax.lines}) == budgets
    for d in (rows, data.REPO / "data"):
        for name, f in figures(d).items():
            labels = [text for ax in f.axes for text in (ax.get_xlabel(), ax.get_ylabel())]
            assert not [x for x in labels if "TTFT" in x or "ITL" in x or "offered" in x], (d, name, labels)


def _covered(fig: Figure) -> list:
    """Texts drawn on an axes (not its tick labels) whose boxes overlap another such text or the
    legend, or cover a point; and points drawn on a point of their size or larger (one hides the other)."""
    FigureCanvasAgg(fig).draw()
    renderer, out = fig.canvas.get_renderer(), []
    for ax in fig.axes:
        texts = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts if t.get_visible()]
        legend = ax.get_legend()
        if legend is not None:
            texts.append(("legend", legend.get_window_extent(renderer)))
        out += [(a, b) for (a, ba), (b, bb) in itertools.combinations(texts, 2) if ba.overlaps(bb)]
        points = [(xy, size) for c in ax.collections for xy, size in
                  zip(ax.transData.transform(c.get_offsets()), np.broadcast_to(c.get_sizes(), len(c.get_offsets())))]
        out += [(name, tuple(xy)) for name, box in texts for xy, _ in points if box.contains(*xy)]
        out += [(tuple(a), tuple(b)) for (a, sa), (b, sb) in itertools.combinations(points, 2)
                if np.hypot(*(a - b)) < 2 and max(sa, sb) < 2 * min(sa, sb)]
    return out


def test_the_roofline_covers_no_label_and_hides_no_point(rows):
    for d in (rows, data.REPO / "data"):
        bw, gemm = data.rates(d)
        assert not _covered(P.roofline(part10.roofline_points(d), bw, gemm)), d


def test_the_cover_check_can_fail():
    fig = Figure(figsize=(3, 3))
    ax = fig.subplots()
    ax.scatter([1, 1, 2], [1, 1, 2], s=30)  # two points of one size on one spot
    ax.text(2, 2, "a label on a point")
    assert len(_covered(fig)) == 2
