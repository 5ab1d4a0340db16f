"""Fitting a scenario to imported turns, so the simulator can vary what the trace measured.

Methods (recorded in the written file's header and ``description``):

- ``joint`` (default): every stage is an ``observed`` column of one table of the trace's turns
  (:class:`voicebudget.Observed`); the columns draw the same turns, interpolated between neighbours
  ranked by total, so ``voicebudget run`` reproduces the trace's total percentiles (exactly, up to
  Monte Carlo noise) and keeps what ties a turn's stages together (a cold first turn). A variant
  that swaps one stage (``llm``) for a model keeps the other stages' draws.
- ``empirical``: each stage resampled on its own from its observed values (independent stages).
- ``lognormal``: each stage a log-normal through its observed p50 and p95 (independent stages).

The independent methods smooth a small trace and lose correlations; with a few dozen turns their
p95 can miss the trace's by more than 5% (the check ``fit`` reports says by how much).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from voicebudget._budget import Budget
from voicebudget._errors import ScenarioError
from voicebudget._io import check_target, write_atomic
from voicebudget._text import count
from voicebudget.traces._check import _why_none, checked_inputs, usable_turns
from voicebudget.traces._options import FIT_METHODS, FitMethod
from voicebudget.traces._table import ON_PATH, TOOL_STAGES, TraceTable, TraceTurn
from voicebudget.traces._toml import dumps

__all__ = ["TraceFit", "fit"]
FEW_TURNS = 20
"""A fit on fewer turns warns (:attr:`TraceFit.warnings`, the file's header, the CLI's stderr): with
``n < 20`` turns the p95 lies between the two largest observed totals (numpy's linear interpolation
puts it at rank ``0.95 * (n - 1)``), so the fitted tails repeat one or two turns."""
_VOICE = ("endpointing", "llm_ttft", "tts_ttfb")
SLOT_OF_COLUMN = {"tts_ttfb": "tts", "other": "framework", "llm_ttft": "llm"}
"""A trace's column -> the ``voice_turn`` stage a fit puts it in, where the names differ (``llm_ttft`` is the
``llm`` stage itself when the trace has no first phrase or tool, else a stage of its own name inside ``llm``; the
other columns keep their names: ``endpointing``, ``asr``, ``first_phrase``, ``transport``). ``compare --predicted``
reads it to pair a fitted scenario's stages with the measured ones."""
_TABLE = "trace"


