"""The pytest plugin: a ``voice_budget`` fixture, a ``voice_budget`` marker, options, summary and JSON.

Registered as ``voicebudget`` through the ``pytest11`` entry point (module
:mod:`voicebudget.pytest_plugin`). A test that requests the ``voice_budget`` fixture (a
:class:`~voicebudget.TurnRecorder`) is judged after its body passes: against the marker's budget
if it has one, else against the session default (``--voicebudget-total-ms`` /
``--voicebudget-percentile`` or the ini keys, else 800 ms at p95). Over budget, the test fails with
the per-stage breakdown. Everything here calls the library in process; it imports neither typer nor rich.
"""

from __future__ import annotations

import json
import math
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from voicebudget.checker._recorder import TurnRecorder

if TYPE_CHECKING:
    from voicebudget._budget import Budget
    from voicebudget._report import Report
    from voicebudget.ci._cases import Suite

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_setup",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
    "voice_budget",
]

MARKER = "voice_budget"
MARKER_KWARGS = ("total_ms", "percentile", "stages", "stage_shares")
_MARKER_SYNONYMS = {"budget_ms": "total_ms", "budget": "total_ms", "pct": "percentile", "p": "percentile"}
"""What a marker keyword was meant as when it is another name of the same thing: ``budget_ms`` is the CLI's
``--budget-ms`` and the library's parameter, the marker's ``total_ms`` is :class:`~voicebudget.Budget`'s."""
_MARKER_HELP = (
    "voice_budget(total_ms=800, percentile=95, stages=None, stage_shares=None): judge the turns recorded "
    "with the voice_budget fixture against this voice-to-voice budget (ms at the given percentile; "
    "stages: per-stage allocations in ms; stage_shares: allocations as shares of total_ms)."
)


@dataclass(frozen=True)
class _Result:
    """What the summary and the JSON keep of one budgeted test: plain data, so that pytest-xdist
    workers can send it to the controller."""

    nodeid: str
    line: str
    """The terminal summary line (:func:`~voicebudget.checker._format.summary_line`)."""
    passed: bool
    n_turns: int
    entry: dict[str, Any]
    """The JSON variant: ``Report.to_dict()``, with ``budget`` when it differs from the session default."""
    cases: tuple[dict[str, Any], ...] = ()
    """The test's CI verdicts (:class:`voicebudget.ci.Case` as plain data): its total, each stage allocation."""

    def to_wire(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "line": self.line,
            "passed": self.passed,
            "n_turns": self.n_turns,
            # execnet carries builtin types only: a JSON round trip turns numpy scalars into floats
            "entry": json.loads(json.dumps(self.entry, allow_nan=False)),
            "cases": list(self.cases),
        }


@dataclass
class _Session:
    """Per-session plugin state (kept in ``config.stash``)."""

    default: Budget
    json_path: Path | None
    junit_path: Path | None = None
    github: bool = False
    results: list[_Result] = field(default_factory=list)
    unchecked: list[tuple[str, str]] = field(default_factory=list)
    """(node id, why) of budgeted tests that recorded no complete turn."""
    where: dict[str, tuple[str, int]] = field(default_factory=dict)
    """node id -> (file, 1-based line) of budgeted tests, for the annotations of unchecked ones."""
    workers: int = 0
    """pytest-xdist workers whose results were merged in (0 without xdist)."""


