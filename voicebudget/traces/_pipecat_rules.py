"""What Pipecat writes to its log, per version, as data: line patterns, the prefixes loguru puts before
them, and the rule sets that say which line anchors ``t = 0`` and which lines give which stage.

Every entry names the pipecat-ai/pipecat file and tag it was read from and the versions it covers
(checked against the source on 2026-11-30: tags v0.0.63 to v1.7.0, main of 2026-08-21, and the
pipecat-ai 1.14.0 wheel). Supporting a new Pipecat version is one entry here plus one folder in
``tests/data/traces/cases/``.

All patterns run in linear time on any line (no nested or adjacent ambiguous repetitions; names are
matched only at a word start), so a 100 KB line costs no more than reading it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CONTRIBUTIONS",
    "LINE_RULES",
    "LOG_PREFIXES",
    "RULE_SETS",
    "LineKind",
    "LineRule",
    "LogPrefix",
    "RuleSet",
    "Hit",
    "classify",
    "classify_both",
    "loguru_prefix",
]

NUM = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)"
"""A number as Pipecat's f-strings print it (also ``nan``/``inf``, which are then flagged)."""

_PROC = r"(?<![\w.])(?P<proc>[\w.]+#\d+)"  # a processor name (``OpenAILLMService#0``), at a word start

LineKind = Literal[
    "vad_params",
    "vad_stop",
    "turn_release",
    "smart_turn_result",
    "smart_turn_silence",
    "ttfb",
    "ttfat",
    "text_aggregation",
    "ttfa",
    "latency_total",
    "llm_context",
    "bot_started",
    "tool_started",
    "tool_call",
    "tool_result",
    "tool_event",
    "breakdown_user_turn",
    "breakdown_contribution",
    "breakdown_ttfb",
    "breakdown_aggregation",
]


@dataclass(frozen=True)
class LineRule:
    """One kind of log message Pipecat writes.

    :ivar kind: what the line means to the reader.
    :ivar pattern: searched in the message (after the loguru prefix).
    :ivar versions: the Pipecat versions that write it.
    :ivar source: the pipecat-ai/pipecat file (and tag) that writes it.
    :ivar rule_set: for a line that anchors a turn, the :data:`RULE_SETS` entry the turn is read by.
    :ivar needle: text every match contains, looked for before the pattern runs (:func:`classify_both`
        screens a message for every needle at once, then runs only the patterns whose needle is there).
    :ivar leads: the pattern starts with the processor's name, ends with ``$``, and no earlier rule can
        match a message it matches from the start (such a message is the name, then this rule's text: it
        leaves no room for an earlier rule's needle; ``tests/test_pipecat_rules.py`` checks it). A message
        that starts with a name and this rule's first word (the needle's) is tried on it first: the
        metrics and VAD lines, read without screening them for every key word.
    """

    kind: LineKind
    pattern: re.Pattern[str]
    versions: str
    source: str
    rule_set: str = ""
    needle: str = ""
    leads: bool = False


_SRC_METRICS = "src/pipecat/processors/metrics/frame_processor_metrics.py"
_SRC_BD = "src/pipecat/observers/user_bot_latency_observer.py (LatencyBreakdown.chronological_events)"

