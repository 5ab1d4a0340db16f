"""The inference model against a table of published measurements collected for issue 21, kept apart from the
calibration rows (tests/data/inference-measurements.csv: source, publication date and date read on every row).

Each row is predicted as its benchmark ran: an MLPerf Inference Server run as a closed loop at the concurrency
Little's law gives from its own log (completed samples/s x mean latency) for the mean TTFT and TPOT, and as an
open loop at its completed rate for the TTFT quantiles. ``predicted_before`` is the model as issue 21 was filed
(commit cfc3ad3), computed once with the same inputs (``python tests/test_inference_measurements.py`` prints
both); a row it could not predict (beyond its capacity) has no figure.

The summary line gives the per-class median |error| before and after, and leave-one-source-out medians over
every source of the three tables (calibration, held-out, this one): the GPU constants are re-chosen from a small
grid on all rows but one source's, then that source is predicted (open-loop rows, ~20 ms each, are judged but not
refitted). Rows are not asserted one by one (a held-out row may be off); the medians are bounded below.
"""

from __future__ import annotations

import csv
import itertools
import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import voicebudget as vb

HERE = Path(__file__).resolve().parent
TABLE = HERE / "data" / "inference-measurements.csv"
BEFORE = HERE / "data" / "inference-measurements-before.csv"
CLASSES = ("decode", "ttft", "loaded", "wafer", "open-loop")
"""The issue's four classes, and the open-loop TTFT quantiles of MLPerf Server runs at their completed rate,
printed apart: those runs sit at the edge of their capacity by construction, where the open-loop fixed point
amplifies a step-time error several-fold (docs/inference.md), so they have no goal."""
GOALS = {"decode": 0.15, "ttft": 0.25, "loaded": 0.30, "wafer": 0.25, "open-loop": 1.0}


@dataclass(frozen=True)
class Row:
    id: str
    source: str
    cls: str
    model: str
    hardware: str
    deployment: vb.Deployment
    workload: vb.Workload
    metric: str  # an InferenceResult field, or "open:<OpenLoopResult field>" with request_rate
    measured: float
    rate: float | None
    published: str
    read: str
    url: str


