"""Record real voice turns: marks and timed stages on one monotonic clock.

A :class:`TurnRecorder` holds :class:`Turn` objects. A turn has *marks* (instants: ``speech_end``,
``first_audio``, any other name) and *spans* (timed stages, which may overlap and nest). Everything is
kept in integer nanoseconds of the recorder's clock (``time.perf_counter_ns`` by default) and turned
into milliseconds only when a report is built (:mod:`voicebudget.checker._analysis`).

Timing a stage is a context manager usable with ``with`` and ``async with`` (entering and leaving
never awaits, so it adds no scheduling point); it works under any async library anyio supports
(asyncio, trio) and in synchronous code. Cancellation is recognised with
:func:`anyio.get_cancelled_exc_class`, so a turn interrupted before its first audio (a barge-in)
is recorded as ``cancelled`` on either backend.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Literal, NamedTuple

from voicebudget._text import count, shown

if TYPE_CHECKING:
    from voicebudget._budget import Budget
    from voicebudget.checker._analysis import RecorderReport

__all__ = [
    "AUDIO_SENT",
    "FIRST_AUDIO",
    "SPEECH_END",
    "UNTRACKED",
    "StageSpan",
    "StageTimer",
    "Turn",
    "TurnListener",
    "TurnRecorder",
    "TurnStatus",
]

SPEECH_END = "speech_end"
"""Mark name of the end of the user's speech: the origin of the turn's time axis."""
FIRST_AUDIO = "first_audio"
"""Mark name of the first agent audio: voice-to-voice latency = first_audio - speech_end."""
AUDIO_SENT = "audio_sent"
"""Optional mark: the first audio left your server. When every complete turn has it, the report's
``server_side`` figures are ``audio_sent - speech_end`` (what Pipecat and LiveKit report as latency);
the rest of voice-to-voice is transport and playout to the listener."""
UNTRACKED = "untracked"
"""Reserved stage name: time inside [speech_end, first_audio] covered by no recorded stage."""

TurnStatus = Literal["open", "complete", "incomplete", "cancelled", "errored", "invalid"]
Clock = Callable[[], int]
TurnListener = Callable[["Turn"], object]
"""Called with each turn of a recorder as it ends (:meth:`TurnRecorder.add_listener`)."""

_NS_PER_MS = 1_000_000
_INT64 = 2**63


def instant_ns(value: object, argument: str) -> int:
    """A timestamp given in ns on the recorder's clock, as an ``int``: an integer, or a finite real number
    (rounded), within the int64 range of ``time.perf_counter_ns``.

    :param argument: the parameter's name, for the message (``at_ns``, ``start_ns``).
    :raises ValueError: a boolean, text or other non-number, NaN, an infinity, or beyond int64; the
        message names ``argument``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{argument}: expected a number of ns on the recorder's clock, got {_kind(value)}")
    if isinstance(value, numbers.Integral):
        ns = int(value)
    elif not math.isfinite(float(value)):
        raise ValueError(f"{argument}: expected a finite number of ns on the recorder's clock, got {float(value)}")
    else:
        ns = round(float(value))
    if not -_INT64 <= ns < _INT64:
        raise ValueError(f"{argument}: {_magnitude(ns)} ns is beyond the clock's range (int64 ns, +-292 years)")
    return ns


def _magnitude(n: int) -> str:
    """``1e+30``, or ``a 401-digit number`` beyond the float range (``f"{10**400:.3g}"`` raises OverflowError)."""
    return f"{n:.3g}" if abs(n) < 10**300 else shown(n)


def _offset_ns(value: object, argument: str) -> int:
    """ms after speech_end as ns: a finite real number (not a boolean), within the int64 ns range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{argument}: expected a number of ms after speech_end, got {_kind(value)}")
    if isinstance(value, numbers.Integral) and abs(int(value)) >= 10**300:  # float() would raise OverflowError
        raise ValueError(f"{argument}: expected a finite number of ms within +-9.2e12 ms, got {_magnitude(int(value))}")
    ms = float(value)
    if not math.isfinite(ms) or abs(ms) * _NS_PER_MS >= _INT64:
        raise ValueError(f"{argument}: expected a finite number of ms within +-9.2e12 ms, got {ms}")
    return round(ms * _NS_PER_MS)


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return f"a boolean ({value})"
    return f"{'text' if isinstance(value, str | bytes) else 'a ' + type(value).__name__} ({str(value)[:40]!r})"


class StageSpan(NamedTuple):
    """One timed stage on the recorder's clock.

    :ivar start_ns: start, ns on the recorder's clock.
    :ivar end_ns: end, ns on the recorder's clock (>= ``start_ns``).
    :ivar ok: False when the stage was left by an exception (including cancellation).
    :ivar id: the stage's number within its turn (in start order of ``with`` stages; -1 for stages
        added with explicit timestamps or started with :meth:`StageTimer.start`).
    :ivar parent: ``id`` of the stage it ran inside (a ``with`` stage open in the same task, or in
        the task that spawned this one), -1 for a top-level stage.
    """

    name: str
    start_ns: int
    end_ns: int
    ok: bool = True
    id: int = -1
    parent: int = -1

    @property
    def duration_ms(self) -> float:
        """The stage's own duration, ms."""
        return (self.end_ns - self.start_ns) / _NS_PER_MS