LINE_RULES: tuple[LineRule, ...] = (
    LineRule(
        "vad_params",
        re.compile(r"^Setting VAD params to: .*?\bstop_secs=" + NUM),
        "0.0.63 - 1.14",
        "src/pipecat/audio/vad/vad_analyzer.py set_params (VADParams str()) @ v0.0.63, v1.7.0",
        needle="Setting VAD params to: ",
    ),
    LineRule(
        "turn_release",
        re.compile(_PROC + r": User stopped speaking \(strategy: (?P<strategy>[^)]*)\)"),
        "0.0.99 - 1.14",
        "src/pipecat/processors/aggregators/llm_response_universal.py, src/pipecat/turns/user_turn_processor.py "
        "@ v0.0.99, v1.7.0",
        needle=": User stopped speaking (strategy: ",
    ),
    LineRule(
        "vad_stop",
        re.compile(_PROC + r" VADUserStoppedSpeakingFrame received$"),
        "1.0 - 1.14",
        "src/pipecat/turns/user_stop/speech_timeout_user_turn_stop_strategy.py @ v1.7.0",
        "pipecat-1.x",
        needle=" VADUserStoppedSpeakingFrame received",
        leads=True,
    ),
    LineRule(
        "vad_stop",
        re.compile(_PROC + r": User stopped speaking$"),
        "0.0.108 - 1.14",
        "src/pipecat/processors/audio/vad_processor.py @ v0.0.108, v1.7.0",
        "pipecat-vad-processor",
        needle=": User stopped speaking",
        leads=True,
    ),
    LineRule(
        "vad_stop",
        re.compile(r"^User stopped speaking$"),
        "0.0.63 - 0.0.108",
        "src/pipecat/transports/base_input.py _handle_user_interruption @ v0.0.63-v0.0.108",
        "pipecat-0.0.x",
        needle="User stopped speaking",
    ),
    LineRule(
        "smart_turn_silence",
        re.compile(r"^End of Turn complete due to stop_secs\. Silence in ms: " + NUM + "$"),
        "0.0.70 - 1.14",
        "src/pipecat/audio/turn/smart_turn/base_smart_turn.py append_audio @ v0.0.70-v1.7.0",
        "pipecat-0.0.x-smart-turn",
        needle="End of Turn complete due to stop_secs. Silence in ms: ",
    ),
    LineRule(
        "smart_turn_result",
        re.compile(r"^End of Turn result: (?P<state>\S+)$"),
        "0.0.70 - 1.14",
        "src/pipecat/audio/turn/smart_turn/base_smart_turn.py analyze_end_of_turn @ v0.0.70-v1.7.0",
        "pipecat-0.0.x-smart-turn",
        needle="End of Turn result: ",
    ),
    LineRule(
        "ttfat",
        re.compile(_PROC + r" TTFAT: " + NUM + r"s? \(" + NUM + r"s? thinking\)$"),
        "main since 2026-08 (pipecat PR 5320), 1.14",
        _SRC_METRICS + " stop_ttfat_metrics @ main 2026-08-21",
        needle=" TTFAT: ",
        leads=True,
    ),
    LineRule(
        "ttfb",
        re.compile(_PROC + r" TTFB: " + NUM + r"(?P<s>s)?$"),
        "0.0.63 - 1.14 (the 's' suffix since 0.0.8x)",
        _SRC_METRICS + " stop_ttfb_metrics",
        needle=" TTFB: ",
        leads=True,
    ),
    LineRule(
        "ttfb",
        re.compile(r"\[" + _PROC + r"\] TTFB(?: \([^()]*\))?: " + NUM + r"s at " + NUM + r"s$"),
        "0.0.9x - 1.14",
        "src/pipecat/observers/loggers/metrics_log_observer.py",
        needle="] TTFB",
    ),
    LineRule(
        "text_aggregation",
        re.compile(_PROC + r" text aggregation time: " + NUM + r"s?$"),
        "0.0.9x - 1.14",
        _SRC_METRICS + " stop_text_aggregation_metrics",
        needle=" text aggregation time: ",
        leads=True,
    ),
    LineRule(
        "ttfa",
        re.compile(_PROC + r" TTFA: " + NUM + r"s? \(" + NUM + r"s? leading silence\)$"),
        "1.x - 1.14",
        _SRC_METRICS + " _check_ttfa",
        needle=" TTFA: ",
        leads=True,
    ),
    LineRule(
        "latency_total",
        re.compile(r"LATENCY FROM USER STOPPED SPEAKING TO BOT STARTED SPEAKING: " + NUM + r"s?$"),
        "0.0.70 - 0.0.108",
        "src/pipecat/observers/loggers/user_bot_latency_log_observer.py @ v0.0.70, v0.0.78, v0.0.102, v0.0.108",
        needle="LATENCY FROM USER STOPPED SPEAKING TO BOT STARTED SPEAKING: ",
    ),
    LineRule(
        "latency_total",
        re.compile(r"^ *" + NUM + r"s  TOTAL$"),
        "1.x - 1.14",
        "src/pipecat/observers/user_bot_latency_observer.py LatencyBreakdown.turn_contribution_lines (the "
        "lines its docstring logs from on_latency_breakdown; '(from client connected)' totals are not read)",
        needle="s  TOTAL",
    ),
    LineRule(
        "llm_context",
        re.compile(r"\bGenerating (?:chat|LLM response)\b"),
        "0.0.63 - 1.14 ('Generating LLM response [...]' in 1.14)",
        "src/pipecat/services/openai/base_llm.py (and the other LLM services) _stream_chat_completions, "
        "get_chat_completions @ pipecat-ai 1.14.0",
        needle="Generating ",
    ),
    LineRule(
        "bot_started",
        re.compile(r"^Bot(?: \[[^\]]{0,200}\])? started speaking$"),
        "0.0.63 - 1.14",
        "src/pipecat/transports/base_output.py _bot_started_speaking (logged as the first audio frame goes out) "
        "@ v0.0.63, v0.0.67, v1.7.0, pipecat-ai 1.14.0",
        needle=" started speaking",
    ),
    LineRule(
        "bot_started",
        re.compile(r"→ [^:]{1,200}: BotStartedSpeakingFrame\b.* at " + NUM + r"s$"),
        "0.0.6x - 1.14 (DebugLogObserver)",
        "src/pipecat/observers/loggers/debug_log_observer.py on_push_frame",
        needle=": BotStartedSpeakingFrame",
    ),
    LineRule(
        "tool_started",
        re.compile(_PROC + r" FunctionCallsStartedFrame: \[(?P<calls>.*)\]$"),
        "0.0.8x - 1.14",
        "src/pipecat/processors/aggregators/llm_response(_universal).py _handle_function_calls_started "
        "@ v0.0.80, v1.7.0, pipecat-ai 1.14.0",
        needle=" FunctionCallsStartedFrame: [",
    ),
    LineRule(
        "tool_call",
        re.compile(_PROC + r" Calling function \[(?P<name>[^:\]]{0,200}):(?P<id>[^\]]{0,200})\]"),
        "0.0.63 - 1.14",
        "src/pipecat/services/llm_service.py _run_function_call @ v0.0.63, v0.0.80, v1.7.0, pipecat-ai 1.14.0",
        needle=" Calling function [",
    ),
    LineRule(
        "tool_result",
        re.compile(_PROC + r" FunctionCallResultFrame: \[(?P<name>[^:\]]{0,200}):(?P<id>[^\]]{0,200})\]$"),
        "0.0.63 - 1.14",
        "src/pipecat/processors/aggregators/llm_response(_universal).py _handle_function_call_result "
        "@ v0.0.63, v0.0.95, v1.7.0, pipecat-ai 1.14.0",
        needle=" FunctionCallResultFrame: [",
    ),
    LineRule(
        "tool_event",
        re.compile(
            r'^\{"kind": ?"function_call_(?P<event>started|in_progress|completed|failed|timed_out|cancelled)", ?'
            r'"function_name": ?"(?P<name>[^"]{0,200})"'
        ),
        "1.12 - 1.14 (FunctionCallObserver, its docstring's handler: logger.info(event.model_dump_json()))",
        "src/pipecat/observers/function_call_observer.py FunctionCallEvent @ pipecat-ai 1.14.0",
        needle='"function_call_',
    ),
    LineRule(
        "breakdown_user_turn", re.compile(r"\bUser turn: " + NUM), "0.0.104 - 1.14", _SRC_BD, needle="User turn: "
    ),
    LineRule(
        "breakdown_contribution",
        re.compile(r"^ *" + NUM + r"s  (?P<label>[a-zA-Z][a-zA-Z ]{0,40}?) +\[(?P<owner>[^\]]{0,200})\]$"),
        "1.9 - 1.14",
        "src/pipecat/observers/user_bot_latency_observer.py LatencyBreakdown.turn_contribution_lines "
        "('{duration:6.3f}s  {label:20} [{owner}]', one line per contribution, then the TOTAL line) "
        "@ pipecat-ai 1.14.0",
        needle="s  ",
    ),
    LineRule("breakdown_ttfb", re.compile(_PROC + r": TTFB " + NUM), "0.0.104 - 1.14", _SRC_BD, needle=": TTFB "),
    LineRule(
        "breakdown_aggregation",
        re.compile(_PROC + r": text aggregation " + NUM),
        "0.0.104 - 1.14",
        _SRC_BD,
        needle=": text aggregation ",
    ),
)
"""Every message the reader uses, first match wins (TTFAT before TTFB: its line starts alike)."""

