"""Exceptions raised by voicebudget.

Every exception the library raises on purpose derives from :class:`VoiceBudgetError`::

    VoiceBudgetError
    ├── ScenarioError      a scenario, council or trace file (or an object built in code) is invalid:
    │                      the message names the origin, the field path and what is allowed
    ├── ModelError         a model cannot run as configured (e.g. the weights do not fit the chips)
    └── BudgetExceeded     a report is over its budget; carries the report (``.report``)

The CLI maps ``ScenarioError`` and ``ModelError`` to exit code 2 and ``BudgetExceeded`` to exit code 1.

One warning category, not an error: :class:`ImplausibleValue` (a :class:`UserWarning`), issued with
:func:`warnings.warn` for a value outside the plausible range of what it measures (``p50_ms = 0.26`` for
an ASR, a 0.8 ms budget); the run goes on, and the CLI prints it as one ``warning:`` line.

A message that names a function's parameter marks it with :func:`param`: Python callers read the
parameter (``budget_ms: must be a finite number > 0 ms``), and the CLI, which knows which of its options
sets it, shows the option instead (``--budget-ms: must be ...``, :meth:`VoiceBudgetError.naming`). The
library never writes a command-line flag.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voicebudget._report import Report

__all__ = ["BudgetExceeded", "ImplausibleValue", "ModelError", "ScenarioError", "VoiceBudgetError", "param"]

_MARK, _AS = "\x1f", "\x1e"  # ASCII unit and record separators: never part of a message's own text
_MARKED = re.compile(f"{_MARK}([A-Za-z_][A-Za-z0-9_]*)(?:{_AS}([^{_MARK}]*))?{_MARK}")


def param(name: str, python: str | None = None) -> str:
    """``name`` marked as a parameter in an error message (``f"{param('budget_ms')}: must be > 0"``).

    :param name: the parameter as the function's signature spells it.
    :param python: how a Python caller writes it in this message, when not the bare name
        (``param("overwrite", "overwrite=True")``).
    :returns: the marked name: ``str(error)`` shows ``python`` (default ``name``); the CLI shows the
        option that sets the parameter.
    """
    return f"{_MARK}{name}{_AS}{python}{_MARK}" if python is not None else f"{_MARK}{name}{_MARK}"


def unmarked(text: str) -> str:
    """``text`` with every :func:`param` mark replaced by the parameter as Python callers write it."""
    return _MARKED.sub(lambda m: m[2] if m[2] is not None else m[1], text)


class VoiceBudgetError(Exception):
    """Root of every exception voicebudget raises on purpose.

    ``str(error)`` names parameters as Python spells them; :meth:`naming` spells them otherwise.
    """

    def __str__(self) -> str:
        return unmarked(super().__str__())

    def naming(self, spell: Callable[[str], str]) -> str:
        """The message with each parameter it names spelled by ``spell`` (the CLI: its option's flag).

        :param spell: parameter name -> how the reader knows it, e.g. ``"budget_ms"`` -> ``"--budget-ms"``.
        """
        return _MARKED.sub(lambda m: spell(m[1]), super().__str__())


class ScenarioError(VoiceBudgetError, ValueError):
    """Invalid input: a scenario/council/trace file or a model built in code.

    The message reads ``<origin>: <field.path>: <what is wrong and what is allowed>``; the parts are
    also available as attributes.

    :param message: what is wrong and what is allowed.
    :param origin: the file (or ``"<scenario>"`` for objects built in code), or the :func:`param` at fault.
    :param field: the dotted field path, ``""`` when the whole document is at fault.
    """

    def __init__(self, message: str, *, origin: str = "<scenario>", field: str = "") -> None:
        self.origin = unmarked(origin)
        self.field = field
        self.detail = unmarked(message)
        whole = _MARKED.fullmatch(origin)
        self.parameter: str | None = whole[1] if whole else None
        """The parameter at fault when the origin is one (``param("budget_ms")``), else None."""
        self._marked = (origin, message)
        where = f"{origin}: {field}: " if field else f"{origin}: "
        super().__init__(where + message)

    def naming(self, spell: Callable[[str], str], *, spell_origin: Callable[[str], str] | None = None) -> str:
        """As :meth:`VoiceBudgetError.naming`; ``spell_origin`` spells the parameter at fault when it is
        the whole origin (the CLI gives all of an option's names there: ``--samples/-n: ...``)."""
        origin, message = self._marked
        if self.parameter is None or spell_origin is None or self.args[0] != self._where() + message:
            return super().naming(spell)
        where = spell_origin(self.parameter) + (f": {self.field}: " if self.field else ": ")
        return where + _MARKED.sub(lambda m: spell(m[1]), message)

    def _where(self) -> str:
        origin = self._marked[0]
        return f"{origin}: {self.field}: " if self.field else f"{origin}: "

    @classmethod
    def from_errors(cls, origin: str, errors: list[tuple[str, str]]) -> ScenarioError:
        """Build one error from several ``(field path, message)`` pairs (all of them are shown): one line
        naming the file and how many errors, then one line per error, each ``<origin>: <field>: <message>``
        (the CLI prints ``error: `` before the first: every line stands alone, and can be searched for)."""
        errors = list(dict.fromkeys(errors))  # the same error reached by several union branches: once
        first_field, first_message = errors[0]
        if len(errors) == 1:
            return cls(first_message, origin=origin, field=first_field)
        lines = [f"{origin}: {field}: {message}" if field else f"{origin}: {message}" for field, message in errors]
        err = cls(first_message, origin=origin, field=first_field)
        err.args = (f"{origin}: {len(errors)} errors:\n" + "\n".join(lines),)
        return err


class ModelError(VoiceBudgetError):
    """A model cannot run as configured, e.g. weights plus KV cache exceed the chips' memory."""


class BudgetExceeded(VoiceBudgetError):
    """A report is over budget. ``.report`` is the :class:`~voicebudget.Report` that failed.

    The message carries the numbers, e.g. ``p95 912.4 ms > 800.0 ms; tail driver: llm (mean 610.2 ms
    of the slowest 5% of turns)``.
    """

    def __init__(self, message: str, report: Report | Any) -> None:
        super().__init__(message)
        self.report = report


class ImplausibleValue(UserWarning):
    """A value outside the plausible range of what it measures, most often a latency in seconds typed
    where the field is in ms: ``scenarios/x.toml: pipeline.asr.p50_ms: 0.26 ms is implausible for an ASR
    finalisation (published medians 221 to 1,136 ms); seconds typed as ms? 0.26 s is 260 ms``.

    Issued by :func:`~voicebudget.load_scenario`, :func:`~voicebudget.parse_scenario`,
    :func:`~voicebudget.load_council` and the functions that take ``budget_ms`` (ranges and sources:
    ``voicebudget/_plausible.py``); its subclass ``voicebudget.audio.ClippedRecording`` by a call recording
    whose speech is clipped. ``str(warning)`` names parameters as Python spells them;
    :meth:`naming` as the CLI's options (``--budget-ms: 0.8 ms is under 50 ms ...``).
    """

    def __str__(self) -> str:
        return unmarked(super().__str__())

    def naming(self, spell: Callable[[str], str]) -> str:
        """The message with each parameter it names spelled by ``spell`` (as :meth:`VoiceBudgetError.naming`)."""
        return _MARKED.sub(lambda m: spell(m[1]), super().__str__())