def rows() -> list[Row]:
    with TABLE.open(encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    out = []
    for r in raw:
        dep: dict[str, Any] = {"chips": int(r["chips"]), "tensor_parallel": int(r["tensor_parallel"])}
        dep["precision"] = r["precision"]
        if r["concurrency"]:
            dep["concurrency"] = int(r["concurrency"])
        out.append(
            Row(
                r["id"],
                r["source"],
                r["cls"],
                r["model"],
                r["hardware"],
                vb.Deployment(**dep),
                vb.Workload(prompt_tokens=int(r["prompt_tokens"]), output_tokens=int(r["output_tokens"])),
                r["metric"],
                float(r["value"]),
                float(r["request_rate_per_s"]) if r["request_rate_per_s"] else None,
                r["published"],
                r["read"],
                r["url"],
            )
        )
    return out


def predict(row: Row, calibration: vb.GPUCalibration | None = None) -> float | None:
    """The model's figure for a row; ``None`` when it calls the row's load beyond the deployment's capacity."""
    cal = calibration or vb.GPUCalibration()
    try:
        if row.metric.startswith("open:"):
            assert row.rate is not None
            r = vb.estimate_open_loop(row.model, row.hardware, row.deployment, row.workload, row.rate, calibration=cal)
            return float(getattr(r, row.metric.split(":", 1)[1]))
        res = vb.estimate_inference(row.model, row.hardware, row.deployment, row.workload, calibration=cal)
        return float(getattr(res, row.metric))
    except vb.ModelError:
        return None


def before() -> dict[str, float | None]:
    with BEFORE.open(encoding="utf-8") as f:
        return {r["id"]: (float(r["predicted_before"]) if r["predicted_before"] else None) for r in csv.DictReader(f)}


def _medians(errs: dict[str, tuple[str, float | None]]) -> dict[str, tuple[float, int, int]]:
    """Per class: (median |error| of the predicted rows, rows predicted, rows in the class)."""
    out = {}
    for c in CLASSES:
        vals = [abs(e) for k, (cls, e) in errs.items() if cls == c and e is not None]
        n = sum(1 for cls, _ in errs.values() if cls == c)
        if n:
            out[c] = (statistics.median(vals) if vals else math.nan, len(vals), n)
    return out


def _fmt(meds: dict[str, tuple[float, int, int]]) -> str:
    return ", ".join(f"{c} {m:.1%} ({k}/{n} rows)" for c, (m, k, n) in meds.items())


def test_every_row_is_sourced_and_dated() -> None:
    table = rows()
    assert len({r.id for r in table}) == len(table)
    for r in table:
        assert r.cls in CLASSES
        assert r.url
        assert r.source
        assert r.published[:2] == "20"
        assert r.read.startswith("2026-")
    assert set(before()) == {r.id for r in table}


# --- leave one source out ---------------------------------------------------------------------------------

GRID = {
    "low_precision_compute_efficiency": (0.48, 0.56, 0.64),
    "tau_seq_ms": (0.005, 0.01, 0.02),
    "tau_layer_ms": (0.04, 0.05, 0.06),
}
"""The constants the leave-one-source-out fit re-chooses (the others stay at their defaults)."""


@dataclass(frozen=True)
class Judged:
    """One row of any of the three tables, as the cross-validation sees it."""

    id: str
    source: str
    cls: str
    measured: float
    tol: float
    run: Callable[[vb.GPUCalibration], float | None]
    refit: bool  # closed-loop GPU rows take part in the grid; wafer and open-loop rows are judged at the defaults


def _all_rows() -> list[Judged]:
    sys.path.insert(0, str(HERE))
    import test_inference_calibration as cal_t  # the sibling test modules hold the other tables
    import test_inference_validation as val_t

    out: list[Judged] = []
    cal_rows = {r["id"]: r for r in cal_t._rows()}
    classes = {"G1": "decode", "G3": "decode", "G5a": "loaded", "M18": "loaded", "M3": "loaded"}
    for k, case in cal_t.CASES.items():
        sram = vb.get_hardware(case.hardware).memory_kind == "sram"
        cls = "wafer" if sram else classes.get(k, "ttft")

        def run(c: vb.GPUCalibration, case: Any = case) -> float | None:
            r = vb.estimate_inference(case.model, case.hardware, case.deployment, case.workload, calibration=c)
            return float(getattr(r, case.metric))

        src = cal_rows[k]["source"].split(" (")[0].split(";")[0]
        out.append(Judged(k, "calibration: " + src, cls, float(cal_rows[k]["value"]), case.tol, run, not sram))
    for v in val_t.ROWS:

        def run_v(c: vb.GPUCalibration, v: Any = v) -> float | None:
            if v.metric.startswith("open:"):
                r = vb.estimate_open_loop(v.model, v.hardware, v.deployment, v.workload, v.request_rate, calibration=c)
                return float(getattr(r, v.metric.split(":", 1)[1]))
            res = vb.estimate_inference(v.model, v.hardware, v.deployment, v.workload, calibration=c)
            return float(getattr(res, v.metric))

        src = v.source.split(",")[0].split(" (")[0].split(";")[0]
        refit = v.cls != "wafer" and not v.metric.startswith("open:")
        out.append(Judged(v.id, "held-out: " + src, v.cls, v.measured, val_t.GOALS[v.cls], run_v, refit))
    for r in rows():
        refit = not r.metric.startswith("open:")
        out.append(
            Judged(
                r.id,
                r.source,
                r.cls,
                r.measured,
                GOALS[r.cls],
                lambda c, r=r: predict(r, c),
                refit,
            )
        )
    return out


def _loss(errs: list[float]) -> float:
    """Mean |log error| (symmetric in too fast and too slow)."""
    return statistics.fmean(abs(math.log1p(e)) for e in errs) if errs else 0.0


def leave_one_source_out() -> tuple[dict[str, tuple[str, float | None]], dict[str, dict[str, float]]]:
    """Errors of every row predicted with constants chosen without its source, and the constants per source."""
    judged = _all_rows()
    combos = [dict(zip(GRID, vals, strict=True)) for vals in itertools.product(*GRID.values())]
    cals = [vb.GPUCalibration(**c) for c in combos]
    table: dict[tuple[int, str], float | None] = {}
    for i, c in enumerate(cals):
        for j in judged:
            if j.refit:
                p = j.run(c)
                table[(i, j.id)] = None if p is None else p / j.measured - 1.0
    default = {j.id: j.run(vb.GPUCalibration()) for j in judged if not j.refit}
    errs: dict[str, tuple[str, float | None]] = {}
    chosen: dict[str, dict[str, float]] = {}
    for source in sorted({j.source for j in judged}):
        train = [j for j in judged if j.refit and j.source != source]

        def score(i: int, train: list[Judged] = train) -> float:
            vals = [table[(i, j.id)] for j in train]
            return _loss([v for v in vals if v is not None]) + 10.0 * sum(v is None for v in vals)

        best = min(range(len(cals)), key=score)
        chosen[source] = combos[best]
        for j in judged:
            if j.source != source:
                continue
            if j.refit:
                errs[j.id] = (j.cls, table[(best, j.id)])
            else:
                p = default[j.id]
                errs[j.id] = (j.cls, None if p is None else p / j.measured - 1.0)
    return errs, chosen


def test_measurements_and_cross_validation(summary_line: Callable[[str], None]) -> None:
    table = rows()
    now = {r.id: (r.cls, (lambda p: None if p is None else p / r.measured - 1.0)(predict(r))) for r in table}
    old = before()
    then = {r.id: (r.cls, None if old[r.id] is None else old[r.id] / r.measured - 1.0) for r in table}
    meds_now, meds_then = _medians(now), _medians(then)
    per_row = ", ".join(f"{k} {'-' if e is None else f'{e:+.0%}'}" for k, (_, e) in now.items())
    summary_line(
        f"issue-21 measurements ({len(table)} rows, {len({r.source for r in table})} sources): median |error| "
        f"before {_fmt(meds_then)}; after {_fmt(meds_now)}; {per_row}"
    )
    loso, chosen = leave_one_source_out()
    meds_loso = _medians(loso)
    moved = sorted(
        {f"{k}={v:g}" for c in chosen.values() for k, v in c.items() if v != getattr(vb.GPUCalibration(), k)}
    )
    summary_line(
        f"leave-one-source-out ({len(chosen)} sources, {len(loso)} rows): median |error| {_fmt(meds_loso)}; "
        f"constants re-chosen away from the defaults in some fold: {', '.join(moved) or 'none'}"
    )
    # the closed-loop rows are all predicted, and each class's median is no worse than before (or within its goal)
    assert all(e is not None for k, (c, e) in now.items() if c != "open-loop")
    for c, (m, _, _) in meds_now.items():
        assert m <= max(meds_then[c][0], GOALS[c]), f"{c}: {m:.1%} worse than before ({meds_then[c][0]:.1%})"
    for c, (m, _, _) in meds_loso.items():
        assert m <= 2 * GOALS[c], f"leave-one-source-out {c}: {m:.1%} > twice the goal {GOALS[c]:.0%}"


@pytest.mark.parametrize("row", [r for r in rows() if r.cls != "open-loop"], ids=lambda r: r.id)
def test_closed_loop_row_is_predicted(row: Row) -> None:
    """Every audited deployment fits (the memory check admits what the audited system ran: N1/N2 are the single
    B200 at fp4 with 1,412 requests in flight) and its prediction is finite and under 60 s."""
    p = predict(row)
    assert p is not None
    assert 0 < p < 60_000


if __name__ == "__main__":  # write the before column: run with the old model on the path (see the docstring)
    with BEFORE.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "predicted_before"])
        for r in rows():
            try:
                if r.metric.startswith("open:"):
                    assert r.rate is not None
                    o = vb.estimate_open_loop(r.model, r.hardware, r.deployment, r.workload, r.rate)
                    p: float | None = float(getattr(o, r.metric.split(":", 1)[1]))
                else:
                    p = float(getattr(vb.estimate_inference(r.model, r.hardware, r.deployment, r.workload), r.metric))
            except vb.ModelError:
                p = None
            w.writerow([r.id, "" if p is None else f"{p:.2f}"])
            print(r.id, p)  # noqa: T201
