"""The inference model against published measurements collected for issue 21, kept apart from the calibration and
held-out rows (tests/data/inference-measurements.csv: source, publication date and date read on every row).

How each row is predicted, as its benchmark ran:

- an MLPerf Inference Server or Interactive run: a closed loop at the concurrency Little's law gives from its own
  log (completed samples/s x mean latency) for the mean TTFT and TPOT, and an open loop at its completed rate for
  the TTFT p50 and p99, with the submitter's step budget (``max_num_tokens``) and scheduler (``chunked_prefill`` "no"
  for vLLM V0 without chunked prefill, ``scheduler_steps`` for its multi-step scheduling) when its config gives them;
- a static-batch sweep (``static:``): the whole batch prefilled in one step, then ``O - 1`` decode steps of the
  batch (``voicebudget.step_time_function``): the batch's latency, or output tokens/s per chip;
- a maximum-throughput table (``capacity:``): the deployment's capacity in requests/s (``estimate_open_loop``) times
  the output tokens;
- a provider speed page: tokens/s per user with the chip's default (newest) software generation;
- a GPU row's ``software`` is its serving-stack generation: "2024" for the 2023-24 stacks (MLPerf v4.1, vLLM 0.6 on
  MI300X, TensorRT-LLM v0.6.1), where a decoding sequence costs ``tau_seq_rank_ms`` per tensor-parallel rank beyond
  the first; blank for 2025 stacks (the default), which do not pay it.

``predicted_before`` and ``loso_before`` in tests/data/inference-measurements-before.csv are the same figures for the
model and table as this round began (main at cd777cc: issue 21 round 3 as landed, OpenOrca prompts still at the
assumed 300 tokens), computed once with the same code path (``python tests/test_inference_measurements.py --before``
with that checkout on the path); a row it could not predict (beyond its capacity) has no figure.

Leave-one-source-out uses these rows only (no calibration row): for each source, the GPU constants
(:class:`voicebudget.GPUCalibration`, every field) are re-chosen by coordinate descent on the other sources'
closed-loop and static rows (mean |log error|), then that source's rows are predicted with them; open-loop rows are
judged with their fold's constants (as are the capacity rows: both take ~20 ms a prediction), wafer/LPU rows have
no GPU constant. A constant whose move alone changes the
held-out rows' error by more than it changes the fit is reported as a warning.
"""

from __future__ import annotations

import csv
import functools
import math
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import voicebudget as vb

HERE = Path(__file__).resolve().parent
TABLE = HERE / "data" / "inference-measurements.csv"
BEFORE = HERE / "data" / "inference-measurements-before.csv"
CALIBRATION = (HERE / "data" / "inference-calibration.csv", HERE / "data" / "inference-calibration-added.csv")
CLASSES = ("decode", "ttft", "loaded", "wafer", "open-loop")
GOALS = {"decode": 0.15, "ttft": 0.25, "loaded": 0.30, "wafer": 0.25, "open-loop": 0.50}
"""The issue's four goals, and 50% for the open-loop TTFT quantiles of MLPerf runs at their completed rate (those
runs sit at the edge of their capacity by construction; a row the model puts above 90% of capacity is a lower
bound and is judged as one: right when the measurement is at or above it)."""


@dataclass(frozen=True)
class Row:
    id: str
    source: str
    cls: str
    model: str
    hardware: str
    deployment: vb.Deployment
    workload: vb.Workload
    metric: str  # an InferenceResult field, "open:<OpenLoopResult field>" or "static:latency_ms|tokens_per_s_per_chip"
    measured: float
    rate: float | None
    batch: int
    published: str
    read: str
    url: str


def _row(r: dict[str, str]) -> Row:
    dep: dict[str, Any] = {}
    if r["chips"]:
        dep |= {"chips": int(r["chips"]), "tensor_parallel": int(r["tensor_parallel"]), "precision": r["precision"]}
    if r["concurrency"] and not r["metric"].startswith("static:"):
        dep["concurrency"] = int(r["concurrency"])
    if r["chunk"]:
        dep["prefill_chunk_tokens"] = int(r["chunk"])
    if r["chunked_prefill"]:
        dep["chunked_prefill"] = r["chunked_prefill"] != "no"
    if r["scheduler_steps"]:
        dep["scheduler_steps"] = int(r["scheduler_steps"])
    if r["software"]:
        dep["software"] = r["software"]
    return Row(
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
        int(r["concurrency"] or 1),
        r["published"],
        r["read"],
        r["url"],
    )