_EITHER = ("vad_params", "latency_total")
"""Kinds read in both modes (with and without VAD lines)."""
_KEYS = ("TTF", "User", "unction", "aggregation", "End of Turn", "tarted", "s  ", "Generating", "VAD params", "LATENCY")
"""Words that sort messages: every rule's needle holds one of them (the first that fits is its key), so a
message is screened for these few before any needle or pattern of the rules they lead to."""

Hit = tuple[LineRule, re.Match[str]]
"""A rule a message matches, and the match."""
_Scan = tuple[str, Callable[[str], "re.Match[str] | None"], LineRule, bool, bool]


def _scans(*, vad: bool, breakdown: bool) -> tuple[tuple[str, tuple[_Scan, ...]], ...]:
    """Per key of :data:`_KEYS`, the rules read in a log with VAD lines (``vad``) and/or in one without
    (``breakdown``), in :data:`LINE_RULES` order, as (needle, search, rule, read with VAD lines, read
    without them)."""
    by_key: dict[str, list[_Scan]] = {}
    for r in LINE_RULES:
        key = next(k for k in _KEYS if k in r.needle)  # (StopIteration: a rule needs a key)
        in_breakdown = r.kind.startswith("breakdown") or r.kind in _EITHER
        in_vad = not r.kind.startswith("breakdown")
        if (vad and in_vad) or (breakdown and in_breakdown):
            by_key.setdefault(key, []).append((r.needle, r.pattern.search, r, in_vad, in_breakdown))
    return tuple((key, tuple(scans)) for key, scans in by_key.items())


