"""A Pipecat log line's parts: its timestamp and message by the loguru layouts, the processor and its role,
and the metrics lines cut short. The reading of the lines is :mod:`._pipecat`."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from voicebudget.traces._pipecat_rules import Hit, LogPrefix

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # loguru colours, when a terminal's output was saved
_TS_START = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d")
_KEYWORDS = ("TTFB", "TTFAT", "text aggregation", "TTFA", "User stopped speak", "User turn")
_TEMPLATES = ("TTFB", "TTFAT", "text aggregation time", "TTFA", "User stopped speaking")
_TEMPLATE_STARTS = frozenset(t[:i] for t in _TEMPLATES for i in range(len(t) + 1))
_TEMPLATE_COLONS = tuple(t + ":" for t in _TEMPLATES)
_PROC_REST = re.compile(r"^(?:\S+ )?\[?(?<![\w.])(?P<proc>[\w.]+#\d+)\]?:? ?(?P<rest>.*)$")
_METRIC_FUNCS = (
    ":stop_ttfb_metrics:",
    ":stop_ttfat_metrics:",
    ":stop_text_aggregation_metrics:",
    ":_check_ttfa:",
    ":on_speech_stopped:",
)
_METRIC_FUNC = re.compile("|".join(map(re.escape, _METRIC_FUNCS)))  # (one search for them all)
_ROLE = re.compile(r"""["']role["']: ["'](?P<role>\w+)["']""")


@functools.lru_cache(maxsize=256)
def _role(processor: str) -> str | None:
    name = processor.split("#")[0]
    for role in ("STT", "LLM", "TTS"):
        if role in name:
            return role.lower()
    return None


def _cut_field(msg: str) -> str:
    """The field a cut metrics line was about (``"LLM TTFB"``), so the turn is not flagged twice."""
    m = _PROC_REST.match(msg)
    role = _role(m.group("proc")) if m else None
    if m is None or role is None:
        return ""
    rest = m.group("rest")
    if "TTFB".startswith(rest) or rest.startswith("TTFB"):
        return f"{role.upper()} TTFB"
    return "text aggregation time" if "text aggregation time".startswith(rest[:22]) else ""


def _cut_rest(msg: str) -> str | None:
    """What follows the processor's name in a message that may be a metrics or VAD line cut short
    (``_PROC_REST``'s ``rest``), or None when it cannot be one: the name's ``#`` is the message's last,
    followed by its number and at most 24 characters (a template's start, 21 at most, after ``]``, ``:``
    and a blank), unless a template and its colon are in it. Most messages are ruled out without the
    pattern."""
    j = msg.rfind("#")
    if j < 0:
        return None
    k, n = j + 1, len(msg)
    while k < n and msg[k].isdecimal():  # (the name's number: ``\d`` reads any decimal digit)
        k += 1
    if n - k > 24 and "TTF" not in msg and "time:" not in msg and "speaking:" not in msg:
        return None
    cut = _PROC_REST.match(msg)
    return None if cut is None else cut.group("rest")


def _vad_cut(rest: str | None) -> bool:
    """A ``User stopped speaking`` line cut short (4 characters of it at least)."""
    return rest is not None and len(rest) >= 4 and "User stopped speaking".startswith(rest)


def inert(msg: str, line: str) -> bool:
    """A message no rule reads, on ``line``, changes nothing whatever the reader's state (the reader's
    ``unmatched`` does nothing with it): not a VAD or metrics line cut short, no metrics function's name."""
    if "not report" in msg:
        return True
    rest = _cut_rest(msg)
    return not _vad_cut(rest) and not _METRIC_FUNC.search(line) and not (rest is not None and _is_cut(rest))


def _is_cut(rest: str) -> bool:
    """A Pipecat metrics or VAD message that ends before its value (a line cut short), by what follows its
    processor's name (``_PROC_REST``'s ``rest``): the start of a template, or a template and its colon."""
    return rest in _TEMPLATE_STARTS or rest.startswith(_TEMPLATE_COLONS)


def _last_role(msg: str) -> str | None:
    """The role of the last message of an LLM context printed in a ``Generating chat`` line."""
    found = None
    for m in _ROLE.finditer(msg):
        found = m.group("role")
    return found


@functools.lru_cache(maxsize=64)
def _minute(text: str) -> int:
    """Seconds from the epoch to ``YYYY-MM-DD HH:MM`` (``T`` or a blank between), read as UTC.

    :raises ValueError: not a date, or not a time of day.
    """
    hours, minutes = int(text[11:13]), int(text[14:16])
    if hours > 23 or minutes > 59:
        raise ValueError(text)
    return int(datetime.fromisoformat(text[:10]).replace(tzinfo=UTC).timestamp()) + hours * 3600 + minutes * 60


