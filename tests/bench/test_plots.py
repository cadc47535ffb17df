"""fusedlib.bench.plots: each figure from synthetic rows, None from none."""
from __future__ import annotations

import pandas as pd
import pytest
from matplotlib.figure import Figure

from fusedlib.bench import plots as P
from fusedlib.bench.figures import chapter, data, part08, part10, part11
from tests.bench import synthetic_rows


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return synthetic_rows.write(tmp_path_factory.mktemp("rows"))


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
    assert len(ax.collections) == len(part10.roofline_points(rows))  # one point per step kind / class


def test_capacity_plot_shows_both_engines_of_the_highlighted_part(rows):
    fig = P.capacity_vs_rate(chapter.capacity_sweeps(rows), "part8")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "part 8, fused" in labels and "part 8, chunked" in labels and "part 9, fused" not in labels


def test_latency_of_a_part_without_rows_is_none(rows):
    assert P.latency_vs_rate(pd.DataFrame(), "part7") is None
    assert P.latency_vs_rate(chapter.capacity_sweeps(rows), "part11") is None