_RawSpan = tuple[str, int, int, bool, int, int]
"""A span while recording: name, start, end, ok, entry number (-1: not a ``with`` stage), parent's entry number."""


class _Entry:
    """One entry into a ``with`` stage: what its exit needs, whichever task or context exits it."""

    __slots__ = ("closed", "outer", "parent", "seq", "start_ns", "timer")

    def __init__(self, timer: StageTimer, seq: int, parent: int, outer: _Entry | None) -> None:
        self.timer = timer
        self.seq = seq
        self.parent = parent
        self.outer = outer
        self.closed = False
        self.start_ns = -1


_OPEN_STAGE: ContextVar[_Entry | None] = ContextVar("voicebudget_open_stage", default=None)
"""The innermost ``with`` stage open in this context (context variables follow spawned tasks).

Never reset with a token: a stage can be left in another context than the one it was entered in (an
async generator closed by the event loop's finaliser after a consumer left it early) or out of order
(two stages left in the order they were entered). Each exit closes its own entry and, when it is the
innermost in the current context, makes the nearest still-open outer entry current again.
"""


def _open_outer(entry: _Entry | None) -> _Entry | None:
    """``entry`` or the nearest entry it ran inside that is still open."""
    while entry is not None and entry.closed:
        entry = entry.outer
    return entry


class StageTimer:
    """Times one stage of a turn: ``with``/``async with``, or :meth:`start` then :meth:`stop`.

    Obtained from :meth:`Turn.stage`. The span is added to the turn when the stage stops. The
    ``with`` forms also record nesting (the stage it ran inside); :meth:`start`/:meth:`stop`, meant
    for stages that begin and end in different callbacks, record none.

    One timer may be entered again, and even by several tasks at once: every entry is its own span
    (each task's exit closes the entry made in that task). A stage left in another context than it
    was entered in, such as a stage inside an async generator that the consumer abandoned (a
    barge-in) and the event loop closed later, is kept: it ends when the generator is closed, with
    ``ok=False`` (it was left by ``GeneratorExit``).
    """

    __slots__ = ("_entries", "_turn", "name", "start_ns")

    def __init__(self, turn: Turn, name: str) -> None:
        self._turn = turn
        self.name = name
        self.start_ns = -1
        self._entries: list[_Entry] = []

    def start(self) -> StageTimer:
        """Start the clock now. :returns: ``self``."""
        self.start_ns = self._turn._clock()
        return self

    def stop(self, ok: bool = True) -> None:
        """Stop the clock now and add the span to the turn.

        :param ok: False when the stage failed (recorded on the span).
        :raises RuntimeError: the stage was not started.
        """
        end = self._turn._clock()
        if self.start_ns < 0:
            raise RuntimeError(f"stage {self.name!r} stopped before it was started")
        self._turn._spans.append((self.name, self.start_ns, end, ok, -1, -1))

    # The with forms are the hot path (see benchmarks/bench_recorder.py): two clock reads, one
    # context variable get/set on each side, one small entry object, one tuple.
    def _enter(self) -> None:
        turn = self._turn
        outer = _open_outer(_OPEN_STAGE.get())
        parent = outer.seq if outer is not None and outer.timer._turn is turn else -1
        entry = _Entry(self, turn._entered, parent, outer)
        turn._entered += 1
        self._entries.append(entry)
        _OPEN_STAGE.set(entry)
        entry.start_ns = self.start_ns = turn._clock()

    def _exit(self, ok: bool) -> None:
        turn = self._turn
        end = turn._clock()
        current = _OPEN_STAGE.get()
        if current is not None and current.timer is self and not current.closed:
            entry = current  # the entry made in this task (several tasks may share one timer)
        elif self._entries:
            entry = self._entries[-1]  # left in another context, or out of order
        else:
            raise RuntimeError(f"stage {self.name!r} left without being entered")
        self._entries.remove(entry)
        entry.closed = True
        turn._spans.append((self.name, entry.start_ns, end, ok, entry.seq, entry.parent))
        if current is entry:
            _OPEN_STAGE.set(_open_outer(entry.outer))

    def __enter__(self) -> StageTimer:
        self._enter()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        self._exit(exc_type is None)

    async def __aenter__(self) -> StageTimer:
        self._enter()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        self._exit(exc_type is None)


