"""``check call.wav --plot out.png``: both channels' waveforms with the turns, barge-ins and (joined
with a trace) each turn's stages drawn on them. Needs matplotlib (the ``plot`` extra).

Colours from the Okabe-Ito palette as in :mod:`voicebudget._plot`: vermillion marks what a listener
flags (a talk-over, a missing reply) and the budget, stages keep one colour each."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from voicebudget._io import write_atomic  # noqa: E402
from voicebudget._plot import BUDGET_COLOR, DPI, STAGE_COLORS, drawn_as_written  # noqa: E402
from voicebudget.audio._api import AudioCheck  # noqa: E402
from voicebudget.audio._check import AnalysedCall  # noqa: E402
from voicebudget.audio._frontier import EndpointingFrontier  # noqa: E402
from voicebudget.audio._join import CallJoin  # noqa: E402
from voicebudget.traces._table import ON_PATH  # noqa: E402

__all__ = ["plot_call", "plot_frontier"]

_POINTS = 4_000
_CALLER, _AGENT = "#0072B2", "#009E73"


def _envelope(x: NDArray[np.float32], rate_hz: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Peak envelope at about :data:`_POINTS` points: times in s and peaks."""
    step = max(1, x.size // _POINTS)
    n = x.size // step
    peaks = np.abs(x[: n * step].reshape(n, step)).max(axis=1).astype(np.float64)
    return (np.arange(n) * step + step / 2) / rate_hz, peaks


def _channel(ax: Axes, t: NDArray[np.float64], peaks: NDArray[np.float64], colour: str, label: str) -> None:
    ax.fill_between(t, -peaks, peaks, color=colour, linewidth=0, alpha=0.8)
    ax.set_ylabel(label)
    ax.set_yticks([])
    ax.set_ylim(-1.05 * max(float(peaks.max(initial=0.0)), 1e-3), 1.05 * max(float(peaks.max(initial=0.0)), 1e-3))


def _turns(ax: Axes, a: AnalysedCall, budget_ms: float, barge_in_ms: float) -> None:
    for t in a.call.turns:
        end = t.caller_end_ms / 1000
        if t.agent_onset_ms is None:
            ax.axvspan(end, end + (t.silence_ms or 0.0) / 1000, color=BUDGET_COLOR, alpha=0.15, linewidth=0)
            ax.text(end, 0.92, "no reply", color=BUDGET_COLOR, fontsize=7, transform=ax.get_xaxis_transform())
            continue
        onset = t.agent_onset_ms / 1000
        v2v = t.voice_to_voice_ms or 0.0
        bad = t.kind != "turn" or v2v > budget_ms
        colour = BUDGET_COLOR if bad else "#000000"
        ax.annotate("", xy=(onset, 0.5), xytext=(end, 0.5), xycoords=ax.get_xaxis_transform(),
                    arrowprops={"arrowstyle": "->", "color": colour, "lw": 1.2})  # fmt: skip
        label = f"{v2v:.0f} ms" + (" talk-over" if t.kind == "talk_over" else "")
        ax.text(min(end, onset), 0.58, label, color=colour, fontsize=7, transform=ax.get_xaxis_transform())
    for b in a.call.barge_ins:
        ax.axvspan(b.caller_onset_ms / 1000, b.agent_stop_ms / 1000, color=STAGE_COLORS[5], alpha=0.25, linewidth=0)
        colour = BUDGET_COLOR if b.stop_ms > barge_in_ms else "#000000"
        ax.text(b.caller_onset_ms / 1000, 0.1, f"barge-in: stops in {b.stop_ms:.0f} ms", fontsize=7, color=colour,
                transform=ax.get_xaxis_transform())  # fmt: skip


def _stages(ax: Axes, join: CallJoin) -> None:
    names = [s for s in ON_PATH if any(s in j.trace_turn.stages_ms or s == "transport" for j in join.turns)]
    colours = {s: STAGE_COLORS[i % len(STAGE_COLORS)] for i, s in enumerate(names)}
    for j, row in zip(join.turns, join.table.turns, strict=True):
        left = j.audio_turn.caller_end_ms / 1000
        for s in names:
            ms = row.stages_ms.get(s)
            if ms is None or ms <= 0:
                continue
            ax.barh(0, ms / 1000, left=left, color=colours[s], height=0.6, edgecolor="white", linewidth=0.3)
            left += ms / 1000
    handles = [Rectangle((0, 0), 1, 1, color=colours[s]) for s in names]
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    ax.set_yticks([])
    ax.set_ylabel("stages")


@drawn_as_written()
def plot_call(result: AudioCheck, path: str | Path) -> Path:
    """Draw the first recording of ``result``: caller and agent waveforms, an arrow per turn from the
    caller's end of speech to the agent's first audio (its voice-to-voice latency; vermillion when over
    budget or flagged), barge-ins shaded (their stop time vermillion when over the barge-in budget), and
    with a joined trace a strip of each turn's stages (endpointing from the recording's end of speech ...
    transport) on the same time axis.

    :param path: the image file (PNG, SVG, PDF by its suffix), replaced atomically.
    :returns: the path written.
    """
    a = result.calls[0]
    join = next((j for j in result.joins if j.recording == a.call.origin), None)
    rows = 3 if join is not None else 2
    fig, axes = plt.subplots(rows, 1, sharex=True, figsize=(13.0, 1.9 * rows + 0.6),
                             gridspec_kw={"height_ratios": [3, 3, 1][:rows]})  # fmt: skip
    rec = a.recording
    for ax, pcm, colour, label, segs in (
        (axes[0], rec.caller, _CALLER, "caller", a.call.caller),
        (axes[1], rec.agent, _AGENT, "agent", a.call.agent),
    ):
        t, peaks = _envelope(pcm, rec.rate_hz)
        _channel(ax, t, peaks, colour, label)
        for s in segs:
            ax.axvspan(s.start_ms / 1000, s.end_ms / 1000, color=colour, alpha=0.08, linewidth=0)
    barge_in_ms = result.barge_in.budget.total_ms if result.barge_in is not None else float("inf")
    _turns(axes[1], a, result.check.budget.total_ms, barge_in_ms)
    if join is not None:
        _stages(axes[2], join)
    r = result.check.report
    assert r is not None  # a recording's check always has turns
    verdict = "PASS" if r.passed else "FAIL"
    axes[0].set_title(
        f"{Path(a.call.origin).name}: {verdict} {r.budget.label} {r.total.at_percentile_ms:.0f} ms "
        f"(budget {r.budget.total_ms:g} ms), {r.n_turns} turns",
        loc="left",
        fontsize=10,
    )
    axes[-1].set_xlabel("time in the recording, s")
    fig.tight_layout()
    out = Path(path)
    try:
        write_atomic(out, lambda tmp: fig.savefig(tmp, dpi=DPI, format=out.suffix.lstrip(".").lower() or "png"))
    finally:
        plt.close(fig)
    return out


@drawn_as_written()
def plot_frontier(result: EndpointingFrontier, path: str | Path) -> Path:
    """The fixed-timeout frontier (latency added at the percentile against the share of turns cut off
    early) with the scenario's settings marked; a few timeouts labelled along the curve.

    :returns: the path written.
    """
    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    ax.plot(result.cut_share * 100, result.timeouts_ms, color="#000000", lw=1.5, label="fixed silence timeout")
    for t in (200, 500, 1000, 2000, 3000):
        i = int(np.argmin(np.abs(result.timeouts_ms - t)))
        ax.plot(result.cut_share[i] * 100, result.timeouts_ms[i], "o", color="#000000", ms=3)
        ax.annotate(f"{t / 1000:g} s", (result.cut_share[i] * 100, result.timeouts_ms[i]), fontsize=7,
                    xytext=(4, 2), textcoords="offset points")  # fmt: skip
    for k, p in enumerate(result.settings):
        colour = STAGE_COLORS[k % len(STAGE_COLORS)]
        ax.plot(p.cut_share * 100, p.added_p95_ms, "D", color=colour, ms=7, label=p.label)
    ax.set_xlabel("turns cut off early at a mid-turn pause, %")
    ax.set_ylabel(f"latency added at the end of the turn, p{result.percentile:g} ms")
    ax.set_title(f"{result.scenario}: the endpointing trade-off", loc="left", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    out = Path(path)
    try:
        write_atomic(out, lambda tmp: fig.savefig(tmp, dpi=DPI, format=out.suffix.lstrip(".").lower() or "png"))
    finally:
        plt.close(fig)
    return out