@functools.cache
def rows() -> tuple[Row, ...]:
    with TABLE.open(encoding="utf-8") as f:
        return tuple(_row(r) for r in csv.DictReader(f))


def _static(row: Row, cal: vb.GPUCalibration) -> float:
    """A static batch: all ``b`` prompts in one step, then ``O - 1`` steps of ``b`` decoding sequences."""
    step = vb.step_time_function(row.model, row.hardware, row.deployment, row.workload, calibration=cal)
    b, p, o = float(row.batch), float(row.workload.prompt_tokens), float(row.workload.output_tokens)
    latency_ms = step(0.0, b * p) + (o - 1.0) * step(b, 0.0)
    if row.metric == "static:latency_ms":
        return latency_ms
    assert row.deployment.chips is not None
    return b * o / (latency_ms / 1e3) / row.deployment.chips


def predict(row: Row, calibration: vb.GPUCalibration | None = None) -> float | None:
    """The model's figure for a row; ``None`` when it calls the row's load beyond the deployment's capacity. An
    open-loop TTFT the model flags as a lower bound (above 90% of capacity) is returned negated."""
    cal = calibration or vb.GPUCalibration()
    try:
        if row.metric.startswith("open:"):
            assert row.rate is not None
            r = vb.estimate_open_loop(row.model, row.hardware, row.deployment, row.workload, row.rate, calibration=cal)
            value = float(getattr(r, row.metric.split(":", 1)[1]))
            return -value if r.ttft_lower_bound else value
        if row.metric.startswith("static:"):
            return _static(row, cal)
        if row.metric == "capacity:output_tokens_per_s":  # the largest request rate served, x output tokens
            r = vb.estimate_open_loop(row.model, row.hardware, row.deployment, row.workload, 1e-3, calibration=cal)
            return r.capacity_requests_per_s * row.workload.output_tokens
        res = vb.estimate_inference(row.model, row.hardware, row.deployment, row.workload, calibration=cal)
        return float(getattr(res, row.metric))
    except vb.ModelError:
        return None


def error(row: Row, predicted: float | None) -> float | None:
    """Signed relative error; a lower bound (negative prediction) at or below the measurement counts as exact."""
    if predicted is None:
        return None
    if predicted < 0:
        return 0.0 if -predicted <= row.measured else -predicted / row.measured - 1.0
    return predicted / row.measured - 1.0


def before() -> dict[str, tuple[float | None, float | None]]:
    """``{id: (predicted_before, loso_before error)}``."""
    with BEFORE.open(encoding="utf-8") as f:
        out = {}
        for r in csv.DictReader(f):
            out[r["id"]] = (
                float(r["predicted_before"]) if r["predicted_before"] else None,
                float(r["loso_before"]) if r["loso_before"] else None,
            )
        return out


Errors = dict[str, tuple[str, float | None]]


def _medians(errs: Errors) -> dict[str, tuple[float, int, int]]:
    """Per class: (median |error| of the predicted rows, rows predicted, rows in the class)."""
    out = {}
    for c in CLASSES:
        vals = [abs(e) for cls, e in errs.values() if cls == c and e is not None]
        n = sum(1 for cls, _ in errs.values() if cls == c)
        if n:
            out[c] = (statistics.median(vals) if vals else math.nan, len(vals), n)
    return out


def _fmt(meds: dict[str, tuple[float, int, int]]) -> str:
    return ", ".join(f"{c} {m:.1%} ({k}/{n})" for c, (m, k, n) in meds.items())


def _numbers(table: tuple[Row, ...], predicted: dict[str, float | None]) -> list[float]:
    """|error| of the open-loop rows predicted as numbers (not a lower bound, not beyond the modelled capacity)."""
    return [abs(v / r.measured - 1) for r in table if r.cls == "open-loop" and (v := predicted[r.id] or 0.0) > 0]