_SCANS = {
    "both": _scans(vad=True, breakdown=True),
    "vad": _scans(vad=True, breakdown=False),
    "breakdown": _scans(vad=False, breakdown=True),
}
_ORDER = {id(r): i for i, r in enumerate(LINE_RULES)}


def _candidates(msg: str, which: str) -> tuple[_Scan, ...]:
    """The rules whose key word (:data:`_KEYS`) is in the message, in :data:`LINE_RULES` order."""
    found: tuple[_Scan, ...] = ()
    keys: tuple[str, ...] = ()
    for key, keyed in _SCANS[which]:
        if key in msg:
            keys += (key,)
            found = keyed if len(keys) == 1 else _merged(which, keys)
    return found


@functools.lru_cache(maxsize=256)
def _merged(which: str, keys: tuple[str, ...]) -> tuple[_Scan, ...]:
    """The rules of several key words (a message with two: ``User started``), in :data:`LINE_RULES` order."""
    scans = [scan for key, keyed in _SCANS[which] if key in keys for scan in keyed]
    return tuple(sorted(scans, key=lambda scan: _ORDER[id(scan[2])]))


def _first_words(rules: tuple[LineRule, ...]) -> dict[str, tuple[LineRule, ...]]:
    """The first word of each leading rule's needle (``TTFB:``, ``User``, ``text``, ...) -> those rules,
    in :data:`LINE_RULES` order."""
    by_word: dict[str, tuple[LineRule, ...]] = {}
    for rule in rules:
        if rule.leads:
            word = rule.needle.lstrip(":").split()[0]
            by_word[word] = (*by_word.get(word, ()), rule)
    return by_word


_LEADING = _first_words(LINE_RULES)
"""A message's second word, after a processor's name -> the rules that may read it from its start."""