@dataclass(frozen=True)
class TraceFit:
    """A scenario fitted to a trace.

    :ivar document: the scenario as a dict (what :func:`voicebudget.parse_scenario` takes).
    :ivar toml: the same as TOML text, with comments (method, sources, anchors).
    :ivar observed_ms: ``{"p50_ms", "p95_ms"}`` of the turn totals the fit used.
    :ivar n_turns: how many turns it used.
    :ivar warnings: what the user should know before trusting the fit (fewer than :data:`FEW_TURNS`
        turns, turns whose total is a lower bound); also in the TOML header (too few turns also in the
        ``description``).
    """

    method: str
    document: dict[str, Any]
    toml: str
    observed_ms: dict[str, float]
    n_turns: int
    shape: str
    sources: tuple[str, ...] = field(default=())
    verification: dict[str, float] | None = None
    """Result of :meth:`verify` when it was run (simulated p50/p95 and relative errors)."""
    warnings: tuple[str, ...] = ()
    server_side: bool = False
    """The fitted turn is timed at the server (``transport`` is 0 ms): add the path to the listener to judge
    voice-to-voice (the ``description`` and ``voicebudget fit``'s output say so)."""

    def write(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the scenario to ``path``: TOML for ``.toml`` (with its source comments), YAML for
        ``.yaml``/``.yml`` (the same document, without comments); returns the path.

        The file is written whole (a temporary file, then ``os.replace``): a failed write leaves the
        old file, never a truncated one.

        :param overwrite: replace an existing file (the CLI's ``--force``). A trace this fit read is
            never replaced.
        :raises ScenarioError: another extension; the target exists (without ``overwrite``), is one of
            :attr:`sources`, or its folder is missing or not writable.
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".toml", ".yaml", ".yml"):
            raise ScenarioError(f"unknown scenario file type {suffix!r}; allowed: .toml, .yaml, .yml", origin=str(path))
        check_target(path, overwrite=overwrite, inputs=self.sources)
        if suffix == ".toml":
            text = self.toml
        else:
            import yaml

            text = yaml.safe_dump(self.document, sort_keys=False)
        return write_atomic(path, text)

    def verify(self, *, samples: int = 200_000, seed: int = 1) -> dict[str, float]:
        """Simulate the fitted scenario: its total's ``p50_ms``/``p95_ms`` and their relative errors
        against the trace (``p50_error``, ``p95_error``: simulated / observed - 1)."""
        from voicebudget._scenario import parse_scenario
        from voicebudget._simulate import simulate

        report = simulate(parse_scenario(self.document), samples=samples, seed=seed).reports[0]
        p50, p95 = report.total.p50_ms, report.total.p95_ms
        return {
            "p50_ms": p50,
            "p95_ms": p95,
            "p50_error": p50 / self.observed_ms["p50_ms"] - 1.0,
            "p95_error": p95 / self.observed_ms["p95_ms"] - 1.0,
        }


def _columns(turns: list[TraceTurn]) -> dict[str, list[float]]:
    """On-path stages every turn has, plus ``other`` so each row adds up to its total; rows sorted
    by total. ``asr`` (clamped to the endpointing wait it runs inside) when every turn has it.

    Vectorised (numpy): a 100,000-turn trace is fitted in well under a second."""
    turns = sorted(turns, key=lambda t: t.total_ms or 0.0)
    n = len(turns)
    names = _column_names(turns)
    # Negative values (flagged turns, when included) count as 0: a stage cannot take negative time.
    arrays = {s: np.maximum(_column(turns, s), 0.0) for s in names}
    totals = np.fromiter((float(t.total_ms or 0.0) for t in turns), dtype=np.float64, count=n)
    other = np.maximum(totals - sum((arrays[s] for s in names), np.zeros(n)), 0.0)
    if np.any(other > 0):
        arrays["other"] = other
    if "endpointing" in arrays and _all_have(turns, "asr"):
        arrays["asr"] = np.minimum(_column(turns, "asr"), arrays["endpointing"])
    return {k: v.tolist() for k, v in arrays.items()}


def _all_have(turns: list[TraceTurn], stage: str) -> bool:
    return all(stage in t.stages_ms for t in turns)


def _column_names(turns: list[TraceTurn]) -> list[str]:
    """The on-path stages every turn has; with tool turns, the tool stages too (0 in the turns that called none)."""
    names = [s for s in ON_PATH if s != "other" and all(s in t.stages_ms for t in turns)]
    if any("tool" in t.stages_ms for t in turns):
        names += [s for s in TOOL_STAGES if s not in names]
    return names


def _column(turns: list[TraceTurn], stage: str) -> NDArray[np.float64]:
    return np.fromiter((t.stages_ms.get(stage, 0.0) for t in turns), dtype=np.float64, count=len(turns))


def _rounded(values: list[float]) -> list[float]:
    return [float(x) for x in np.round(np.asarray(values, dtype=np.float64), 3).tolist()]


def _stage(values: list[float], method: str) -> dict[str, Any]:
    if method == "joint":
        return {"kind": "observed", "table": _TABLE, "values_ms": _rounded(values)}
    arr = np.asarray(values, dtype=np.float64)
    p50, p95 = (float(x) for x in np.percentile(arr, [50, 95]))
    if method == "lognormal" and p50 > 0:
        return {"kind": "lognormal", "p50_ms": round(p50, 3), "p95_ms": round(max(p95, p50), 3)}
    if float(arr.max()) == float(arr.min()):
        return {"kind": "fixed", "value_ms": round(float(arr[0]), 3)}
    return {"kind": "empirical", "samples_ms": _rounded(values)}


_ZERO = {"kind": "fixed", "value_ms": 0.0}

WHAT_IF = """What if the LLM ran on other hardware? Uncomment a variant: it replaces the observed LLM stage
and keeps every other stage's observed draws (common random numbers). Kinds and catalogs: docs/.
A wafer stage on wse-3 adds the Cerebras API's measured network + overhead to the chip time (the hosted
path, the default); path = "on-prem" is chip time only (docs/inference.md).
[variants.cerebras-wse3]
description = "The observed turns with the LLM served by Cerebras' hosted API (wafer-scale SRAM)."
llm = { kind = "wafer", model = "llama-3.3-70b", hardware = "wse-3", prompt_tokens = { low = 500, high = 3000 }, \
output_tokens = 200, first_phrase_tokens = { low = 6, high = 14 } }"""


def _tool_turn(cols: dict[str, list[float]], method: str, name: str) -> dict[str, Any] | None:
    """The ``tool_turn`` stage of a fit: joint, the tool columns as observed (0 in turns that called no
    tool: the rows carry the trace's share); otherwise the share of tool turns and each sub-stage fitted
    on the tool turns alone."""
    if "tool" not in cols:
        return None
    called = [i for i, v in enumerate(cols["tool"]) if v > 0 or cols["llm_2_ttft"][i] > 0]
    if method == "joint":
        return {
            "kind": "tool_turn",
            "name": name,
            "call": _stage(cols["llm_tool_call"], method),
            "tool": _stage(cols["tool"], method),
            "second_pass": _stage(cols["llm_2_ttft"], method),
        }
    return {
        "kind": "tool_turn",
        "share": round(len(called) / len(cols["tool"]), 6),
        "name": name,
        "call": _stage([cols["llm_tool_call"][i] for i in called], method),
        "tool": _stage([cols["tool"][i] for i in called], method),
        "second_pass": _stage([cols["llm_2_ttft"][i] for i in called], method),
    }


def _tool_name(turns: list[TraceTurn]) -> str:
    """The tool's name for the fit: the function names the trace gives, else ``tool``."""
    names = sorted({p for t in turns for p in t.parts_ms.get("tool", {})})
    return "+".join(names)[:200] if names else "tool"


def _voice_turn(
    cols: dict[str, list[float]], method: str, tool_name: str = "tool"
) -> tuple[dict[str, Any], dict[str, str]]:
    stage = {k: _stage(v, method) for k, v in cols.items() if k not in TOOL_STAGES}
    llm = _llm_slot(stage, _tool_turn(cols, method, tool_name))
    asr = stage["asr"] if "asr" in stage and method == "joint" else _ZERO
    pipeline = {
        "kind": "voice_turn",
        "commit": "vad",
        "endpointing": stage["endpointing"],
        "asr": asr,
        SLOT_OF_COLUMN["other"]: stage.get("other", _ZERO),
        "network": _ZERO,
        "llm": llm,
        SLOT_OF_COLUMN["tts_ttfb"]: stage["tts_ttfb"],
        "transport": stage.get("transport", _ZERO),
    }
    if "output" in stage:  # the bot's first audio after the TTS first byte: on the path, after the TTS
        pipeline["tts"] = {"kind": "sequence", "stages": {"tts_ttfb": stage["tts_ttfb"], "output": stage["output"]}}
    return pipeline, _voice_comments(stage)


def _llm_slot(stage: dict[str, dict[str, Any]], tool_turn: dict[str, Any] | None) -> dict[str, Any]:
    """The ``llm`` slot: the LLM stage itself (SLOT_OF_COLUMN), or a sequence when it has parts (a tool
    turn, the first phrase)."""
    if "first_phrase" not in stage and tool_turn is None:
        return stage["llm_ttft"]
    llm_stages = {"llm_ttft": stage["llm_ttft"]}
    if tool_turn is not None:
        llm_stages["tool_turn"] = tool_turn
    if "first_phrase" in stage:
        llm_stages["first_phrase"] = stage["first_phrase"]
    return {"kind": "sequence", "stages": llm_stages}


def _voice_comments(stage: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The comments of a fitted ``voice_turn``: what each slot observed."""
    comments = {
        "pipeline.endpointing": "Observed: actual end of speech -> turn commit (LLM request sent).",
        "pipeline.asr": "Observed: end of speech -> final transcript; runs inside the endpointing wait (clamped"
        " to it).\nIndependent fits leave it at 0: it is hidden under endpointing in these traces.",
        "pipeline.framework": "What the trace's own total has beyond the stages it reports (0 if nothing).",
        "pipeline.network": "The observed TTFT was timed from the agent server: it already includes the network.",
        "pipeline.llm": "Observed LLM: request -> first token (TTFT)"
        + (", then first token -> first phrase (text aggregation)." if "first_phrase" in stage else ".")
        + "\nWhat if it ran elsewhere: swap it in a variant (example at the end of this file).",
        "pipeline.tts": "Observed TTS: first text -> first audio byte (TTFB)"
        + (
            ", then that byte -> the bot's first audio (output: output queue, transport, an avatar's playback)."
            if "output" in stage
            else "."
        ),
        "pipeline.transport": "The trace is server side (audio leaving the agent). Add the path to the listener\n"
        'to judge voice-to-voice (WebRTC: { kind = "lognormal", p50_ms = 60, p95_ms = 150 })',
    }
    if "transport" in stage:
        comments["pipeline.transport"] = (
            "Observed in the call recordings joined to the trace: the last server event -> the agent's audio\n"
            "in the recording (transport, jitter buffer, playout; voicebudget check call.wav agent.log)."
        )
    return comments


_METHOD_LABELS = {
    "joint": "joint observed turns (interpolated between neighbours ranked by total)",
    "empirical": "empirical, each stage resampled independently",
    "lognormal": "log-normal through each stage's observed p50 and p95, independent",
}


def _lower_bounds(turns: list[TraceTurn]) -> tuple[str, ...]:
    """A warning when some turns give only a lower bound of their total (a stage the trace does not time)."""
    bounds = sum(t.lower_bound for t in turns)
    if not bounds:
        return ()
    unknown = sorted({s for t in turns for s in t.unknown_stages}, key=ON_PATH.index)
    return (
        f"{bounds} of {count(len(turns), 'turn')} {'gives' if bounds == 1 else 'give'} only a lower bound of "
        f"{'its' if bounds == 1 else 'their'} total (the trace does not time "
        f"{', '.join(unknown)}): the fitted scenario is optimistic by what those stages took",
    )


def _pipeline(turns: list[TraceTurn], method: str) -> tuple[bool, dict[str, Any], dict[str, str]]:
    """Whether the fit is a ``voice_turn`` (every turn has the full breakdown), its pipeline, its comments."""
    cols = _columns(turns)
    voice = all(s in cols for s in _VOICE)
    tool_name = _tool_name(turns)
    pipeline, comments = _voice_turn(cols, method, tool_name) if voice else _sequence(cols, method, tool_name)
    _tool_comment(comments, turns, voice and "llm" in pipeline, tool_name)
    return voice, pipeline, comments


def _sequence(cols: dict[str, list[float]], method: str, tool_name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Without the full breakdown: the observed stages in sequence."""
    order = [s for s in ON_PATH if s in cols and s not in TOOL_STAGES]
    stages = {s: _stage(cols[s], method) for s in order}
    if (tool_turn := _tool_turn(cols, method, tool_name)) is not None:
        stages["tool_turn"] = tool_turn
    pipeline = {"kind": "sequence", "stages": stages}
    return pipeline, {"pipeline": "The trace does not give the full breakdown: its observed stages in sequence."}


def _tool_comment(comments: dict[str, str], turns: list[TraceTurn], in_llm: bool, tool_name: str) -> None:
    """The comment on the tool turn stage: how many observed turns called a tool."""
    n_tool = sum("tool" in t.stages_ms for t in turns)
    if n_tool:
        where = "pipeline.llm.stages.tool_turn" if in_llm else "pipeline.stages.tool_turn"
        comments[where] = (
            f"{n_tool} of {len(turns)} observed turns ({n_tool / len(turns):.0%}) called a tool ({tool_name}): the LLM "
            "writing the call, the tool, the LLM pass after it.\nWhat if the tool were faster: change 'tool' here."
        )


def fit(
    tables: Sequence[TraceTable],
    *,
    method: FitMethod = "joint",
    budget: Budget | None = None,
    include_anomalies: bool = False,
    name: str | None = None,
    samples: int = 200_000,
    seed: int = 1,
) -> TraceFit:
    """Write a scenario whose stages are the trace's observed distributions.

    The pipeline is a ``voice_turn`` when every turn has endpointing, LLM TTFT and TTS TTFB, else a
    ``sequence`` of the stages every turn has (plus ``other`` up to each turn's total). Server-side
    traces get ``transport = 0`` (a comment says what to add).

    :param tables: per-turn tables from :func:`~voicebudget.traces.read_trace`.
    :param method: ``"joint"`` (default), ``"empirical"`` or ``"lognormal"`` (see the module doc).
    :param budget: the scenario's budget (default 800 ms at p95).
    :param include_anomalies: also use flagged turns that have a total.
    :param name: the scenario name (default from the file names).
    :param samples: the scenario's default number of simulated turns.
    :param seed: the scenario's default seed.
    :raises ScenarioError: unknown method, no usable turn (0 turns: nothing to fit), ``tables`` not a list of
        tables or ``budget`` not a :class:`~voicebudget.Budget`.
    """
    checked_inputs(tables, budget)
    _check_method(method)
    turns = usable_turns(tables, include_anomalies)
    origins = tuple(t.origin for t in tables)
    if not turns:
        raise ScenarioError(_why_none(tables, include_anomalies, "fit"), origin=", ".join(origins))
    warnings = _few_turns(len(turns)) + _lower_bounds(turns)
    budget = budget or Budget()
    voice, pipeline, comments = _pipeline(turns, method)
    server_side = voice and pipeline["transport"] == _ZERO
    totals = np.array([t.total_ms for t in turns], dtype=np.float64)
    p50, p95 = (float(x) for x in np.percentile(totals, [50, 95]))
    label = _METHOD_LABELS[method]
    doc: dict[str, Any] = {
        "name": name or _default_name(origins),
        "description": f"voicebudget fit, method {method}: {label}; {count(len(turns), 'turn')}"
        + _description_end(len(turns), server_side),
        "samples": samples,
        "seed": seed,
        "budget": {"total_ms": float(budget.total_ms), "percentile": float(budget.percentile)},
        "pipeline": pipeline,
    }
    header = _header(method, label, len(turns), (p50, p95), warnings, tables)
    shape, footer = ("voice_turn", WHAT_IF) if voice else ("sequence", "")
    return TraceFit(
        method,
        doc,
        dumps(doc, header=header, comments=comments, footer=footer),
        {"p50_ms": p50, "p95_ms": p95},
        len(turns),
        shape,
        origins,
        warnings=warnings,
        server_side=server_side,
    )


def _header(
    method: str,
    label: str,
    n: int,
    p50_p95: tuple[float, float],
    warnings: tuple[str, ...],
    tables: Sequence[TraceTable],
) -> str:
    """The fitted scenario's header comment: how it was fitted, on what, and its warnings."""
    return "\n".join(
        [
            "Scenario fitted by `voicebudget fit` from observed turns (ms; t = 0 at the actual end of speech).",
            f"fit method: {method} ({label})",
            f"turns used: {n}; observed total p50 {p50_p95[0]:.1f} ms, p95 {p50_p95[1]:.1f} ms",
            *(f"WARNING: {w}" for w in warnings),
            *(f"source: {t.origin} [{t.format}] anchor: {t.anchor}; total: {t.total}" for t in tables),
        ]
    )


def _default_name(origins: tuple[str, ...]) -> str:
    return "fitted from " + ", ".join(Path(o).name for o in origins)


SERVER_SIDE = "server side: transport 0 ms until you add the path to the listener"
"""The fitted description's note on a trace timed at the server (``voicebudget run`` prints it above the table:
a fitted turn within budget is not yet what the caller hears)."""


def _description_end(n: int, server_side: bool) -> str:
    """The end of the fitted scenario's description: whether its tails are unreliable (fewer than
    :data:`FEW_TURNS` turns; a lower-bound warning alone is not that) and whether it is server side."""
    few = f" (fewer than {FEW_TURNS}: tails unreliable)" if n < FEW_TURNS else ""
    return few + (f"; {SERVER_SIDE}." if server_side else ".")


def _check_method(method: str) -> None:
    if method not in FIT_METHODS:
        raise ScenarioError(f"unknown fit method {method!r}; allowed: {', '.join(FIT_METHODS)}", field="method")


def _few_turns(n: int) -> tuple[str, ...]:
    """The warning for a fit on fewer than :data:`FEW_TURNS` turns (none from there on)."""
    if n >= FEW_TURNS:
        return ()
    return (
        f"fitted on only {count(n, 'turn')} (fewer than {FEW_TURNS}): its p95 and other tail percentiles "
        "rest on the one or two largest turns and are unreliable; fit on more turns",
    )
