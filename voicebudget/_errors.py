"""Exceptions raised by voicebudget.

Every exception the library raises on purpose derives from :class:`VoiceBudgetError`::

    VoiceBudgetError
    ├── ScenarioError      a scenario, council or trace file (or an object built in code) is invalid:
    │                      the message names the origin, the field path and what is allowed
    ├── ModelError         a model cannot run as configured (e.g. the weights do not fit the chips)
    └── BudgetExceeded     a report is over its budget; carries the report (``.report``)

The CLI maps ``ScenarioError`` and ``ModelError`` to exit code 2 and ``BudgetExceeded`` to exit code 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voicebudget._report import Report

__all__ = ["BudgetExceeded", "ModelError", "ScenarioError", "VoiceBudgetError"]


class VoiceBudgetError(Exception):
    """Root of every exception voicebudget raises on purpose."""


class ScenarioError(VoiceBudgetError, ValueError):
    """Invalid input: a scenario/council/trace file or a model built in code.

    The message reads ``<origin>: <field.path>: <what is wrong and what is allowed>``; the parts are
    also available as attributes.

    :param message: what is wrong and what is allowed.
    :param origin: the file (or ``"<scenario>"`` for objects built in code).
    :param field: the dotted field path, ``""`` when the whole document is at fault.
    """

    def __init__(self, message: str, *, origin: str = "<scenario>", field: str = "") -> None:
        self.origin = origin
        self.field = field
        self.detail = message
        where = f"{origin}: {field}: " if field else f"{origin}: "
        super().__init__(where + message)

    @classmethod
    def from_errors(cls, origin: str, errors: list[tuple[str, str]]) -> ScenarioError:
        """Build one error from several ``(field path, message)`` pairs (all of them are shown)."""
        errors = list(dict.fromkeys(errors))  # the same error reached by several union branches: once
        first_field, first_message = errors[0]
        if len(errors) == 1:
            return cls(first_message, origin=origin, field=first_field)
        lines = [f"{origin}: {field}: {message}" if field else f"{origin}: {message}" for field, message in errors]
        err = cls(first_message, origin=origin, field=first_field)
        err.args = (f"{len(errors)} errors\n" + "\n".join(lines),)
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