def classify(msg: str, *, breakdown: bool) -> Hit | None:
    """The rule a message matches, with its match (None: the reader ignores the line): the first in
    :data:`LINE_RULES` whose pattern it matches, as if each were searched in turn. A message that starts
    with a processor's name is tried first on the leading rules (:attr:`LineRule.leads`) of its second
    word (``OpenAILLMService#0 TTFB: 0.3s``: one pattern matched); any other message, and one those do
    not match, on the rules whose key word and needle are in it (~1 in 25).

    ``breakdown`` selects the latency-breakdown lines (read only when a log has no VAD line).
    """
    if not breakdown:
        words = msg.split(" ", 2)
        if len(words) > 1:
            for rule in _LEADING.get(words[1], ()):
                m = rule.pattern.match(msg)
                if m is not None:
                    return rule, m
    return _screened(msg, breakdown=breakdown)


def _screened(msg: str, *, breakdown: bool) -> Hit | None:
    """:func:`classify` on the rules whose key word and needle are in the message, in order."""
    for needle, search, rule, _, _ in _candidates(msg, "breakdown" if breakdown else "vad"):
        if needle in msg:
            m = search(msg)
            if m is not None:
                return rule, m
    return None


def classify_both(msg: str) -> tuple[Hit | None, Hit | None]:
    """:func:`classify` with and without ``breakdown``, in one pass over the rules (while a reader does
    not know yet whether a log has VAD lines)."""
    vad: Hit | None = None
    breakdown: Hit | None = None
    for needle, search, rule, in_vad, in_breakdown in _candidates(msg, "both"):
        if needle in msg and ((in_vad and vad is None) or (in_breakdown and breakdown is None)):
            m = search(msg)
            if m is not None:
                if in_vad and vad is None:
                    vad = (rule, m)
                if in_breakdown and breakdown is None:
                    breakdown = (rule, m)
                if vad is not None and breakdown is not None:
                    break
    return vad, breakdown


CONTRIBUTIONS: dict[str, str] = {
    "endpointing wait": "endpointing",
    "transcription": "endpointing",
    "turn detection": "endpointing",
    "waiting for user": "endpointing",
    "LLM inference": "llm",
    "turn completion": "first_phrase",
    "awaiting speakable text": "first_phrase",
    "sentence aggregation": "first_phrase",
    "LLM tool call": "llm_tool_call",
    "function handler": "tool",
    "speech synthesis": "tts_ttfb",
    "output transport": "output",
    "pipeline": "other",
}
"""Pipecat 1.14's contribution labels (``_SPANS`` in ``observers/user_bot_latency_observer.py``) -> the
stage each is part of. ``LLM inference`` is the first pass (``llm_ttft``) until a ``function handler``,
then the pass after the tools (``llm_2_ttft``); ``first request`` (a greeting's wait, measured from the
client connecting) is not a reply turn."""


@dataclass(frozen=True)
class RuleSet:
    """How one range of Pipecat versions marks a turn.

    :ivar name: recorded on every turn it read (:attr:`TraceTurn.rules`).
    :ivar versions: the Pipecat versions it covers.
    :ivar source: where this was checked.
    :ivar anchor: the line whose time, minus the VAD's ``stop_secs``, is ``t = 0``.
    :ivar release: the line that releases the turn to the LLM (inside the endpointing stage), if logged.
    """

    name: str
    versions: str
    source: str
    anchor: str
    release: str | None