_SESSION = pytest.StashKey[_Session]()
_RECORDER = pytest.StashKey[TurnRecorder]()
_BUDGET = pytest.StashKey["Budget"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("voicebudget", "voice latency budgets (voicebudget)")
    group.addoption(
        "--voicebudget-json",
        metavar="PATH",
        default=None,
        help="write the reports of all budgeted tests as JSON (the layout of `voicebudget run --format json`).",
    )
    group.addoption(
        "--voicebudget-junit",
        metavar="PATH",
        default=None,
        help="write the budgeted tests' verdicts as JUnit XML: a test case per test and per stage allocation, "
        "failures with the breakdown (docs/ci.md).",
    )
    group.addoption(
        "--voicebudget-github",
        action="store_true",
        default=None,
        help="GitHub Actions: annotate each test over budget at its line, and add a table of the budgeted tests "
        "to the job summary ($GITHUB_STEP_SUMMARY).",
    )
    group.addoption(
        "--voicebudget-percentile",
        metavar="P",
        default=None,
        help="default target percentile for tests without one in their marker (default 95, i.e. p95).",
    )
    group.addoption(
        "--voicebudget-total-ms",
        metavar="MS",
        default=None,
        help="default voice-to-voice budget in ms for tests without total_ms in their marker (default 800).",
    )
    parser.addini("voicebudget_json", "path of the JSON report of budgeted tests (relative to the ini file).")
    parser.addini("voicebudget_junit", "path of the JUnit XML of budgeted tests (relative to the ini file).")
    parser.addini("voicebudget_github", "GitHub Actions annotations and job summary: true or false.", type="bool")
    parser.addini("voicebudget_percentile", "default target percentile of budgeted tests (default 95).")
    parser.addini("voicebudget_total_ms", "default voice-to-voice budget of budgeted tests, ms (default 800).")
    parser.addini(
        "voicebudget_anyio_backend",
        "backend of @pytest.mark.anyio tests without their own anyio_backend fixture: asyncio (default) or all "
        "(anyio's default: every installed backend, e.g. trio too).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    github = config.getoption("voicebudget_github")
    config.stash[_SESSION] = _Session(
        _default_budget(config),
        _ini_path(config, "voicebudget_json"),
        _ini_path(config, "voicebudget_junit"),
        bool(config.getini("voicebudget_github") if github is None else github),
    )
    _default_anyio_backend(config)


def _default_anyio_backend(config: pytest.Config) -> None:
    """``@pytest.mark.anyio`` tests run on asyncio unless the user asks for more.

    anyio's plugin (4.12+) runs them on every installed backend, so installing trio (the ``test``
    extra does) makes an asyncio-only test fail under ``[trio]``. The ini key
    ``voicebudget_anyio_backend = all`` keeps anyio's default; a user's own ``anyio_backend``
    fixture always wins.
    """
    choice = str(config.getini("voicebudget_anyio_backend") or "asyncio").strip().lower()
    if choice not in ("asyncio", "all"):
        raise pytest.UsageError(f"ini voicebudget_anyio_backend: expected 'asyncio' or 'all', got {choice!r}")
    if choice == "asyncio" and config.pluginmanager.has_plugin("anyio"):
        # registered after the entry-point plugins: its fixture beats anyio's, not the user's
        from voicebudget.checker import _anyio_default

        config.pluginmanager.register(_anyio_default, "voicebudget-anyio-asyncio-default")


def _setting(config: pytest.Config, name: str) -> tuple[str | None, str]:
    """The option value if given, else the ini value if set, with where it came from."""
    opt = config.getoption(name)
    if opt is not None:
        return str(opt), f"--{name.replace('_', '-')}"
    ini = config.getini(name)
    return (str(ini) if ini else None), f"ini {name}"


def _float_setting(config: pytest.Config, name: str) -> float | None:
    raw, where = _setting(config, name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise pytest.UsageError(f"{where}: expected a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise pytest.UsageError(f"{where}: expected a finite number, got {raw!r}")
    return value


def _default_budget(config: pytest.Config) -> Budget:
    from pydantic import ValidationError

    from voicebudget._budget import Budget

    given = {
        "total_ms": _float_setting(config, "voicebudget_total_ms"),
        "percentile": _float_setting(config, "voicebudget_percentile"),
    }
    try:
        return Budget(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise pytest.UsageError(f"voicebudget default budget: {_pydantic_message(exc)}") from None


def _ini_path(config: pytest.Config, name: str) -> Path | None:
    """An output file: the option (relative to the invocation folder), else the ini key (relative to the ini
    file)."""
    opt = config.getoption(name)
    if opt is not None:
        return Path(config.invocation_params.dir, opt)
    ini = config.getini(name)
    if not ini:
        return None
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return Path(base, str(ini))


def _pydantic_message(exc: Any) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())


# -- fixture and marker ------------------------------------------------------------------------


@pytest.fixture
def voice_budget(request: pytest.FixtureRequest) -> TurnRecorder:
    """A :class:`~voicebudget.TurnRecorder` for this test; its turns are judged after the test passes.

    The budget is the test's ``@pytest.mark.voice_budget(...)``, else the session default.
    """
    recorder = TurnRecorder(request.node.nodeid)
    request.node.stash[_RECORDER] = recorder
    return recorder


def marker_budget(marker: pytest.Mark, default: Budget, where: str) -> Budget:
    """The budget a ``voice_budget`` marker asks for (missing fields from ``default``).

    :raises ValueError: positional arguments, unknown keyword arguments or invalid values; the message
        names the test and lists the allowed keywords.
    """
    from pydantic import ValidationError

    from voicebudget._budget import Budget

    if marker.args:
        allowed = ", ".join(MARKER_KWARGS)
        raise ValueError(f"{where}: @pytest.mark.voice_budget takes keyword arguments only ({allowed})")
    unknown = sorted(set(marker.kwargs) - set(MARKER_KWARGS))
    if unknown:
        from voicebudget._text import closest

        guesses = {k: _MARKER_SYNONYMS.get(k) or closest(k, MARKER_KWARGS) for k in unknown}
        hints = "; ".join(f"{k}: did you mean {g}?" for k, g in guesses.items() if g is not None)
        raise ValueError(
            f"{where}: @pytest.mark.voice_budget got unknown keyword argument(s) {', '.join(unknown)}"
            f"{f' ({hints})' if hints else ''}; allowed: {', '.join(MARKER_KWARGS)}"
        )
    fields = {"total_ms": default.total_ms, "percentile": default.percentile, **marker.kwargs}
    try:
        return Budget(**fields)
    except ValidationError as exc:
        raise ValueError(f"{where}: @pytest.mark.voice_budget: {_pydantic_message(exc)}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker(MARKER)
    uses_fixture = MARKER in getattr(item, "fixturenames", ())
    if marker is None and not uses_fixture:
        return
    if marker is not None and not uses_fixture:
        pytest.fail(
            f"{item.nodeid}: @pytest.mark.voice_budget needs the voice_budget fixture to record turns "
            "(add a `voice_budget` argument and time the turns with it)",
            pytrace=False,
        )
    state = item.config.stash[_SESSION]
    path, line, _ = item.location
    state.where[item.nodeid] = (path, (line or 0) + 1)
    default = state.default
    try:
        item.stash[_BUDGET] = default if marker is None else marker_budget(marker, default, item.nodeid)
        return
    except ValueError as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)  # outside the except block: no chained traceback in the output


# -- judging -----------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    try:
        result = yield
    except pytest.skip.Exception:
        raise
    except BaseException:
        _judge(item, enforce=False)  # the test failed on its own: keep its figures for the summary
        raise
    _judge(item, enforce=True)
    return result


def _judge(item: pytest.Item, *, enforce: bool) -> None:
    """Build the test's report, keep it for the summary/JSON, fail the test when over budget."""
    from voicebudget._errors import ScenarioError
    from voicebudget.checker._format import breakdown

    recorder = item.stash.get(_RECORDER, None)
    budget = item.stash.get(_BUDGET, None)
    if recorder is None or budget is None:
        return
    try:
        report = recorder.report(budget)
    except ScenarioError as exc:
        message = f"voice budget not checked: {exc}"
        item.config.stash[_SESSION].unchecked.append((item.nodeid, exc.detail))
    else:
        state = item.config.stash[_SESSION]
        state.results.append(_result(item.nodeid, report, state.default, state.where.get(item.nodeid)))
        if not enforce or report.passed:
            return
        message = breakdown(report)
    if enforce:
        pytest.fail(message, pytrace=False)


def _result(nodeid: str, report: Report, default: Budget, where: tuple[str, int] | None) -> _Result:
    from voicebudget.checker._format import breakdown, summary_line
    from voicebudget.ci._cases import Location, report_cases

    entry = report.to_dict()
    if report.budget != default:
        entry["budget"] = {"total_ms": report.budget.total_ms, "percentile": report.budget.percentile}
    at = Location(*where) if where else None
    cases = report_cases(report, nodeid, details=breakdown(report), total_at=at, stage_at=lambda _stage: at)
    return _Result(
        nodeid, summary_line(report), report.passed, report.n_turns, entry, tuple(c.to_dict() for c in cases)
    )


# -- pytest-xdist: workers send their results to the controller ---------------------------------

_WIRE_KEY = "voicebudget"


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workeroutput")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist (controller): merge the results a worker sent when it finished."""
    state = node.config.stash.get(_SESSION, None)
    wire = getattr(node, "workeroutput", {}).get(_WIRE_KEY)
    if state is None or wire is None:
        return
    state.results.extend(_Result(**r) for r in wire["results"])
    state.unchecked.extend((nodeid, why) for nodeid, why in wire["unchecked"])
    state.results.sort(key=lambda r: r.nodeid)  # workers finish in any order: a stable listing
    state.unchecked.sort()
    state.workers += 1


# -- session outputs ---------------------------------------------------------------------------


def session_document(state: _Session, name: str) -> dict[str, Any]:
    """The JSON document: the keys of ``voicebudget run --format json``, one variant per budgeted test.

    ``seed`` is None (measured, not sampled); ``samples`` is the number of turns measured in all;
    ``budget`` is the session default, and a variant whose budget differs carries its own ``budget``;
    ``measured`` holds every test's turns, one set per test (``voicebudget baseline pin`` reads it).
    """
    from voicebudget._measured import SCHEMA, SCHEMA_VERSION

    variants = [{k: v for k, v in r.entry.items() if k != "measured"} for r in state.results]
    sets = [s for r in state.results for s in r.entry.get("measured", {}).get("sets", ())]
    return {
        "scenario": name,
        "seed": None,
        "samples": sum(r.n_turns for r in state.results),
        "budget": {"total_ms": state.default.total_ms, "percentile": state.default.percentile},
        "variants": variants,
        "measured": {"schema": SCHEMA, "version": SCHEMA_VERSION, "sets": sets},
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash.get(_SESSION, None)
    if state is None:
        return
    if _is_xdist_worker(config):  # the controller merges, prints and writes the JSON file once
        workeroutput: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
        workeroutput[_WIRE_KEY] = {
            "results": [r.to_wire() for r in state.results],
            "unchecked": [list(u) for u in state.unchecked],
        }
        return
    name = f"pytest {session.config.rootpath.name}"
    if state.json_path is not None:
        doc = session_document(state, name)
        state.json_path.parent.mkdir(parents=True, exist_ok=True)
        state.json_path.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    if state.junit_path is not None:
        from voicebudget.ci._junit import junit_xml

        state.junit_path.parent.mkdir(parents=True, exist_ok=True)
        state.junit_path.write_text(junit_xml([session_suite(state, name)], "voicebudget"), encoding="utf-8")


def session_suite(state: _Session, name: str) -> Suite:
    """The budgeted tests' CI verdicts as one suite: each test's cases (total, stage allocations), and an error
    case for each budgeted test that recorded no complete turn."""
    from voicebudget.ci._cases import Case, Location, Suite

    cases = [Case.from_dict(c) for r in state.results for c in r.cases]
    for nodeid, why in state.unchecked:
        where = state.where.get(nodeid)
        at = Location(*where) if where else None
        cases.append(Case("voice budget checked", nodeid, "error", f"voice budget not checked: {why}", why, at))
    props = (
        ("budget_ms", f"{state.default.total_ms:g}"),
        ("percentile", f"{state.default.percentile:g}"),
        ("turns", str(sum(r.n_turns for r in state.results))),
    )
    return Suite(name, tuple(cases), props)


def session_markdown(state: _Session, name: str) -> str:
    """The budgeted tests as a markdown table (the job summary of ``--voicebudget-github``)."""
    over = sum(not r.passed for r in state.results)
    lines = [
        f"### voicebudget ({name}): {len(state.results)} budgeted test(s), {over} over budget",
        "",
        "| test | value at the percentile | budget | within budget | tail driver | verdict |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in state.results:
        budget = r.entry.get("budget") or {"total_ms": state.default.total_ms, "percentile": state.default.percentile}
        value = budget["total_ms"] - r.entry["slack_ms"]
        lines.append(
            f"| `{r.nodeid}` | p{budget['percentile']:g} {value:.1f} ms | {budget['total_ms']:g} ms | "
            f"{r.entry['within_budget_share']:.1%} | {r.entry.get('tail_driver') or '-'} | "
            f"{'PASS' if r.passed else '**FAIL**'} |"
        )
    lines += [f"| `{nodeid}` | - | - | - | - | not checked: {why} |" for nodeid, why in state.unchecked]
    return "\n".join(lines) + "\n"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_SESSION, None)
    if state is None or not (state.results or state.unchecked or state.json_path or state.junit_path):
        return
    terminalreporter.write_sep("=", "voice budget")
    for result in state.results:
        terminalreporter.write_line(result.line)
    for nodeid, why in state.unchecked:
        terminalreporter.write_line(f"NOT CHECKED {nodeid}: {why}")
    failed = sum(not r.passed for r in state.results)
    line = f"{len(state.results) + len(state.unchecked)} budgeted test(s): {failed} over budget"
    line += f", {len(state.unchecked)} not checked" if state.unchecked else ""
    terminalreporter.write_line(line + (f" (from {state.workers} xdist workers)" if state.workers else ""))
    if state.json_path is not None:
        terminalreporter.write_line(f"voicebudget JSON report: {state.json_path}")
    if state.junit_path is not None:
        terminalreporter.write_line(f"voicebudget JUnit XML: {state.junit_path}")
    if state.github:
        _github(terminalreporter, state, f"pytest {config.rootpath.name}")


def _github(terminalreporter: Any, state: _Session, name: str) -> None:
    """Annotations (one line each, read by the Actions runner from the job's output) and the job summary."""
    import os

    from voicebudget.ci._github import SUMMARY_ENV, append_step_summary, workflow_commands

    for line in workflow_commands([session_suite(state, name)], "voice budget"):
        terminalreporter.write_line(line)
    try:
        written = append_step_summary(session_markdown(state, name), os.environ)
    except OSError as exc:
        terminalreporter.write_line(f"voicebudget: cannot write the job summary ${SUMMARY_ENV}: {exc}")
        return
    if written is not None:
        terminalreporter.write_line(f"voicebudget job summary: {written}")
    else:  # as the CLI's --format github says it
        terminalreporter.write_line(
            f"voicebudget: ${SUMMARY_ENV} is not set (not in a GitHub Actions job): no job summary written"
        )
