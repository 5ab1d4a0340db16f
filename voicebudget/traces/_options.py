"""What every trace reader is given (:class:`ReadOptions`) and what every reader is (:class:`TraceReader`).

The table of readers itself is :data:`voicebudget.traces.READERS` (in ``_read.py``): detection, the
CLI's ``--format-in`` choices are its names (:data:`~voicebudget.traces.FORMATS`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from voicebudget._errors import ScenarioError, param
from voicebudget._model import DataModel
from voicebudget._text import as_given
from voicebudget.traces._formats import DEFAULT_STOP_SECS, DETECT_HEAD_CHARS, FIT_METHODS, FitMethod
from voicebudget.traces._table import ABSURD_MS

if TYPE_CHECKING:
    from voicebudget.traces._table import TraceTable

__all__ = ["DEFAULT_STOP_SECS", "DETECT_HEAD_CHARS", "FIT_METHODS", "FitMethod", "ReadOptions", "TraceReader"]


class ReadOptions(DataModel):
    """Options every trace reader receives (one object instead of one parameter per format).

    :ivar stop_secs: the VAD's ``stop_secs``, s (Pipecat): the actual end of speech is the VAD stop
        minus this. None: the value Pipecat logs with its VAD parameters, else
        :data:`DEFAULT_STOP_SECS`. A value given here wins over the log's.
    :ivar absurd_ms: a stage longer than this is flagged, ms (>= 1).
    :ivar log_format: a loguru format string for Pipecat logs written with a custom format, e.g.
        ``"{time:YYYY-MM-DDTHH:mm:ss.SSSZZ} - {level} - {extra[call_id]} - {message}"``; None detects
        the common ones.
    """

    stop_secs: float | None = Field(default=None, ge=0.0, le=60.0)
    absurd_ms: float = Field(default=ABSURD_MS, ge=1.0)
    log_format: str | None = Field(default=None, min_length=1, max_length=1000)

    @classmethod
    def checked(cls, **values: Any) -> ReadOptions:
        """Build the options, an invalid value raising :class:`ScenarioError` whose origin is the option
        (``stop_secs: Input should be less than or equal to 60, got 90.0``; the CLI shows its flag).

        :raises ScenarioError: a value is out of range or of the wrong type.
        """
        try:
            return cls(**values)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = str(err["loc"][0]) if err["loc"] else ""
            given = err.get("input")
            hint = ""
            if field == "stop_secs" and isinstance(given, int | float) and given > 60:  # 200 for a 200 ms stop
                hint = f"; stop_secs is in seconds: ms typed as s? {as_given(float(given))} ms is {given / 1000:g} s"
            name = param(field) if field else "options"
            raise ScenarioError(f"{err['msg']}, got {given!r}{hint}", origin=name) from None

    @property
    def stop_secs_or_default(self) -> float:
        """:attr:`stop_secs`, or :data:`DEFAULT_STOP_SECS` when not given."""
        return DEFAULT_STOP_SECS if self.stop_secs is None else self.stop_secs


@dataclass(frozen=True)
class TraceReader:
    """One entry of the reader table.

    :ivar name: the format's name (``--format-in`` choice, :attr:`TraceTable.format` prefix).
    :ivar detect: True when a file's head (at most :data:`DETECT_HEAD_CHARS` characters) is in this
        format; must run in linear time.
    :ivar read: ``read(text, origin, options)`` -> a :class:`~voicebudget.traces.TraceTable`.
    :ivar description: one line for messages and help (what the format is, who writes it).
    :ivar read_lines: for a line-based format, ``read_lines(open_lines, origin, options)`` where
        ``open_lines()`` gives the file's ``(line number from 1, line)`` pairs afresh on each call (a
        reader may pass over the file more than once); :func:`~voicebudget.traces.read_trace` then
        streams the file instead of reading it whole. None: the format is read as one document.
    :ivar read_runs: for a line-based format whose reader scans text, ``read_runs(open_runs, origin,
        options)`` where ``open_runs()`` gives the file's ``(number of the first line, text)`` runs of whole
        lines afresh on each call (:func:`voicebudget._io.iter_blocks`); used for a file without a log
        shipper's layer (whose lines are stripped one by one: ``read_lines`` then). None: ``read_lines``.
    """

    name: str
    detect: Callable[[str], bool]
    read: Callable[[str, str, ReadOptions], TraceTable]
    description: str
    read_lines: Callable[[Callable[[], Iterable[tuple[int, str]]], str, ReadOptions], TraceTable] | None = None
    read_runs: Callable[[Callable[[], Iterable[tuple[int, str]]], str, ReadOptions], TraceTable] | None = None