def _open_loop(table: tuple[Row, ...], predicted: dict[str, float | None]) -> str:
    """The open-loop rows as numbers, lower bounds (and whether they hold) and rows beyond modelled capacity."""
    rows_ = [r for r in table if r.cls == "open-loop"]
    numbers = _numbers(table, predicted)
    bounds = [r for r in rows_ if (predicted[r.id] or 0) < 0]
    held = sum(-(predicted[r.id] or 0) <= r.measured for r in bounds)
    beyond = sum(predicted[r.id] is None for r in rows_)
    median = f"{statistics.median(numbers):.1%}" if numbers else "-"
    return (
        f"open loop: {len(numbers)} predicted as numbers (median |error| {median}), {len(bounds)} lower bounds "
        f"({held} at or below the measurement), {beyond} beyond the modelled capacity"
    )


# --- leave one source out ---------------------------------------------------------------------------------

STEPS = (0.7, 0.85, 1.2, 1.4)
"""Multiples of a constant's current value tried in each coordinate-descent move (bounded by its field limits)."""


def _fields(cal: vb.GPUCalibration) -> tuple[str, ...]:
    return tuple(type(cal).model_fields)


def _candidates(cal: vb.GPUCalibration, name: str) -> list[vb.GPUCalibration]:
    out = []
    for k in STEPS:
        value = getattr(cal, name) * k
        if value == getattr(cal, name):
            continue
        try:
            out.append(type(cal)(**(cal.model_dump() | {name: value})))
        except ValueError:  # outside the field's limits (an efficiency above 1)
            continue
    return out


def _loss(errs: Iterable[float | None]) -> float:
    """Mean |log error| of the predicted rows (symmetric in too fast and too slow), plus 1 per row not predicted."""
    vals = list(errs)
    ok = [abs(math.log1p(e)) for e in vals if e is not None]
    return (statistics.fmean(ok) if ok else 0.0) + sum(e is None for e in vals)


def leave_one_source_out(
    table: tuple[Row, ...] | None = None,
) -> tuple[Errors, dict[str, dict[str, float]], list[str]]:
    """Errors of every row predicted with constants chosen without its source, the constants per source, and the
    warnings (a constant whose move alone shifts the held-out rows' error more than it shifts the fit)."""
    table = table or rows()
    default = vb.GPUCalibration()
    fitted = [r for r in table if r.cls != "wafer" and not r.metric.startswith(("open:", "capacity:"))]

    @functools.cache
    def err(cal_key: tuple[float, ...], row_id: str) -> float | None:
        cal = vb.GPUCalibration(**dict(zip(_fields(default), cal_key, strict=True)))
        row = next(r for r in table if r.id == row_id)
        return error(row, predict(row, cal))

    def key(cal: vb.GPUCalibration) -> tuple[float, ...]:
        return tuple(getattr(cal, f) for f in _fields(default))

    def loss(cal: vb.GPUCalibration, subset: list[Row]) -> float:
        return _loss(err(key(cal), r.id) for r in subset)

    errs: Errors = {}
    chosen: dict[str, dict[str, float]] = {}
    warnings: list[str] = []
    for source in sorted({r.source for r in table}):
        train = [r for r in fitted if r.source != source]
        held = [r for r in table if r.source == source]
        cal = default
        for _ in range(2):  # two sweeps of coordinate descent
            for name in _fields(default):
                best = min([cal, *_candidates(cal, name)], key=lambda c: loss(c, train))
                cal = best
        chosen[source] = {f: getattr(cal, f) for f in _fields(default) if getattr(cal, f) != getattr(default, f)}
        for r in held:
            errs[r.id] = (r.cls, err(key(cal), r.id) if r.cls != "wafer" else error(r, predict(r)))
        held_gpu = [r for r in held if r.cls != "wafer"]
        for name, value in chosen[source].items():
            one = default.model_copy(update={name: value})
            d_fit = loss(one, train) - loss(default, train)
            d_held = loss(one, held_gpu) - loss(default, held_gpu) if held_gpu else 0.0
            if d_held > abs(d_fit):  # the move hurts the held-out source by more than it helps (or hurts) the fit
                warnings.append(f"{name}={value:.3g} without {source}: held-out {d_held:+.3f} vs fit {d_fit:+.3f}")
    return errs, chosen, warnings