def _freeze(raw: list[_RawSpan]) -> tuple[StageSpan, ...]:
    """Recorded spans with nesting resolved: ``with`` stages numbered in entry order.

    A parent that was never left (still open) is not among the spans: its child is top level.
    """
    ids = {seq: i for i, seq in enumerate(sorted(r[4] for r in raw if r[4] >= 0))}
    return tuple(
        StageSpan(name, start, end, ok) if seq < 0 else StageSpan(name, start, end, ok, ids[seq], ids.get(parent, -1))
        for name, start, end, ok, seq, parent in raw
    )


class Turn:
    """One conversational turn: marks and stage spans, then a status when it ends.

    Use it as a context manager (``with``/``async with recorder.turn() as turn``) or call
    :meth:`end` yourself (event-driven pipelines where speech end and first audio arrive in
    different callbacks). Without a ``speech_end`` mark the turn's origin is the moment it was
    created.

    Status when ended: ``complete`` (has ``first_audio`` at or after the origin), ``incomplete``
    (no ``first_audio``), ``cancelled`` (cancelled by the async library before ``first_audio``, e.g.
    a barge-in; a cancellation after ``first_audio`` leaves the turn complete), ``errored`` (left by
    any other exception, which still propagates), ``invalid`` (``first_audio`` before ``speech_end``).
    Only complete turns enter the latency report; the others are listed in it.

    :param listeners: called with the turn when it ends (the recorder's, see
        :meth:`TurnRecorder.add_listener`).
    """

    __slots__ = (
        "_clock", "_entered", "_listeners", "_marks", "_spans", "call", "created_ns", "index", "name", "reason",
        "status",
    )  # fmt: skip

    def __init__(
        self, index: int, name: str, clock: Clock, call: str | None = None, listeners: Sequence[TurnListener] = ()
    ) -> None:
        self.index = index
        self.name = name
        self.call = call
        self._clock = clock
        self._listeners = listeners
        self._marks: dict[str, int] = {}
        self._spans: list[_RawSpan] = []  # plain tuples while recording: cheaper than StageSpan
        self._entered = 0  # with-stage entries so far (their numbers)
        self.created_ns = clock()
        self.status: TurnStatus = "open"
        self.reason = "turn not ended"

    # -- recording -------------------------------------------------------------------------------

    def mark(self, name: str, at_ns: int | None = None, *, at_ms: float | None = None) -> int:
        """Record an instant.

        ``first_audio`` keeps its earliest instant (so it may be called on every audio chunk); every
        other mark keeps its latest call (a user who resumes speaking moves ``speech_end``).

        :param name: ``"speech_end"``, ``"first_audio"`` or any other name.
        :param at_ns: the instant on the recorder's clock, ns (a timestamp taken elsewhere with the
            same clock); default: now.
        :param at_ms: alternatively, the instant in ms after ``speech_end`` (which must be marked).
        :returns: the recorded instant, ns.
        :raises ValueError: both ``at_ns`` and ``at_ms``, ``at_ms`` without ``speech_end``, or either of them
            a boolean, text, NaN, an infinity or beyond the int64 ns range (the message names the argument).
        """
        t = self._resolve(at_ns, at_ms, what=f"mark {name!r}", names=("at_ns", "at_ms"))
        if name == FIRST_AUDIO and FIRST_AUDIO in self._marks:
            t = min(t, self._marks[FIRST_AUDIO])
        self._marks[name] = t
        return t

    def stage(self, name: str) -> StageTimer:
        """A timer for one stage: ``async with turn.stage("llm"): ...`` (or ``with``).

        Stages may overlap and nest (a stage entered inside another, in the same task or in a task
        spawned inside it, is recorded as its child); the same name may run several times in a turn.
        How overlapping time is credited: see :mod:`voicebudget.checker._analysis`.

        :param name: the stage name (``"untracked"`` is reserved).
        :raises ValueError: the reserved name.
        """
        if name == UNTRACKED:
            raise ValueError(f"stage name {UNTRACKED!r} is reserved for time no stage covers")
        return StageTimer(self, name)

    def add_stage(
        self,
        name: str,
        start_ns: int | None = None,
        end_ns: int | None = None,
        *,
        start_ms: float | None = None,
        end_ms: float | None = None,
    ) -> StageSpan:
        """Add a stage measured elsewhere, from explicit timestamps.

        Give ``start_ns``/``end_ns`` on the recorder's clock, or ``start_ms``/``end_ms`` in ms after
        ``speech_end`` (e.g. a server's reported TTFB); the two forms may be mixed.

        :returns: the span added.
        :raises ValueError: a bound missing or given twice, ms without ``speech_end``, end before
            start, the reserved name, or a bound that is a boolean, text, NaN, an infinity or beyond the
            int64 ns range (the message names the argument: ``start_ns``, ``end_ms``, ...).
        """
        if name == UNTRACKED:
            raise ValueError(f"stage name {UNTRACKED!r} is reserved for time no stage covers")
        if (start_ns is None and start_ms is None) or (end_ns is None and end_ms is None):
            raise ValueError(f"stage {name!r}: give a start and an end (ns on the clock, or ms after speech_end)")
        start = self._resolve(start_ns, start_ms, what=f"stage {name!r} start", names=("start_ns", "start_ms"))
        end = self._resolve(end_ns, end_ms, what=f"stage {name!r} end", names=("end_ns", "end_ms"))
        if end < start:
            raise ValueError(f"stage {name!r} ends {(start - end) / _NS_PER_MS:.3f} ms before it starts")
        span = StageSpan(name, start, end)
        self._spans.append((name, start, end, True, -1, -1))
        return span

    def _resolve(self, at_ns: int | None, at_ms: float | None, *, what: str, names: tuple[str, str]) -> int:
        if at_ns is not None and at_ms is not None:
            raise ValueError(f"{what}: give at most one of a ns timestamp and ms after speech_end")
        if at_ms is not None:
            offset = _offset_ns(at_ms, f"{what}: {names[1]}")
            if SPEECH_END not in self._marks and what == f"mark {SPEECH_END!r}":  # was "mark speech_end first"
                raise ValueError(f"{what}: the first takes at_ns (its instant on the clock) or no time (now), not ms")
            if SPEECH_END not in self._marks:
                raise ValueError(f"{what}: ms are counted from speech_end; mark speech_end first")
            return self._marks[SPEECH_END] + offset
        return self._clock() if at_ns is None else instant_ns(at_ns, f"{what}: {names[0]}")

    # -- ending ----------------------------------------------------------------------------------

    def end(self, exc: BaseException | None = None, *, reason: str | None = None) -> None:
        """End the turn, set its status (a second call changes nothing) and tell the recorder's listeners.

        :param exc: the exception the turn was left with, if any (it is not swallowed by the
            context manager forms; here it is only classified).
        :param reason: why a turn that is not complete has no latency, in place of the status's own
            reason (an integration knows better: ``"interrupted by the user before the first audio"``);
            ignored for a complete turn.
        :raises Exception: whatever a listener raises (the turn is ended by then).
        """
        if self.status != "open":
            return
        self.status, self.reason = _classify(self._marks, self.created_ns, exc)
        if reason is not None and self.status != "complete":
            self.reason = reason
        for listener in self._listeners:
            listener(self)

    def __enter__(self) -> Turn:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.end(exc)

    async def __aenter__(self) -> Turn:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.end(exc)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        """The recorder's clock (integer ns) the turn's instants are on."""
        return self._clock

    @property
    def marks_ns(self) -> dict[str, int]:
        """A copy of the marks, name -> ns on the recorder's clock."""
        return dict(self._marks)

    @property
    def spans(self) -> tuple[StageSpan, ...]:
        """The stage spans recorded so far, in the order they stopped."""
        return _freeze(self._spans)

    @property
    def origin_ns(self) -> int:
        """The time axis origin: ``speech_end`` if marked, else the turn's creation, ns."""
        return self._marks.get(SPEECH_END, self.created_ns)

    @property
    def voice_to_voice_ms(self) -> float | None:
        """``first_audio - speech_end`` in ms, or None without ``first_audio``."""
        fa = self._marks.get(FIRST_AUDIO)
        return None if fa is None else (fa - self.origin_ns) / _NS_PER_MS

    def __repr__(self) -> str:
        v2v = self.voice_to_voice_ms
        timing = "" if v2v is None else f" {v2v:.1f} ms"
        return f"<Turn {self.index} {self.name!r} {self.status}{timing}, {len(self._spans)} spans>"


