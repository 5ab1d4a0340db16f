"""Terminal rendering of a recording check (rich renderables; imported by the CLI only)."""

from __future__ import annotations

from typing import Any

import numpy as np

from voicebudget._report import Report
from voicebudget._text import as_given, count, literal, printable
from voicebudget.audio._api import AudioCheck
from voicebudget.audio._frontier import EndpointingFrontier
from voicebudget.traces._render import render_check

__all__ = ["render_calls", "render_frontier"]


def _pct(values: list[float]) -> str:
    if not values:
        return "none"
    p50, p95 = np.percentile(np.asarray(values, dtype=np.float64), [50, 95])
    return f"{count(len(values), 'pause')}, p50 {p50:.0f} ms, p95 {p95:.0f} ms"


def render_calls(result: AudioCheck, *, all_turns: bool = False) -> Any:
    """The trace check's rendering, then per recording: channels, barge-ins, mid-turn pauses, and the
    join with its trace (offset, turns matched, transport and anchor bias)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    verdicts = [_barge_in_verdict(result.barge_in)] if result.barge_in is not None else []
    parts: list[Any] = [render_check(result.check, all_turns=all_turns, verdicts=verdicts)]
    limit = result.barge_in.budget.total_ms if result.barge_in is not None else float("inf")
    joins = {j.recording: j for j in result.joins}
    for a in result.calls:
        call, rec = a.call, a.recording
        kinds = [t.kind for t in call.turns]
        parts.append(
            Text(
                f"{printable(call.origin)}: caller {rec.caller_channel}, {call.duration_ms / 1000:.1f} s at "
                f"{rec.source_rate_hz} Hz; {count(kinds.count('turn'), 'turn')}, "
                f"{count(kinds.count('talk_over'), 'talk-over')}, "
                f"{count(kinds.count('no_reply'), 'no-reply', 'no-replies')}, "
                f"{count(len(call.barge_ins), 'barge-in')}; mid-turn pauses: {_pct(list(call.pauses_ms))}"
            )
        )
        if call.barge_ins:
            table = Table(title="barge-ins: caller onset -> agent audio stops", title_justify="left")
            for col in ("caller onset s", "agent stops s", "stop ms", "budget"):
                table.add_column(col, justify="right")
            for b in call.barge_ins:
                over = b.stop_ms > limit
                table.add_row(
                    f"{b.caller_onset_ms / 1000:.2f}",
                    f"{b.agent_stop_ms / 1000:.2f}",
                    f"{b.stop_ms:.0f}",
                    "over" if over else "within",
                    style="red" if over else None,
                )
            parts.append(table)
        j = joins.get(call.origin)
        if j is not None:
            tr = [t.transport_ms for t in j.turns]
            bias = [t.anchor_bias_ms for t in j.turns]
            parts.append(
                Text(
                    f"joined with {printable(j.trace)}: clock offset {j.offset_ms / 1000:.3f} s (server - recording; "
                    f"first speech gave {j.coarse_offset_ms / 1000:.3f} s, fastest turn's delay set to "
                    f"{j.transport_floor_ms:g} ms); {count(len(j.turns), 'turn')} matched"
                    + (f", {len(j.unmatched)} trace turn(s) with no reply in the recording" if j.unmatched else "")
                    + f"; transport (no log sees it) p50 {np.median(tr):.0f} ms, max {max(tr):.0f} ms; "
                    f"anchor bias (log's end of speech - recording's) p50 {np.median(bias):+.0f} ms"
                )
            )
            traced = dict(zip((x.recording for x in result.joins), result.trace_barge_ins, strict=False))
            events = traced.get(call.origin, ())
            if events:
                det = [b.detection_ms for b in events]
                parts.append(
                    Text(
                        f"the trace records {count(len(events), 'barge-in')} ({events[0].source}): detection "
                        f"p50 {np.median(det):.0f} ms, max {max(det):.0f} ms (onset -> interruption decided, as "
                        "the agent saw the onset)"
                    )
                )
    return Group(*parts)


def _barge_in_verdict(report: Report) -> Any:
    """One line: the barge-ins' verdict against their own budget."""
    from rich.text import Text

    verdict = "[green]PASS[/]" if report.passed else "[red]FAIL[/]"
    return Text.from_markup(
        f"barge-ins (caller onset -> the agent's audio stops): {verdict} {literal(report.summary())}; "
        f"{report.within_budget_share:.1%} of {count(report.n_turns, 'barge-in')} within "
        f"{as_given(report.budget.total_ms)} ms (the barge-in budget)"
    )


FRONTIER_ROWS_MS = (100, 200, 300, 500, 800, 1000, 1500, 2000, 2500, 3000)
"""Timeouts the table lists (the whole curve is in --format json and the plot)."""


def render_frontier(result: EndpointingFrontier) -> Any:
    """The frontier as a table at round timeouts, then each setting of the scenario."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    pm = result.pauses
    per_turn = f"{pm.counts.mean():.2f} per turn (observed)" if pm.counts.size else f"{pm.pauses_per_turn:g} per turn"
    p50, p95 = np.percentile(pm.pauses_ms, [50, 95])
    label = f"p{result.percentile:g}"
    parts: list[Any] = [
        Text(
            f"{printable(result.scenario)}: endpointing trade-off; mid-turn pauses from {printable(pm.source)}: "
            f"p50 {p50:.0f} ms, p95 {p95:.0f} ms, {per_turn}"
        )
    ]
    table = Table(title="fixed silence timeout (the frontier)", title_justify="left")
    for col in ("timeout ms", f"added {label} ms", "turns cut off"):
        table.add_column(col, justify="right")
    for t in FRONTIER_ROWS_MS:
        i = int(np.argmin(np.abs(result.timeouts_ms - t)))
        table.add_row(f"{result.timeouts_ms[i]:.0f}", f"{result.timeouts_ms[i]:.0f}", f"{result.cut_share[i]:.1%}")
    parts.append(table)
    settings = Table(title="the scenario's settings", title_justify="left")
    for col in ("variant", f"added {label} ms", "turns cut off", "timeout with that cut-off"):
        settings.add_column(col, justify="left" if col == "variant" else "right")
    for p in result.settings:
        same = result.timeout_for(p.cut_share)
        settings.add_row(
            literal(p.label), f"{p.added_p95_ms:.0f}", f"{p.cut_share:.1%}", "-" if same is None else f"{same:.0f} ms"
        )
    parts.append(settings)
    parts.append(
        Text(
            "a setting below the frontier adds less latency than the fixed timeout with the same cut-off "
            "(a turn detector earns its keep); above it, a plain timeout does better"
        )
    )
    return Group(*parts)