# --- tests --------------------------------------------------------------------------------------------------


def test_every_row_is_sourced_dated_and_not_a_calibration_row() -> None:
    table = rows()
    assert len(table) >= 60
    assert len({r.id for r in table}) == len(table)
    assert len({r.source for r in table}) >= 10
    calibration: set[tuple[str, str]] = set()
    for path in CALIBRATION:
        with path.open(encoding="utf-8") as f:
            calibration |= {(r["metric"], r["value"]) for r in csv.DictReader(f)}
    for r in table:
        assert r.cls in CLASSES
        assert r.url
        assert r.source
        assert r.published[:2] == "20"
        assert r.read.startswith("2026-")
        metric = r.metric.removeprefix("open:").replace("tpot_ms", "tpot_p50_ms")
        assert (metric, f"{r.measured:g}") not in calibration, r.id
    assert set(before()) == {r.id for r in table}


def _now() -> Errors:
    predicted = _predicted()
    return {r.id: (r.cls, error(r, predicted[r.id])) for r in rows()}


@functools.cache
def _predicted() -> dict[str, float | None]:
    return {r.id: predict(r) for r in rows()}


def test_measurements_and_cross_validation(summary_line: Callable[[str], None]) -> None:
    table = rows()
    now = _now()
    old = before()
    then: Errors = {r.id: (r.cls, error(r, old[r.id][0])) for r in table}
    meds_now, meds_then = _medians(now), _medians(then)
    per_row = ", ".join(f"{k} {'-' if e is None else f'{e:+.0%}'}" for k, (_, e) in now.items())
    summary_line(
        f"issue-21 measurements ({len(table)} rows, {len({r.source for r in table})} sources; median |error| per "
        f"class, rows predicted/in class, a lower bound at or below its measurement counted exact): before "
        f"{_fmt(meds_then)} [{_open_loop(table, {k: v for k, (v, _) in old.items()})}]; after {_fmt(meds_now)} "
        f"[{_open_loop(table, _predicted())}]; {per_row}"
    )
    readme = " ".join((HERE.parent / "README.md").read_text(encoding="utf-8").split())
    assert f"on {len(table)} more collected from" in readme  # the README's count follows the table
    loso, chosen, warnings = leave_one_source_out()
    loso_then: Errors = {r.id: (r.cls, old[r.id][1]) for r in table}
    moved = sorted({f"{k}={v:.3g}" for c in chosen.values() for k, v in c.items()})
    summary_line(
        f"leave-one-source-out ({len(chosen)} sources, {len(loso)} rows, no calibration row): median |error| before "
        f"{_fmt(_medians(loso_then))}; after {_fmt(_medians(loso))}; constants re-chosen in some fold: "
        f"{', '.join(moved) or 'none'}; warnings ({len(warnings)}): {'; '.join(warnings) or 'none'}"
    )
    for c, (m, k, n) in meds_now.items():
        if c == "open-loop":  # judged on its rows predicted as numbers, below
            continue
        assert k == n, f"{c}: only {k} of {n} rows predicted"
        assert m <= meds_then[c][0] + 1e-3, f"{c}: {m:.1%} worse than before ({meds_then[c][0]:.1%})"
        assert m <= AFTER_BOUNDS[c], f"{c}: {m:.1%} > {AFTER_BOUNDS[c]:.0%}"
    assert statistics.median(_numbers(table, _predicted())) <= AFTER_BOUNDS["open-loop"]
    for c, (m, _, _) in _medians(loso).items():
        assert m <= LOSO_BOUNDS[c], f"leave-one-source-out {c}: {m:.1%} > {LOSO_BOUNDS[c]:.0%}"
    bounds = [r for r in table if (_predicted()[r.id] or 0.0) < 0]
    assert all(-(_predicted()[r.id] or 0.0) <= r.measured for r in bounds)  # every lower bound holds