def _timestamp(text: str) -> float:
    """A log timestamp (``YYYY-MM-DD HH:MM:SS[.,]fraction``, ``T`` or a blank between date and time, as
    :data:`~voicebudget.traces._pipecat_rules.LOG_PREFIXES` match it) as seconds from the epoch, read as
    UTC: what :meth:`datetime.fromisoformat` gives (the fraction truncated to microseconds), ~10 times
    faster. The part up to the seconds is parsed once per second of log, the minute once per minute,
    each fraction once.

    :raises ValueError: an invalid date or time (month 13, 25 o'clock, ...).
    """
    if not text.isascii():  # other digits than 0-9: as the standard library reads them
        return datetime.fromisoformat(text.replace(",", ".").replace("T", " ")).replace(tzinfo=UTC).timestamp()
    return (_second(text[:19]) * 1_000_000 + _micro(text[19:])) / 1_000_000


@functools.lru_cache(maxsize=1024)
def _second(text: str) -> int:
    """Seconds from the epoch to ``YYYY-MM-DD HH:MM:SS`` (``T`` or a blank between), read as UTC.

    :raises ValueError: not a date, or not a time of day.
    """
    seconds = int(text[17:19])
    if seconds > 59:
        raise ValueError(text)
    return _minute(text[:16]) + seconds


@functools.lru_cache(maxsize=2048)
def _micro(fraction: str) -> int:
    """Microseconds in a timestamp's fraction with its separator (``".439"``: 439000; ``""``: 0), truncated."""
    return int(fraction[1:7].ljust(6, "0")) if len(fraction) > 1 else 0


_MINUTE_SHAPE = re.compile(r"\d\d\d\d-\d\d-\d\d[ T]\d\d:\d\d").fullmatch
_SECONDS = frozenset(f"{n:02d}" for n in range(60))


@functools.lru_cache(maxsize=64)
def _plain_minute(text: str) -> bool:
    """``YYYY-MM-DD HH:MM`` in ASCII digits that :func:`_minute` reads: once per minute of log."""
    if not text.isascii() or _MINUTE_SHAPE(text) is None:
        return False
    try:
        _minute(text)
    except ValueError:
        return False
    return True


PLAIN_FRACTIONS = frozenset(f"{sep}{n:03d}" for sep in ".," for n in range(1000))
"""A plain time's milliseconds with the separator before them (``.044``, ``,044``)."""


def plain_second(text: str) -> bool:
    """``YYYY-MM-DD HH:MM:SS`` (``T`` or a blank in the middle) in ASCII digits that :func:`_timestamp` reads
    without an error."""
    return _plain_minute(text[:16]) and text[16:17] == ":" and text[17:19] in _SECONDS


def plain_stamp(line: str) -> bool:
    """The line starts with ``YYYY-MM-DD HH:MM:SS.mmm`` (``T`` or a blank in the middle, ``.`` or ``,`` before
    the milliseconds) in ASCII digits, a time :func:`_timestamp` reads without an error."""
    return plain_second(line[:19]) and line[19:23] in PLAIN_FRACTIONS


def _split(line: str, prefixes: tuple[LogPrefix, ...]) -> tuple[str, str] | None:
    """A log line's timestamp and message, by the first layout that matches it (None: none does)."""
    for prefix in prefixes:
        m = prefix.pattern.match(line)
        if m is not None:
            return m.group("ts", "msg")  # type: ignore[return-value]  # two groups: a pair
    return None


_S_SUFFIX = re.compile(r"#\d+ TTFB: [\d.]+s$")


@dataclass
class _Detected:
    """What the whole log says about how to read it, known only at its end: whether it has VAD lines
    (else its latency-breakdown lines are read, when it has those), and whether its TTFBs carry an ``s``."""

    vad: bool = False
    breakdown: bool = False
    s_suffix: bool = False

    def see(self, line: str, hit: Hit | None, breakdown_hit: Hit | None) -> bool:
        """Take one line into account; True when it is the first that shows TTFBs with an ``s``."""
        if not self.vad and hit is not None and ("stopped speaking" in line or "Stopped" in line):
            self.vad = True
        if not self.breakdown and breakdown_hit is not None:
            self.breakdown = breakdown_hit[0].kind not in ("latency_total", "vad_params")
        if not self.s_suffix and "TTFB: " in line and _S_SUFFIX.search(line) is not None:
            self.s_suffix = True
            return True
        return False
