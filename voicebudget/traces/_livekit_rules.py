"""What each LiveKit Agents version writes, as data: the metrics types, span names and attributes the
LiveKit readers use, the versions each rule covers, and where it was read in LiveKit's source.

Sources: github.com/livekit/agents, ``livekit-agents/livekit/agents/metrics/base.py``,
``telemetry/trace_types.py``, ``voice/agent_activity.py``, ``voice/audio_recognition.py``,
``voice/generation.py``, ``llm/chat_context.py`` (``MetricsReport``) at the tags named below, and the
installed ``livekit-agents`` 1.8.9; checked 2026-11-30. The rule that read a turn is recorded on it
(:attr:`~voicebudget.traces.TraceTurn.rules`).

Also here: the check for a value repeated to the last digit on every turn (a stale measurement), which
every LiveKit reader applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from voicebudget.traces._table import TurnBuilder

__all__ = ["RULES", "LiveKitRule", "StaleValues", "flag_stale_values"]

CHECKED = "2026-11-30"


@dataclass(frozen=True)
class LiveKitRule:
    """How one LiveKit output, in the versions it covers, maps onto the stages.

    :ivar name: the rule's name, recorded on each turn it reads.
    :ivar versions: the ``livekit-agents`` versions it covers.
    :ivar reads: stage -> the field or attribute(s) it comes from.
    :ivar anchor: what ``t = 0`` is in this output.
    :ivar total: what the turn total is.
    :ivar source: the files of LiveKit's source this was read from.
    :ivar checked: the date it was checked against that source.
    """

    name: str
    versions: str
    reads: Mapping[str, str]
    anchor: str
    total: str
    source: str
    checked: str = CHECKED


_VAD_ANCHOR = "the last audio frame the VAD classed as speech"

RULES: dict[str, LiveKitRule] = {
    r.name: r
    for r in (
        LiveKitRule(
            "livekit-metrics-1.x",
            "1.0.x - 1.8.x (metrics_collected; model_dump() JSON lines, str() or repr() of the models: 1.6+ repr "
            "leaves out defaults, type among them, taken from the class name)",
            {
                "endpointing": "eou_metrics.end_of_utterance_delay",
                "asr": "eou_metrics.transcription_delay",
                "llm_ttft": "llm_metrics.ttft",
                "tts_ttfb": "tts_metrics.ttfb",
                "llm_tool_call, tool, llm_2_ttft": "a tool turn's llm_metrics of one speech_id (livekit agents issue "
                "3824): the pass that speaks is the last one started before the first TTS request (start = timestamp "
                "- duration); the passes before it and the gaps between them, and its ttft",
                "turn id": "speech_id",
                "cold": "tts_metrics.connection_reused false with acquire_time > 0 (a WebSocket TTS that opened its "
                "connection for the turn; an HTTP one reports acquire_time 0 on every request)",
            },
            _VAD_ANCHOR,
            "end_of_utterance_delay + ttft + ttfb (LiveKit's documented turn latency); a tool turn adds the first "
            "request's start to the speaking request's start",
            "metrics/base.py (EOUMetrics, LLMMetrics, TTSMetrics)",
        ),
        LiveKitRule(
            "livekit-log-metrics",
            "1.x - 1.8.9 (metrics.log_metrics() through cli/log.py's JsonFormatter or the dev ColoredFormatter)",
            {
                "endpointing": "'EOU metrics' end_of_utterance_delay (rounded to 10 ms)",
                "asr": "'EOU metrics' transcription_delay (rounded to 10 ms)",
                "llm_ttft": "'LLM metrics' ttft (rounded to 10 ms); the request's start: the record's time - "
                "completion_tokens / tokens_per_second",
                "tts_ttfb": "'TTS metrics' ttfb",
                "llm_tool_call, tool, llm_2_ttft": "as livekit-metrics-1.x, from the records' times; the console "
                "formatter ('python agent.py console', HH:MM:SS) cannot time the tools: the turn is a lower bound "
                "(llm_tool_call and tool unknown)",
                "turn id": "position (log_metrics logs no speech_id): each 'EOU metrics' opens a turn",
            },
            _VAD_ANCHOR,
            "end_of_utterance_delay + ttft + ttfb",
            "metrics/utils.py (log_metrics), cli/log.py (JsonFormatter, ColoredFormatter, setup_logging)",
        ),
        LiveKitRule(
            "livekit-metrics-1.8-extra",
            "1.8.x (EOTInferenceMetrics, InterruptionMetrics, DecisionMetrics; no speech_id)",
            {
                "endpointing parts": "the last eot_inference_metrics before the commit: turn_detector <- "
                "detection_delay, wait <- the rest",
                "notes": "interruption_metrics.detection_delay (barge-in), decision_metrics.duration",
            },
            _VAD_ANCHOR,
            "(no change to the total)",
            "metrics/base.py, inference/eot/transports.py, inference/interruption.py, llm/decisions.py",
        ),
        LiveKitRule(
            "livekit-avatar-metrics",
            "1.5.11 - 1.8.x (AvatarMetrics: an avatar worker in the audio output chain; no speech_id)",
            {
                "output": "avatar_metrics.playback_latency (the first audio frame forwarded to the avatar -> its "
                "playback started), on the last turn committed before its timestamp",
            },
            _VAD_ANCHOR,
            "end_of_utterance_delay + ttft + ttfb + playback_latency",
            "metrics/base.py (AvatarMetrics), metrics/utils.py (log_metrics 'Avatar metrics'), voice/avatar/_types.py, "
            "voice/agent_activity.py (playback_latency = started_speaking_at - started_forwarding_at)",
            "2026-12-02",
        ),
        LiveKitRule(
            "livekit-metrics-0.x",
            "0.x VoicePipelineAgent (PipelineEOUMetrics, PipelineLLMMetrics, PipelineTTSMetrics)",
            {"endpointing": "end_of_utterance_delay", "llm_ttft": "ttft", "tts_ttfb": "ttfb", "turn id": "sequence_id"},
            _VAD_ANCHOR,
            "end_of_utterance_delay + ttft + ttfb",
            "agents 0.x pipeline/pipeline_agent.py",
        ),
        LiveKitRule(
            "livekit-realtime-1.1+",
            "1.1.0 - 1.8.x (RealtimeModelMetrics; ttft defaults to -1 from 1.5.0)",
            {
                "llm_ttft": "realtime_model_metrics.ttft (response created -> first audio token)",
                "turn id": "request_id",
            },
            "the realtime model's response creation (its own turn detection before it is not in the figure)",
            "realtime_model_metrics.ttft (server side; the model's turn detection not included)",
            "metrics/base.py (RealtimeModelMetrics)",
        ),
        LiveKitRule(
            "livekit-history-1.3+",
            "1.3.0 - 1.8.x (ChatMessage.metrics, MetricsReport; the chat history, or the session report's)",
            {
                "endpointing": "user message end_of_turn_delay",
                "asr": "user message transcription_delay",
                "llm_ttft": "assistant llm_node_ttft",
                "tts_ttfb": "assistant tts_node_ttfb",
                "first_phrase": "assistant llm_node_ttfs - llm_node_ttft (1.7+)",
                "output": "assistant playback_latency (1.8: the first audio frame forwarded -> playback started)",
                "llm_ttft, tool, llm_2_ttft (tool turn)": "function_call / function_call_output items between the "
                "user message and the reply (their created_at, or the session report's function_tools_executed "
                "events); the reply's llm_node_ttft is the pass after the tools",
                "total": "assistant e2e_latency, else assistant started_speaking_at - user stopped_speaking_at",
            },
            _VAD_ANCHOR,
            "e2e_latency (agent started speaking - user stopped speaking)",
            "llm/chat_context.py (MetricsReport), voice/agent_activity.py; the session report "
            "(ctx.make_session_report().to_dict(): chat_history and events, 1.3+): voice/report.py, voice/events.py",
        ),
        LiveKitRule(
            "livekit-history-realtime",
            "1.3.0 - 1.8.x with a realtime model (messages carry only started/stopped_speaking_at)",
            {
                "total": "assistant started_speaking_at - user stopped_speaking_at (voice-to-voice); 1.8.9 with the "
                "model's own turn detection writes no user stopped_speaking_at: a session report's "
                "user_state_changed -> listening event before the reply gives it, the history alone gives no "
                "total (flagged)",
            },
            "the user's stopped_speaking_at (LiveKit's 'user stopped speaking')",
            "assistant started_speaking_at - user stopped_speaking_at",
            "llm/chat_context.py (MetricsReport), voice/agent_activity.py (realtime generation, "
            "_on_input_speech_stopped), voice/report.py",
        ),
        LiveKitRule(
            "livekit-otel-1.2",
            "1.2.x",
            {
                "endpointing": "user_turn lk.end_of_utterance_delay",
                "asr": "user_turn lk.transcription_delay",
                "llm_ttft": "llm_request lk.llm_metrics (JSON).ttft",
                "tts_ttfb": "tts_request lk.tts_metrics (JSON).ttfb",
            },
            _VAD_ANCHOR,
            "sum of the stages (no lk.e2e_latency before 1.5)",
            "telemetry/trace_types.py, voice/audio_recognition.py, llm/llm.py, tts/tts.py",
        ),
        LiveKitRule(
            "livekit-otel-1.3",
            "1.3.x - 1.4.x",
            {
                "endpointing": "user_turn lk.end_of_turn_delay",
                "asr": "user_turn lk.transcription_delay",
                "llm_ttft": "llm_request lk.llm_metrics (JSON).ttft",
                "tts_ttfb": "tts_request lk.tts_metrics (JSON).ttfb",
                "realtime": "lk.realtime_model_metrics (JSON).ttft",
            },
            _VAD_ANCHOR,
            "sum of the stages (no lk.e2e_latency before 1.5)",
            "telemetry/trace_types.py, voice/audio_recognition.py, llm/llm.py, tts/tts.py, telemetry/utils.py",
        ),
        LiveKitRule(
            "livekit-otel-1.5+",
            "1.5.0 - 1.8.x",
            {
                "endpointing": "lk.end_of_turn_delay on the user_turn span before agent_turn (its sibling under the "
                "session root; on agent_turn itself from 1.8)",
                "asr": "lk.transcription_delay (same spans)",
                "llm_ttft": "llm_node lk.response.ttft",
                "tts_ttfb": "tts_node lk.response.ttfb",
                "llm_tool_call, tool, llm_2_ttft": "a tool turn's llm_node spans, one per pass (a pass that called "
                "tools lists them), and the gaps between them",
                "total": "agent_turn lk.e2e_latency",
                "turn id": "lk.speech_id",
            },
            _VAD_ANCHOR,
            "lk.e2e_latency (agent started speaking - user stopped speaking)",
            "telemetry/trace_types.py, voice/agent_activity.py (_agent_turn, _record_user_turn_stages), "
            "voice/audio_recognition.py (_ensure_user_turn_span), voice/generation.py (llm_node, tts_node)",
        ),
    )
}
"""Every LiveKit rule, by name."""


STALE_MIN_TURNS = 3
"""A value repeated on every turn is flagged as stale from this many turns on, when it is given to at
least :data:`STALE_MIN_DIGITS` significant digits (a measured latency never repeats to the last digit);
from :data:`STALE_ANY_DIGITS_TURNS` turns on whatever its digits (rounded values repeat by chance only
in few turns)."""
STALE_MIN_DIGITS = 4
STALE_ANY_DIGITS_TURNS = 10


def _digits(value: float) -> int:
    text = repr(float(value)).lower().split("e")[0].replace("-", "").replace(".", "")
    return len(text.strip("0"))


def flag_stale_values(found: Sequence[tuple[TurnBuilder, int, str, Any]]) -> None:
    """Flag one field's value on every turn when it is the same on all of them (a stale TTFB: measured
    once and reported again, e.g. a TTS plugin that does not reset its start time).

    :param found: ``(turn, line, field, value in s)`` for every turn that reported the field.
    """
    if not _is_stale([v for _, _, _, v in found]):
        return
    for turn, line, fld, value in found:
        turn.flag(
            line,
            fld,
            value,
            f"the same {fld} = {value!r} s on all {len(found)} turns: a stale value repeated, not a measurement",
        )


class StaleValues:
    """One field's values over the turns, kept only while they may all be the same (:func:`flag_stale_values`
    then flags them): the first value that is not a number above 0 equal to the first drops them, since no
    value can be stale then (the same verdict as keeping every turn's, without ~150 bytes a turn)."""

    __slots__ = ("found", "differ")

    def __init__(self) -> None:
        self.found: list[tuple[TurnBuilder, int, str, Any]] = []
        self.differ = False

    def append(self, item: tuple[TurnBuilder, int, str, Any]) -> None:
        """A turn's ``(turn, line, field, value in s)``."""
        if self.differ:
            return
        value = item[3]
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if not numeric or (value != self.found[0][3] if self.found else not value > 0):
            self.found.clear()
            self.differ = True
            return
        self.found.append(item)

    def flag(self) -> None:
        """Flag the values when they are stale (:func:`flag_stale_values`), and drop them."""
        if not self.differ:
            flag_stale_values(self.found)
        self.found.clear()


def _is_stale(values: list[Any]) -> bool:
    """The same number (above 0) on every turn, on enough turns, with enough digits to rule out chance."""
    if len(values) < STALE_MIN_TURNS or any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        return False
    first = values[0]
    if first <= 0 or any(v != first for v in values):
        return False
    return _digits(first) >= STALE_MIN_DIGITS or len(values) >= STALE_ANY_DIGITS_TURNS