AFTER_BOUNDS = {"decode": 0.05, "ttft": 0.11, "loaded": 0.09, "wafer": 0.15, "open-loop": 0.64}
LOSO_BOUNDS = {"decode": 0.20, "ttft": 0.12, "loaded": 0.10, "wafer": 0.15, "open-loop": 0.12}
"""Upper bounds of the per-class medians (all rows, and leave one source out): the median reached this round
rounded up, a guard against drift (docs/inference.md gives the table). Open loop: every lower bound must hold
(asserted above) and the class median counts them exact, so across rounds it measures how many rows are bounds
rather than how good the numbers are; its all-rows bound is on the median |error| of the rows predicted as numbers,
not compared with the round before (rows move between numbers, bounds and beyond the modelled capacity as the
capacity moves; round 3 had 6 numbers at 69.8%, round 4 14 at 63.8%). Leave-one-source-out decode was 13.8% in
round 3: with OpenOrca's measured prompt length (222 tokens, not 300) the MLPerf Interactive TPOT rows come out
13-22% fast and every fold's re-chosen constants slow the steps down (memory efficiency 0.76), which the two
batch-1 rows pay (docs/inference.md). Loaded was 8% (7.6%) in round 4: with the per-rank sequence cost confined to
2023-24 stacks (the tp-8 ceiling; the GPUStack rows added) TensorRT-LLM 1.0's tp-2 capacity rows lose the cost that
made up for that release's decode-heavy rows coming out fast at tp 1 too (128 in / 2,048 out: +19%, +13%): the
median is 8.2% on the 124 rows (7.8% with the cost at every tp) while leave-one-source-out loaded falls from 11.0% to
9.6% (docs/inference.md)."""


@pytest.mark.parametrize("row", [r for r in rows() if r.cls != "open-loop"], ids=lambda r: r.id)
def test_closed_loop_row_is_predicted(row: Row) -> None:
    """Every audited deployment fits (the memory check admits what the audited system ran) and its prediction is
    finite and under 60 s."""
    p = predict(row)
    assert p is not None
    assert 0 < p < 60_000 or row.metric.startswith("static:")


TP8_TOLERANCE = {"GS1": 0.10, "GS2": 0.25, "GS3": 0.15, "R18": 0.10, "R19": 0.05}
"""The rows at tensor parallel 4-8 on 2025 serving stacks, each within its tolerance (issue 21, the tp-8 ceiling):
vLLM 0.11 and SGLang 0.5.5 serving Qwen3-235B-A22B to 984 requests at once on 8 (4) x H100 (GPUStack), and
TensorRT-LLM 1.0's Llama-3.1-405B capacity on 8 x H200. SGLang's steps are 13% shorter than vLLM's on the same
deployment: the tolerance holds both stacks."""


def test_tensor_parallel_8_rows_pass_the_per_rank_ceiling() -> None:
    """At tp 8 a 2023-24 stack's per-rank sequence cost caps a replica near 4,500 tokens/s; 2025 stacks do not pay
    it. vLLM 0.11 at tp 8 with 984 requests in flight steps every 51.14 ms (~19,000 tokens/s while they all
    decode): the default (2025) stack gives 54.4 ms, the 2024 stack 261 ms (5.1x; the model before this round)."""
    table = {r.id: r for r in rows()}
    for rid, tol in TP8_TOLERANCE.items():
        row = table[rid]
        assert row.deployment.tensor_parallel in (4, 8)
        assert row.deployment.software is None  # the default stack generation
        e = error(row, predict(row))
        assert e is not None
        assert abs(e) <= tol, f"{rid}: {e:+.1%} beyond {tol:.0%}"
    gs1 = table["GS1"]
    assert predict(gs1) == pytest.approx(54.4, rel=0.01)
    old = Row(**{**gs1.__dict__, "deployment": gs1.deployment.model_copy(update={"software": "2024"})})
    assert predict(old) == pytest.approx(261.0, rel=0.01)
    assert predict(old) > 5 * gs1.measured


def _write_before() -> None:  # pragma: no cover - run by hand with the old model on the path
    table = rows()
    loso, _, _ = leave_one_source_out(table)
    with BEFORE.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "predicted_before", "loso_before"])
        for r in table:
            p = predict(r)
            e = loso[r.id][1]
            w.writerow([r.id, "" if p is None else f"{p:.2f}", "" if e is None else f"{e:.4f}"])


if __name__ == "__main__" and sys.argv[1:] == ["--before"]:
    _write_before()
