"""docs/traces.md's lists of what is read, written from the readers' own tables (the reader table, the log
shippers' layers, the whole-document exports, every rule set with its versions and source files, the
stages), so the page cannot name less than the code reads. Used by tests/doc_outputs.py as ``<!-- table:
NAME -->`` blocks; tests/test_traces_doc.py checks the page names every entry."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from voicebudget.traces import DOCUMENTS, OFF_PATH, ON_PATH, READERS, WRAPPERS
from voicebudget.traces._livekit_rules import RULES
from voicebudget.traces._pipecat_rules import LINE_RULES, RULE_SETS
from voicebudget.traces._platforms import PLATFORM_RULES
from voicebudget.traces._render import SHORT_NAMES


def _cell(text: object) -> str:
    """Table-safe Markdown: pipes and ``<`` escaped (``<line>`` would be read as an HTML tag)."""
    return str(text).replace("|", "\\|").replace("<", "\\<").replace("\n", " ")


def _table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def readers() -> str:
    """The reader table, in detection order."""
    return _table(["format (`--format-in`)", "what it reads"], ([f"`{r.name}`", r.description] for r in READERS))


def wrappers() -> str:
    """The log shippers' line layers, in the order they are tried."""
    return _table(["layer", "what writes it", "source"], ([f"`{w.name}`", w.description, w.source] for w in WRAPPERS))


def documents() -> str:
    """The whole-document exports."""
    return _table(["export", "what writes it", "source"], ([f"`{d.name}`", d.description, d.source] for d in DOCUMENTS))


def pipecat_rules() -> str:
    """Pipecat's rule sets: versions, anchor, release, source."""
    return _table(
        ["rule set", "Pipecat versions", "`t = 0`", "turn release (endpointing, not the anchor)", "source"],
        ([f"`{r.name}`", r.versions, r.anchor, r.release or "-", r.source] for r in RULE_SETS.values()),
    )


def pipecat_lines() -> str:
    """Every Pipecat log message the reader uses, with the versions that write it and its source file."""
    return _table(
        ["line (`LineRule.kind`)", "Pipecat versions", "rule set it opens", "source (pipecat-ai/pipecat)"],
        ([f"`{r.kind}`", r.versions, f"`{r.rule_set}`" if r.rule_set else "-", r.source] for r in LINE_RULES),
    )


def livekit_rules() -> str:
    """LiveKit's rules: versions, what each stage is read from, anchor, total, source files."""
    return _table(
        [
            "rule",
            "livekit-agents",
            "read (stage <- field)",
            "`t = 0`",
            "total",
            "source (livekit-agents/livekit/agents/)",
        ],
        (
            [
                f"`{r.name}`",
                r.versions,
                "; ".join(f"{k} <- {v}" for k, v in r.reads.items()),
                r.anchor,
                r.total,
                f"{r.source} (checked {r.checked})",
            ]
            for r in RULES.values()
        ),
    )


def platform_rules() -> str:
    """The hosted platforms' rules."""
    return _table(
        ["rule", "record", "read", "total", "source (read 2026-12-01)"],
        ([f"`{r.name}`", r.record, r.reads, r.total, r.source] for r in PLATFORM_RULES.values()),
    )


def stages() -> str:
    """Every stage a turn may have: on the path (they add up to the total) in time order, then off it."""
    return _table(
        ["stage", "column", "on the path", "what it is"],
        (
            [f"`{s}`", SHORT_NAMES[s][0], "yes" if s in ON_PATH else "no", SHORT_NAMES[s][1]]
            for s in (*ON_PATH, *OFF_PATH)
        ),
    )


TRACE_TABLES: dict[str, Callable[[], str]] = {
    "traces-readers": readers,
    "traces-wrappers": wrappers,
    "traces-documents": documents,
    "traces-pipecat-rules": pipecat_rules,
    "traces-pipecat-lines": pipecat_lines,
    "traces-livekit-rules": livekit_rules,
    "traces-platform-rules": platform_rules,
    "traces-stages": stages,
}
"""docs/traces.md's tables, by the name of their marker block."""


RULE_NAMES: frozenset[str] = frozenset([*RULE_SETS, *RULES, *PLATFORM_RULES])
"""Every rule a turn may record (:attr:`~voicebudget.traces.TraceTurn.rules`, before a ``" (...)"`` qualifier)."""