RULE_SETS: dict[str, RuleSet] = {
    r.name: r
    for r in (
        RuleSet(
            "pipecat-0.0.x",
            "0.0.63 - 0.0.108 (VAD in the input transport)",
            "src/pipecat/transports/base_input.py @ v0.0.63-v0.0.108",
            "the transport's 'User stopped speaking' minus stop_secs (without a turn analyzer: with smart "
            "turn, 0.0.6x-0.0.9x log this line at the turn's end)",
            None,
        ),
        RuleSet(
            "pipecat-0.0.x-smart-turn",
            "0.0.70 - 0.0.108 (a smart-turn analyzer on the input transport)",
            "src/pipecat/audio/turn/smart_turn/base_smart_turn.py, src/pipecat/transports/base_input.py "
            "@ v0.0.70-v0.0.108",
            "'End of Turn complete due to stop_secs. Silence in ms: X' minus X (exact); else the last "
            "'End of Turn result: ...' before the release (run at each VAD stop) minus stop_secs, late by the model's "
            "inference time (logged only at TRACE)",
            "the transport's 'User stopped speaking', logged when the analyzer ends the turn",
        ),
        RuleSet(
            "pipecat-vad-processor",
            "0.0.108 - 1.14 (a VADProcessor in the pipeline)",
            "src/pipecat/processors/audio/vad_processor.py @ v0.0.108, v1.7.0, pipecat-ai 1.14.0",
            "'VADProcessor#N: User stopped speaking' minus stop_secs",
            None,
        ),
        RuleSet(
            "pipecat-1.x",
            "0.0.99 - 1.14 (user turn strategies)",
            "src/pipecat/turns/, llm_response_universal.py @ v0.0.99-v1.7.0, pipecat-ai 1.14.0",
            "the last VAD stop before the release ('<Strategy>#N VADUserStoppedSpeakingFrame received' or "
            "'VADProcessor#N: User stopped speaking') minus stop_secs; with the default smart-turn stop "
            "strategy, the analyzer's lines as in pipecat-0.0.x-smart-turn",
            "'<Aggregator>#N: User stopped speaking (strategy: ...)': the turn release (speech timeout, "
            "smart turn, external turn detection), counted in endpointing",
        ),
        RuleSet(
            "pipecat-breakdown",
            "0.0.104 - 1.14 (UserBotLatencyObserver's LatencyBreakdown.chronological_events, logged by the user's "
            "on_latency_breakdown handler; deprecated since 1.9), a log with no VAD line",
            _SRC_BD + " @ v0.0.104, v1.7.0, pipecat-ai 1.14.0",
            "Pipecat's own 'User turn' (from the actual end of speech)",
            None,
        ),
        RuleSet(
            "pipecat-realtime",
            "0.0.x - 1.14 with a speech-to-speech LLM service (OpenAIRealtimeLLMService, GeminiLiveLLMService, "
            "AWSNovaSonicLLMService, ...): no TTS line",
            "src/pipecat/services/openai/realtime/, google/gemini_live/, aws/nova_sonic/; transports/base_output.py "
            "@ pipecat-ai 1.14.0",
            "as the turn's VAD line (above); the turn ends at 'Bot started speaking': the model's TTFB, then "
            "'output' until the bot's audio",
            None,
        ),
        RuleSet(
            "pipecat-otel",
            "0.0.104 - 1.x OpenTelemetry tracing (TurnTraceObserver): turn spans with turn.user_bot_latency_seconds "
            "(since 0.0.104), turn.user_turn_seconds / turn.text_aggregation_seconds where written, and the "
            "stt/llm/tts children's metrics.ttfb",
            "src/pipecat/utils/tracing/turn_trace_observer.py, service_decorators.py @ v0.0.104, v1.7.0",
            "VAD stop minus stop_secs (turn.user_bot_latency_seconds is measured from it)",
            None,
        ),
        RuleSet(
            "pipecat-otel-1.14",
            "1.14 OpenTelemetry tracing (PipelineWorker(enable_tracing=True)): tts spans without metrics.ttfb, turn "
            "spans without turn.user_turn_seconds; the turn is kept with its total, those stages unknown",
            "src/pipecat/utils/tracing/turn_trace_observer.py, service_decorators.py (@traced_tts) @ pipecat-ai 1.14.0",
            "VAD stop minus stop_secs (turn.user_bot_latency_seconds)",
            None,
        ),
        RuleSet(
            "pipecat-contributions",
            "1.9 - 1.14 (UserBotLatencyObserver: LatencyBreakdown.turn_contribution_lines, logged by the user's "
            "on_latency_breakdown handler)",
            "src/pipecat/observers/user_bot_latency_observer.py @ pipecat-ai 1.14.0",
            "Pipecat's own user silence (VAD stop minus stop_secs: the start of 'endpointing wait'); the total is "
            "its TOTAL line (to BotStartedSpeakingFrame)",
            None,
        ),
    )
}
"""The rule sets by name. A turn is read by ``pipecat-1.x`` when a turn-release line belongs to it,
else by the rule set of the VAD line that opened it. A name may carry a qualifier on a turn
(``pipecat-contributions (speech-to-speech)``: no speech-synthesis line)."""


