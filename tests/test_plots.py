"""Every bundled scenario's and council's plot: image size, legends outside the axes (bounding boxes
from matplotlib), verdict and p95 in each panel's title, one colour per stage, and the budget line in
a colour no stage uses."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import voicebudget as vb
from voicebudget.cli import app

plot = pytest.importorskip("voicebudget._plot")
ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted(p for p in (ROOT / "scenarios").iterdir() if p.suffix in (".toml", ".yaml"))
COUNCILS = sorted((ROOT / "councils").glob("*.toml"))
runner = CliRunner()


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def check_layout(fig) -> None:
    """Legends and titles inside the canvas; a legend overlaps no axes and no title or axis label."""
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    canvas = fig.bbox
    texts = [t for ax in fig.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
    if fig._suptitle is not None:
        texts.append(fig._suptitle)
    legends = [ax.get_legend() for ax in fig.axes]
    assert all(leg is not None for leg in legends)
    for leg in legends:
        box = leg.get_window_extent(renderer)
        assert canvas.contains(box.x0, box.y0)
        assert canvas.contains(box.x1, box.y1)
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), f"legend over the axes {ax.get_title()!r}"
        for text in texts:
            assert not box.overlaps(text.get_window_extent(renderer)), f"legend over {text.get_text()!r}"
    for text in texts:
        box = text.get_window_extent(renderer)
        assert canvas.x0 <= box.x0, f"{text.get_text()!r} cut at the edge"
        assert box.x1 <= canvas.x1, f"{text.get_text()!r} cut at the edge"


def check_colours(fig, budget_ms: float) -> None:
    ax_cdf, ax_bar = fig.axes
    # one colour per stage: the waterfall's legend entries each have their own (colour, hatch)
    bars = {}
    for container in ax_bar.containers:
        patch = container.patches[0]
        bars[container.get_label()] = (tuple(np.round(patch.get_facecolor(), 3)), patch.get_hatch())
    assert len(set(bars.values())) == len(bars)
    # the budget line is vermillion in both panels and no stage is
    budget = plot.matplotlib.colors.to_rgba(plot.BUDGET_COLOR)
    for ax in (ax_cdf, ax_bar):
        lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("budget")]
        assert [tuple(np.round(plot.matplotlib.colors.to_rgba(ln.get_color()), 3)) for ln in lines] == [
            tuple(np.round(budget, 3))
        ]
        assert lines[0].get_xdata()[0] == pytest.approx(budget_ms)
    assert all(face != tuple(np.round(budget, 3)) for face, _ in bars.values())
    # a member drawn in both panels has the same colour in both
    for line in ax_cdf.get_lines():
        if line.get_label() in bars:
            assert tuple(np.round(plot.matplotlib.colors.to_rgba(line.get_color()), 3)) == bars[line.get_label()][0]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_scenario_plot(path: Path, tmp_path: Path) -> None:
    result = vb.simulate(vb.load_scenario(path), samples=4000, seed=1)
    reports, cdfs, breakdown = plot.run_figure_data(result)
    fig = plot.latency_figure(reports, cdfs, breakdown, result.budget, title=result.scenario)
    try:
        check_layout(fig)
        check_colours(fig, result.budget.total_ms)
        # each panel's title states the verdict and the latency at the percentile of every variant
        for ax in fig.axes:
            title = " ".join(ax.get_title().split())
            for r in result.reports:
                assert f"{r.name} {'PASS' if r.passed else 'FAIL'} {r.total.at_percentile_ms:.0f} ms" in title
        # a diamond at each variant's p95 on its bar
        diamonds = fig.axes[1].collections[0].get_offsets()
        np.testing.assert_allclose(diamonds[:, 0], [r.total.at_percentile_ms for r in result.reports])
    finally:
        plot.plt.close(fig)
    out = tmp_path / "run.png"
    cli = runner.invoke(app, ["run", str(path), "-n", "2000", "--plot", str(out)])
    assert cli.exit_code in (0, 1), cli.output
    assert png_size(out) == (1560, 720)


@pytest.mark.parametrize("path", COUNCILS, ids=lambda p: p.name)
def test_council_plot(path: Path, tmp_path: Path) -> None:
    from voicebudget.councils import run_council

    result = run_council(path, samples=4000, seed=1)
    reports, cdfs, breakdown = plot.council_figure_data(result)
    fig = plot.latency_figure(reports, cdfs, breakdown, result.report.budget, title=result.council.name)
    try:
        check_layout(fig)
        check_colours(fig, result.report.budget.total_ms)
        r = result.report
        cmp = "<=" if r.passed else ">"
        verdict = (
            f"{'PASS' if r.passed else 'FAIL'}: p95 {r.total.at_percentile_ms:.1f} ms {cmp} {r.budget.total_ms:g} ms"
        )
        assert all(verdict in ax.get_title() for ax in fig.axes)
        # the bar ends at the tail's mean (labelled so); the diamond is the p95, left of the budget
        # line when the council passes even if the bar crosses it
        ax_bar = fig.axes[1]
        end = sum(p.get_width() for c in ax_bar.containers for p in c.patches)
        assert any(t.get_text() == f"tail mean {end:.0f}" for t in ax_bar.texts)
        ((x, _),) = ax_bar.collections[0].get_offsets()
        assert x == pytest.approx(r.total.at_percentile_ms)
        assert (x <= r.budget.total_ms) == r.passed
    finally:
        plot.plt.close(fig)
    out = tmp_path / "council.png"
    cli = runner.invoke(app, ["council", str(path), "--samples", "2000", "--plot", str(out)])
    assert cli.exit_code in (0, 1), cli.output
    assert png_size(out) == (1560, 720)


def test_the_passing_vote_council_bar_crosses_the_budget_only_as_a_labelled_tail_mean() -> None:
    from voicebudget.councils import run_council

    result = run_council(ROOT / "councils" / "intent-wafer-vote.toml", samples=20_000, seed=1)
    assert result.passed
    _, _, breakdown = plot.council_figure_data(result)
    tail_mean = sum(breakdown["council"].values())
    # the tail's mean lies beyond the budget while the p95 is within it: the plot must say which is which
    assert result.report.total.at_percentile_ms < result.report.budget.total_ms < tail_mean


def test_stage_styles_are_stable_and_distinct() -> None:
    names = [f"s{i}" for i in range(9)]
    styles = plot.stage_styles(names + ["s0", "s3"])
    assert list(styles) == names
    assert len(set(styles.values())) == 9
    assert styles["s7"] == (plot.STAGE_COLORS[0], "//")  # colours repeat with hatching past seven
    assert plot.BUDGET_COLOR not in plot.STAGE_COLORS


def test_the_layout_check_catches_a_legend_over_the_bars() -> None:
    result = vb.simulate(vb.load_scenario(SCENARIOS[0]), samples=2000, seed=1)
    fig = plot.latency_figure(*plot.run_figure_data(result), result.budget)
    try:
        fig.axes[1].legend(loc="lower right")  # the old placement: inside the axes
        with pytest.raises(AssertionError, match="legend over the axes"):
            check_layout(fig)
    finally:
        plot.plt.close(fig)


def test_tune_plot(tmp_path: Path) -> None:
    from voicebudget.tuning import tune_council

    small = Path(__file__).parent / "data" / "tune-small.toml"
    result = tune_council(small, samples=1000)
    fig = plot.tune_figure(result)
    try:
        check_layout(fig)
        best = result.best
        head = f"PASS: pick p95 {best.p95_ms:.1f} ms <= {result.budget.total_ms:g} ms"
        assert all(head in ax.get_title() for ax in fig.axes)
        # every front row is a numbered point, the pick a star at its figures, the council as written
        # an X labelled "you" at its own
        ax_lat = fig.axes[0]
        labels = [t.get_text() for t in ax_lat.texts]
        assert sorted(int(t) for t in labels if t != "you") == list(range(1, len(result.pareto) + 1))
        assert labels.count("you") == 1
        own = result.as_written.candidate
        *_, star, you = ax_lat.collections
        ((x, y),) = star.get_offsets()
        assert (x, y) == pytest.approx((best.expected_user_time_ms, best.p95_ms))
        ((x, y),) = you.get_offsets()
        assert (x, y) == pytest.approx((own.expected_user_time_ms, own.p95_ms))
    finally:
        plot.plt.close(fig)
    out = tmp_path / "tune.png"
    cli = runner.invoke(app, ["tune", str(small), "--samples", "1000", "--plot", str(out)])
    assert cli.exit_code == 0, cli.output
    assert png_size(out) == (1560, 720)


def test_capacity_plot_uses_the_colour_blind_palette_and_keeps_equal_curves_visible() -> None:
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from voicebudget.capacity import plan_capacity_file
    from voicebudget.capacity._render import capacity_figure

    result = plan_capacity_file(ROOT / "scenarios" / "support-line.toml", samples=500, seed=1)
    fig = capacity_figure(result)
    try:
        by_label = {line.get_label(): line for line in fig.axes[0].get_lines()}
        names = [d.name for d in result.deployments]
        hosted = {"wafer-scale-api", "hosted-flash-lite"}  # over budget at any load: a dotted level, no capacity
        curves = [by_label[f"{n} (load-independent, over budget at any load)" if n in hosted else n] for n in names]
        colours = [to_hex(c.get_color()).upper() for c in curves]
        assert len(set(colours)) == len(names)  # one colour per deployment
        assert set(colours) <= set(plot.STAGE_COLORS) - {"#F0E442"}  # Okabe-Ito, not the faint yellow
        budget = by_label[f"budget {result.budget.total_ms:g} ms"]
        assert to_hex(budget.get_color()).upper() == plot.BUDGET_COLOR
        assert plot.BUDGET_COLOR not in colours
        # baseline and h100-fast-mode carry the same calls (45 in the table): their curves coincide, so
        # each later curve's markers are smaller and different, drawn inside the earlier ones
        base, fast = by_label["baseline"], by_label["h100-fast-mode"]
        at_base = dict(zip(base.get_xdata(), base.get_ydata(), strict=True))
        shared = [(y, at_base[x]) for x, y in zip(fast.get_xdata(), fast.get_ydata(), strict=True) if x in at_base]
        assert len(shared) >= 5
        assert [a for a, _ in shared] == pytest.approx([b for _, b in shared], rel=0.05)  # the same p95 per load
        assert base.get_marker() != fast.get_marker()
        assert base.get_markersize() > fast.get_markersize()
        # the cost panel places a deployment at its capacity: the two hosted APIs have none (0 calls)
        placed = [off for coll in fig.axes[1].collections for off in coll.get_offsets()]
        assert len(placed) == len(names) - len(hosted)
        at_capacity = {d.name: d.percentile_ms_at_max for d in result.deployments if d.name not in hosted}
        assert sorted(float(x) for x, _ in placed) == pytest.approx(sorted(at_capacity.values()))
    finally:
        plt.close(fig)