def _classify(marks: dict[str, int], created_ns: int, exc: BaseException | None) -> tuple[TurnStatus, str]:
    """The status and reason of a turn that ends with these marks and exception."""
    has_audio = FIRST_AUDIO in marks
    if exc is not None and _is_cancellation(exc):
        if not has_audio:
            return "cancelled", "cancelled before first_audio (e.g. a barge-in)"
    elif exc is not None:
        return "errored", f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if not has_audio:
        return "incomplete", "no first_audio mark"
    origin = marks.get(SPEECH_END, created_ns)
    if marks[FIRST_AUDIO] < origin:
        return "invalid", f"first_audio {(origin - marks[FIRST_AUDIO]) / _NS_PER_MS:.3f} ms before speech_end"
    return "complete", ""


def _is_cancellation(exc: BaseException) -> bool:
    """True when ``exc`` is the running async library's cancellation (asyncio or trio)."""
    import anyio

    try:
        cancelled = anyio.get_cancelled_exc_class()
    except Exception:  # no async library running (synchronous use)
        return False
    return isinstance(exc, cancelled)


class TurnRecorder:
    """Times real voice turns and judges them against a budget.

    ::

        recorder = voicebudget.TurnRecorder()
        async with recorder.turn() as turn:
            turn.mark("speech_end")
            async with turn.stage("asr"): ...
            async with turn.stage("llm"): ...
            turn.mark("first_audio")
        recorder.report(voicebudget.Budget(total_ms=800, percentile=95)).raise_for_budget()

    :param name: the report's name (the pytest plugin uses the test's node id).
    :param clock: a monotonic clock returning integer ns; default :func:`time.perf_counter_ns`.
        Timestamps passed as ``at_ns``/``start_ns``/``end_ns`` must come from the same clock.
    """

    def __init__(self, name: str = "recorder", *, clock: Clock = time.perf_counter_ns) -> None:
        if not isinstance(name, str):  # the report, the JSON sets and telemetry's agent label are named by it
            raise TypeError(f"name must be text (the report's name), got {name!r}")
        if not callable(clock):  # else the first turn failed with "'int' object is not callable"
            raise TypeError(f"clock must be a function returning integer ns (time.perf_counter_ns), got {clock!r}")
        self.name = name
        self.clock = clock
        self._turns: list[Turn] = []
        self._listeners: list[TurnListener] = []

    def add_listener(self, listener: TurnListener) -> Callable[[], None]:
        """Call ``listener(turn)`` each time a turn of this recorder ends, whatever its status (after the
        status is set: :attr:`Turn.status`, :attr:`Turn.reason`); telemetry hangs off this
        (:class:`voicebudget.telemetry.Telemetry`). Listeners run in the order they were added, inside
        :meth:`Turn.end`; what one raises propagates from there.

        :returns: a function that removes the listener again.
        """
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def turn(self, name: str | None = None, *, call: str | None = None) -> Turn:
        """Start a turn now (use it as a context manager, or call :meth:`Turn.end`).

        :param name: a label for listings; default ``"turn <index>"``.
        :param call: the call (conversation) the turn belongs to. When every complete turn has one,
            ``voicebudget compare`` resamples calls, not turns (turns of one call are not independent).
        :raises ValueError: ``call`` is not text.
        """
        if call is not None and not isinstance(call, str):
            raise ValueError(f"call: expected text (the conversation's id), got {_kind(call)}")
        index = len(self._turns)
        t = Turn(index, f"turn {index}" if name is None else name, self.clock, call, self._listeners)
        self._turns.append(t)
        return t

    @property
    def turns(self) -> tuple[Turn, ...]:
        """Every turn started, in order, whatever its status."""
        return tuple(self._turns)

    def clear(self) -> None:
        """Forget every turn."""
        self._turns.clear()

    def report(self, budget: Budget | None = None, *, name: str | None = None) -> RecorderReport:
        """Judge the complete turns against a budget.

        :param budget: a :class:`~voicebudget.Budget`; default ``Budget()`` (800 ms at p95).
        :param name: the report's name; default the recorder's name.
        :returns: a :class:`~voicebudget.checker.RecorderReport` (a :class:`~voicebudget.Report`
            that also lists the turns left out: incomplete, cancelled, errored, invalid, open).
        :raises ScenarioError: no complete turn to report on (the message lists the turns).
        """
        from voicebudget._budget import Budget
        from voicebudget.checker._analysis import build_recorder_report

        return build_recorder_report(self.name if name is None else name, budget or Budget(), self._turns)

    def __repr__(self) -> str:
        done = sum(t.status == "complete" for t in self._turns)
        return f"<TurnRecorder {self.name!r}: {count(len(self._turns), 'turn')}, {done} complete>"
