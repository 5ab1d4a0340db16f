"""Verdicts in CI's formats: JUnit XML (one test case per variant, stage budget or compared measure), GitHub
Actions annotations pointing at the scenario line of the stage over its allocation, and job summaries.
See docs/ci.md.

Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebudget._lazy import lazy_getattr, lazy_table

if TYPE_CHECKING:
    from voicebudget.ci._cases import (  # noqa: I001 - one statement per module, "X as X" re-exports
        Case as Case,
        Location as Location,
        Suite as Suite,
        report_cases as report_cases,
    )
    from voicebudget.ci._github import (
        append_step_summary as append_step_summary,
        workflow_commands as workflow_commands,
    )
    from voicebudget.ci._junit import (
        junit_xml as junit_xml,
    )
    from voicebudget.ci._positions import (
        field_lines as field_lines,
        stage_path as stage_path,
    )
    from voicebudget.ci._verdicts import (
        check_suite as check_suite,
        compare_suites as compare_suites,
        report_markdown as report_markdown,
        run_suites as run_suites,
    )

_PUBLIC: dict[str, tuple[str, ...]] = {
    "voicebudget.ci._cases": ("Case", "Location", "Suite", "report_cases"),
    "voicebudget.ci._github": ("append_step_summary", "workflow_commands"),
    "voicebudget.ci._junit": ("junit_xml",),
    "voicebudget.ci._positions": ("field_lines", "stage_path"),
    "voicebudget.ci._verdicts": ("check_suite", "compare_suites", "report_markdown", "run_suites"),
}

_LAZY = lazy_table(_PUBLIC)

__all__ = sorted(_LAZY)

__getattr__ = lazy_getattr("voicebudget.ci", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