@dataclass(frozen=True)
class LogPrefix:
    """A loguru line layout: where the timestamp and the message are.

    :ivar name: short name for messages.
    :ivar pattern: matches a whole line; groups ``ts`` (date and time, any zone suffix outside it)
        and ``msg``.
    :ivar example: a line in this layout.
    """

    name: str
    pattern: re.Pattern[str]
    example: str


_TS = r"(?P<ts>\d\d\d\d-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)(?:Z|[+-]\d\d:?\d\d)?"
# (\d\d, not \d{2}: the same text, ~6% less work for the regex engine on every line)
_LEVEL = r"(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)"

LOG_PREFIXES: tuple[LogPrefix, ...] = (
    LogPrefix(
        "loguru default",
        re.compile(r"^" + _TS + r" \| *" + _LEVEL + r" *\| (?P<where>\S+) - (?P<msg>.*)$"),
        "2025-05-09 20:35:29.060 | DEBUG    | pipecat.transports.base_input:_handle_user_interruption:224 - ...",
    ),
    LogPrefix(
        "timestamp - where - message",
        re.compile(r"^" + _TS + r" - (?:" + _LEVEL + r" - )?(?P<where>[\w.]+:[\w<>]+:\d+) - (?P<msg>.*)$"),
        "2025-04-28T19:09:32.400Z - pipecat.transports.base_input:_handle_user_interruption:185 - ...",
    ),
    LogPrefix(
        "timestamp - level - context - message",
        re.compile(r"^" + _TS + r" - " + _LEVEL + r" - (?:(?P<where>[^ ]{1,80}) - )?(?P<msg>.*)$"),
        "2025-10-28T16:10:43.200+0000 - DEBUG - CA0 - User stopped speaking",
    ),
    LogPrefix(
        "timestamp level message",
        re.compile(r"^" + _TS + r" +" + _LEVEL + r" +(?P<msg>[^ |].*)$"),
        "2025-10-28 16:10:43.200 DEBUG VADProcessor#0: User stopped speaking",
    ),
)
"""The loguru layouts detected without ``--log-format``: loguru's default and those seen in Pipecat
reports (pipecat issues 1682: a cloud log viewer's export; 1605: a user's own format)."""

_FIELD = re.compile(r"\{([^{}]*)\}")


def loguru_prefix(fmt: str) -> LogPrefix:
    """A :class:`LogPrefix` from a loguru format string (``--log-format``).

    ``{time...}`` becomes the timestamp, ``{message}`` the message, ``{level...}`` a level name, and
    any other field (``{name}``, ``{extra[call_id]}``, ...) a run of non-blank characters; the text
    between fields must appear as is. Colour tags (``<green>``) are dropped.

    :raises ValueError: the format has no ``{time}`` or no ``{message}`` field.
    """
    fmt = re.sub(r"</?[a-z]+>", "", fmt).rstrip("\n")
    parts, pos, seen = ["^"], 0, set()
    for m in _FIELD.finditer(fmt):
        parts.append(re.escape(fmt[pos : m.start()]))
        key = m.group(1).split(":", 1)[0].split(".", 1)[0].split("[", 1)[0].strip()
        if key == "time" and "time" not in seen:
            parts.append(_TS)
        elif key == "message" and "message" not in seen:
            parts.append(r"(?P<msg>.*)")
        elif key == "level":
            parts.append(r"\S+ *")
        else:
            parts.append(r"\S*")
        seen.add(key)
        pos = m.end()
    parts.append(re.escape(fmt[pos:]) + "$")
    if not {"time", "message"} <= seen:
        raise ValueError("a log format needs a {time} and a {message} field")
    return LogPrefix("--log-format", re.compile("".join(parts)), fmt)
