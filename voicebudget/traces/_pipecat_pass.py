"""One pass over a Pipecat log: its lines, in order, to the reader of :mod:`._pipecat`.

The log comes as runs of lines (:data:`Run`: a file's chunk of whole lines, no iterator step per line).
Until the log's first VAD line every line is read in both modes (:meth:`LogPass.both`: whether the log has
VAD lines at all is not known yet); after it, by the reader of a log with VAD lines (:meth:`LogPass.each`).

A log repeats itself: most of its lines are the same as an earlier one but for their time (``VADProcessor#0:
User started speaking``, ``LLMUserAggregator#0: broadcasting interruption``, ``Bot stopped speaking``, each
from the same ``module:function:line``). A line in loguru's default layout is remembered with its message
and rule (:meth:`LogPass.remember`): the same line again with a plain time is not split nor classified
again, and not read at all when no rule reads it and it changed nothing whatever the reader's state. The
lines read are read exactly as before, so a log gives the same turns and anomalies either way
(``fast=False`` reads every line in full: ``tests/test_pipecat_pass.py`` compares the two).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from voicebudget.traces._pipecat_lines import (
    _ANSI,
    PLAIN_FRACTIONS,
    _Detected,
    _second,
    _split,
    inert,
    plain_second,
    plain_stamp,
)
from voicebudget.traces._pipecat_rules import Hit, LogPrefix, classify, classify_both

if TYPE_CHECKING:
    from voicebudget.traces._pipecat import _Reader

__all__ = ["LogPass", "Run", "runs_of_blocks", "runs_of_lines", "runs_of_text"]

Run = tuple[int, str, bool]
"""``(number of its first line, text, whole)``: when ``whole``, the text is whole lines, each ended by
``\\n``; otherwise it is one line, which may hold a ``\\n`` (a log shipper's record with one inside)."""

KNOWN_LINES = 2048
"""Lines remembered (the first ones met), each of at most :data:`KNOWN_CHARS` characters: ~1 MB at most."""
KNOWN_CHARS = 320
KNOWN_SECONDS = 4096

_RUN_LINES = 2048
"""Lines given as lines (a log shipper's layer stripped from each) are joined into runs of this many."""

Known = tuple[str, "Hit | None", bool]
"""A remembered line's message, rule (None: no rule reads it) and whether it changes nothing."""


def runs_of_blocks(blocks: Iterable[tuple[int, str]]) -> Iterator[Run]:
    """Runs from :func:`voicebudget._io.iter_blocks`' ``(first line number, text)``."""
    for first, text in blocks:
        yield first, text, True


def runs_of_text(text: str) -> Iterator[Run]:
    """The runs of a whole log's text, its lines split on ``\\n`` only (as ``text.split("\\n")``)."""
    yield 1, text + "\n", True


def runs_of_lines(lines: Iterable[tuple[int, str]]) -> Iterator[Run]:
    """Runs from ``(line number, line)`` pairs: consecutive line numbers joined (an export read newest first
    gives each line as a run of its own); a line that holds a ``\\n`` stays one line."""
    buf: list[str] = []
    first = following = 0
    for lineno, line in lines:
        if buf and (lineno != following or len(buf) >= _RUN_LINES or "\n" in line):
            yield first, "\n".join(buf) + "\n", True
            buf = []
        if "\n" in line:
            yield lineno, line, False
            continue
        if not buf:
            first = lineno
        buf.append(line)
        following = lineno + 1
    if buf:
        yield first, "\n".join(buf) + "\n", True


class LogPass:
    """The lines of one pass over the log, to ``reader`` (a log with VAD lines) and, until the first VAD
    line, to ``breakdown`` too (a log without: its latency-breakdown lines).

    :param prefixes: the loguru layouts tried on each line, in order.
    :param fast: remember lines (:meth:`remember`) to skip work when they come again; False reads every
        line in full (the reference the shortcut is tested against).
    """

    def __init__(
        self,
        prefixes: tuple[LogPrefix, ...],
        detected: _Detected,
        reader: _Reader,
        breakdown: _Reader,
        *,
        fast: bool,
    ) -> None:
        self.prefixes, self.detected, self.reader, self.breakdown = prefixes, detected, reader, breakdown
        self.first, self.rest = prefixes[0].pattern.match, prefixes[1:]
        self.fast = fast
        self.known: dict[str, Known] = {}  # a line but its time -> what it is (see remember)
        self.seconds: dict[str, int] = {}  # plain seconds met lately -> seconds from the epoch (see plain)

    def read(self, runs: Iterable[Run]) -> bool:
        """Read every line of the runs; True when the log had a VAD line."""
        vad = False
        for first, text, whole in runs:
            if not whole:
                vad = self.one(first, text) if vad else self.both(first, text)
                continue
            pos, lineno = 0, first
            if not vad:
                pos, lineno = self.until_vad(text, first)
                vad = pos >= 0
            if vad and pos < len(text):
                self.each(text, pos, lineno)
        return vad

    def until_vad(self, text: str, lineno: int) -> tuple[int, int]:
        """The lines of ``text`` (whole lines) read by :meth:`both` until a VAD line: where the next line
        starts and its number, or ``(-1, 0)`` when no VAD line came."""
        pos = 0
        find = text.find
        while True:
            stop = find("\n", pos)
            if stop < 0:
                return -1, 0
            if self.both(lineno, text[pos:stop]):
                return stop + 1, lineno + 1
            pos, lineno = stop + 1, lineno + 1

    def each(self, text: str, pos: int, lineno: int) -> None:
        """The lines of ``text`` from ``pos`` (line ``lineno``) on, each read as :meth:`one` reads it (inline:
        most of a log's lines come here), but for a line remembered with its time a plain one: not split nor
        classified again, not read at all when it changes nothing."""
        lines = (text[pos:] if pos else text).split("\n")
        lines.pop()  # (the text ends with "\n")
        reader, detected, first, rest = self.reader, self.detected, self.first, self.rest
        known, fast, seconds, fractions = self.known, self.fast, self.seconds, PLAIN_FRACTIONS
        sub = _ANSI.sub
        for raw in lines:
            if "\x1b" in raw:
                raw = sub("", raw)
            line = raw.rstrip()
            if not line:
                lineno += 1
                continue
            seen = known.get(line[23:]) if fast else None
            second = None
            if seen is not None and line[19:23] in fractions:
                second = seconds.get(line[:19])
                if second is None:
                    second = self.plain(line[:19])
            if seen is not None and second is not None:
                msg, hit, quiet = seen
                if quiet:  # (changes nothing)
                    lineno += 1
                    continue
                parts: tuple[str, str] | None = (line[:23], msg)
                ts: float | None = (second * 1_000_000 + int(line[20:23]) * 1000) / 1_000_000  # as _timestamp
            else:
                m = first(line)
                parts = m.group("ts", "msg") if m is not None else _split(line, rest)  # type: ignore[assignment]
                msg = line if parts is None else parts[1]
                hit = classify(msg, breakdown=False)
                ts = None
                if m is not None and fast:
                    self.remember(line, parts[0], msg, hit)  # type: ignore[index]
            if not reader.s_suffix:  # (only whether TTFBs carry an "s" is left to learn)
                detected.see(line, hit, None)
                reader.s_suffix = detected.s_suffix
            reader.line(lineno, line, parts, hit, ts)
            lineno += 1

    def plain(self, second: str) -> int | None:
        """Seconds from the epoch to a plain ``YYYY-MM-DD HH:MM:SS``
        (:func:`~voicebudget.traces._pipecat_lines.plain_second`), None for another; kept for the lines of the
        same second (the last :data:`KNOWN_SECONDS`)."""
        if not plain_second(second):
            return None
        if len(self.seconds) >= KNOWN_SECONDS:
            self.seconds.clear()
        self.seconds[second] = epoch = _second(second)
        return epoch

    def remember(self, line: str, ts: str, msg: str, hit: Hit | None) -> None:
        """Remember a line the first layout split into ``ts`` and ``msg``, when its time is a plain one of 23
        characters (:func:`~voicebudget.traces._pipecat_lines.plain_stamp`): the same line with another plain
        time splits alike (the layout's pattern reads the time's characters as they are, the rest of the line
        is the same), so has the same message and rule. When no rule reads it and it changes nothing
        whatever the reader's state (:func:`~voicebudget.traces._pipecat_lines.inert`; no ``TTFB``, whose
        ``s`` the log is read for), it changes nothing again."""
        known = self.known
        if len(known) >= KNOWN_LINES or len(line) > KNOWN_CHARS or len(ts) != 23 or not plain_stamp(line):
            return
        known[line[23:]] = (msg, hit, hit is None and "TTFB: " not in line and inert(msg, line))

    def both(self, lineno: int, raw: str) -> bool:
        """A line before the log's first VAD line, classified in both modes and read by both readers;
        True when it is that VAD line (it is then not read by ``breakdown``)."""
        line = (_ANSI.sub("", raw) if "\x1b" in raw else raw).rstrip()
        if not line:
            return False
        parts = _split(line, self.prefixes)
        hit, breakdown_hit = classify_both(line if parts is None else parts[1])
        detected = self.detected
        detected.see(line, hit, breakdown_hit)
        self.reader.s_suffix = detected.s_suffix  # True from the log's first TTFB with an "s" on
        self.reader.line(lineno, line, parts, hit)
        if detected.vad:
            return True  # a log with VAD lines: its breakdown lines are not read
        self.breakdown.line(lineno, line, parts, breakdown_hit)
        return False

    def one(self, lineno: int, raw: str) -> bool:
        """A line after the log's first VAD line: split, classified and read once, by the reader of a log
        with VAD lines (the first layout tried first; whether TTFBs carry an "s" asked only until a line
        answers it). Returns True (the log has VAD lines)."""
        line = (_ANSI.sub("", raw) if "\x1b" in raw else raw).rstrip()
        if not line:
            return True
        m = self.first(line)
        parts = m.group("ts", "msg") if m is not None else _split(line, self.rest)
        reader = self.reader
        hit = classify(line if parts is None else parts[1], breakdown=False)
        if not reader.s_suffix:
            self.detected.see(line, hit, None)
            reader.s_suffix = self.detected.s_suffix
        reader.line(lineno, line, parts, hit)  # type: ignore[arg-type]
        return True
