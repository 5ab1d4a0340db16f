"""A Pipecat observer that times each turn's frames into a :class:`~voicebudget.TurnRecorder`.

One line to attach (Pipecat 1.x; ``PipelineTask`` is the older name of ``PipelineWorker``)::

    from voicebudget.integrations.pipecat import BudgetObserver

    observer = BudgetObserver(voicebudget.Budget(total_ms=800))
    worker = PipelineWorker(pipeline, observers=[observer])
    ...
    observer.report().raise_for_budget()     # the same Report as the simulator and `check`

A turn opens at the VAD stop (``VADUserStoppedSpeakingFrame``; ``UserStoppedSpeakingFrame`` when the
pipeline has no VAD frames) and its time axis starts at the end of speech: the VAD stop minus the
frame's ``stop_secs`` (the silence the VAD waited for, as Pipecat's own ``UserBotLatencyObserver``
does). It closes at ``BotStartedSpeakingFrame`` (``first_audio``); in a pipeline whose output sends none,
a turn with TTS audio is closed at the next turn, at ``EndFrame``/``CancelFrame`` or by
:meth:`BudgetObserver.report`, with ``first_audio`` at its first ``TTSAudioRawFrame``. In between,
each moment ends the stage named after it, and the stage runs from the latest earlier moment:

=====================  ==============================================  =======================
stage                  ends at                                         what it is
=====================  ==============================================  =======================
``endpointing``        ``VADUserStoppedSpeakingFrame``                 VAD ``stop_secs`` silence
``stt``                the last ``TranscriptionFrame`` before the LLM  STT finalisation
``turn_detection``     ``UserStoppedSpeakingFrame``                    turn strategy / analyzer
``context``            ``LLMFullResponseStartFrame``                   aggregation, LLM request
``llm``                the first LLM token (thought or text)           TTFT
``reasoning``          the first ``LLMTextFrame``                      thinking models only
``text_aggregation``   ``TTSStartedFrame``                             waiting for a sentence
``tts``                the first ``TTSAudioRawFrame``                  TTS TTFB
``output``             ``BotStartedSpeakingFrame``                     output transport
=====================  ==============================================  =======================

A stage whose moment came before an earlier one (a transcript final before the VAD stop) has no
time on the critical path and is left out of that turn. Every moment is also kept as a mark
(``vad_stop``, ``transcript``, ``llm_request``, ``first_token``, ``first_text``, ``tts_request``,
``tts_audio``, ``bot_started``). Frame times are Pipecat's own push timestamps (the pipeline clock),
moved onto the recorder's clock, so the observer's queue adds no delay. A user who starts speaking
again before the LLM was asked continues the same utterance (the turn restarts at the next VAD
stop); an interruption after that ends the turn without first audio (listed, not measured).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    CancelFrame,
    EndFrame,
    InterruptionFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    LLMThoughtStartFrame,
    LLMThoughtTextFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.processors.frame_processor import FrameDirection

from voicebudget.checker._recorder import FIRST_AUDIO, SPEECH_END, Turn, TurnRecorder
from voicebudget.telemetry._figures import given_sinks

if TYPE_CHECKING:
    from voicebudget._budget import Budget
    from voicebudget.checker._analysis import RecorderReport
    from voicebudget.telemetry import PrometheusMetrics, Telemetry

__all__ = ["STAGES", "BudgetObserver"]

STAGES: tuple[tuple[str, str], ...] = (
    ("vad_stop", "endpointing"),
    ("transcript", "stt"),
    ("user_turn_stop", "turn_detection"),
    ("llm_request", "context"),
    ("first_token", "llm"),
    ("first_text", "reasoning"),
    ("tts_request", "text_aggregation"),
    ("tts_audio", "tts"),
    ("bot_started", "output"),
)
"""(moment, the stage that ends there), in pipeline order."""

_NS_PER_S = 1_000_000_000


class BudgetObserver(BaseObserver):
    """Times each Pipecat turn into a :class:`~voicebudget.TurnRecorder` (see the module docstring).

    :param budget: what :meth:`report` judges against; default ``Budget()`` (800 ms at p95).
    :param recorder: the recorder to add turns to, e.g. the pytest ``voice_budget`` fixture; default
        a new one named ``name``.
    :param name: the new recorder's name.
    :param telemetry: sends each turn to OpenTelemetry as it ends (judged against ``budget`` unless it has a
        budget of its own; docs/telemetry.md).
    :param prometheus: counts each turn in Prometheus metrics as it ends (the same way; serve them with
        :func:`voicebudget.telemetry.start_http_server`).
    """

    def __init__(
        self,
        budget: Budget | None = None,
        *,
        recorder: TurnRecorder | None = None,
        name: str = "pipecat",
        telemetry: Telemetry | None = None,
        prometheus: PrometheusMetrics | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            super().__init__(observe_every_push=False, **kwargs)  # Pipecat >= 1.x: first pushes only
        except TypeError:
            super().__init__(**kwargs)
        self.budget = budget
        self.recorder = recorder if recorder is not None else TurnRecorder(name)
        for sink in given_sinks(telemetry, prometheus):
            sink.attach(self.recorder, budget=budget)
        self._moments: dict[str, int] = {}
        self._speech_end: int | None = None
        self._seen: set[int] = set()  # frame ids of this turn (older Pipecat reports every push)

    # -- Pipecat hook ------------------------------------------------------------------------------

    async def on_push_frame(self, data: FramePushed) -> None:
        """Record the moment a frame stands for (downstream, first push of each frame only)."""
        if data.direction != FrameDirection.DOWNSTREAM or not getattr(data, "first_push", True):
            return
        frame = data.frame
        cls = type(frame)
        kind = _KIND[cls] if cls in _KIND else _KIND.setdefault(cls, _moment_of(frame))
        if kind is None or frame.id in self._seen:
            return
        self._seen.add(frame.id)
        self._moment(kind, frame, self._on_recorder_clock(data))

    def _moment(self, kind: str, frame: object, at: int) -> None:
        """A frame's moment (``at``: ns on the recorder's clock): a VAD stop or a release starts a turn, the
        pipeline's end closes the open one, the others belong to the open turn."""
        if kind == "vad_stop":
            self._flush()
            stop_ns = round(float(getattr(frame, "stop_secs", 0.0)) * _NS_PER_S)
            self._speech_end, self._moments = at - stop_ns, {"vad_stop": at}
        elif kind == "user_turn_stop" and self._speech_end is None:
            self._flush()  # no VAD frames: the turn release is the origin
            self._speech_end, self._moments = at, {kind: at}
        elif kind == "end":
            self._flush()
        elif self._speech_end is not None:
            self._in_turn(kind, at)

    def _in_turn(self, kind: str, at: int) -> None:
        """A moment of the open turn (``at``: ns on the recorder's clock)."""
        if kind == "user_started":
            self._user_started()
        elif kind == "interruption":
            self._interrupted()
        elif kind == "transcript":
            if "llm_request" not in self._moments:  # a later final piece replaces an earlier one
                self._moments[kind] = at
        else:
            if kind == "first_text":
                self._moments.setdefault("first_token", at)
            self._moments.setdefault(kind, at)
            if kind == "bot_started":
                self._close()

    # -- turns -------------------------------------------------------------------------------------

    def _on_recorder_clock(self, data: FramePushed) -> int:
        """The frame's push time (pipeline clock, ns) on the recorder's clock."""
        clock = self.recorder.clock
        try:
            pipeline_now = int(data.source.get_clock().get_time())
        except Exception:  # no clock yet: the observation time is the best there is
            return clock()
        return int(data.timestamp) + (clock() - pipeline_now)

    def _user_started(self) -> None:
        if "tts_audio" in self._moments:
            self._flush()  # it answered (no BotStartedSpeakingFrame in this pipeline)
        elif "llm_request" not in self._moments:
            self._reset()  # a pause within one utterance: the turn starts at the next stop
        else:
            self._interrupted()

    def _interrupted(self) -> None:
        if "tts_audio" in self._moments:
            self._flush()
            return
        self._build().end(reason="interrupted by the user before the first audio")
        self._reset()

    def _flush(self) -> None:
        """Close a pending turn that has TTS audio (a pipeline whose output sends no bot frames)."""
        if self._speech_end is not None and "tts_audio" in self._moments:
            self._close()
        self._reset()

    def _reset(self) -> None:
        self._speech_end, self._moments, self._seen = None, {}, set()

    def _close(self) -> None:
        turn = self._build()
        turn.mark(FIRST_AUDIO, at_ns=self._moments.get("bot_started", self._moments.get("tts_audio")))
        turn.end()
        self._reset()

    def _build(self) -> Turn:
        assert self._speech_end is not None
        turn = self.recorder.turn()
        turn.mark(SPEECH_END, at_ns=self._speech_end)
        for moment, at in self._moments.items():
            turn.mark(moment, at_ns=at)
        start = self._speech_end
        for moment, stage in STAGES:
            end = self._moments.get(moment)
            if end is not None and end > start:
                turn.add_stage(stage, start_ns=start, end_ns=end)
                start = end
        return turn

    # -- results -----------------------------------------------------------------------------------

    def report(self, budget: Budget | None = None) -> RecorderReport:
        """The recorder's report against ``budget`` (default: the observer's budget); a pending turn
        that has its TTS audio is closed first.

        :raises ScenarioError: no complete turn yet.
        """
        self._flush()
        return self.recorder.report(budget or self.budget)


_KIND: dict[type, str | None] = {}
"""Frame class -> its moment (None: not looked at), filled on first sight: a dict lookup per frame."""


_MOMENTS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (VADUserStoppedSpeakingFrame, "vad_stop"),
    ((VADUserStartedSpeakingFrame, UserStartedSpeakingFrame), "user_started"),
    (UserStoppedSpeakingFrame, "user_turn_stop"),
    (TranscriptionFrame, "transcript"),
    (LLMFullResponseStartFrame, "llm_request"),
    ((LLMThoughtStartFrame, LLMThoughtTextFrame), "first_token"),
    (LLMTextFrame, "first_text"),
    (TTSStartedFrame, "tts_request"),
    (TTSAudioRawFrame, "tts_audio"),
    (BotStartedSpeakingFrame, "bot_started"),
    (InterruptionFrame, "interruption"),
    ((EndFrame, CancelFrame), "end"),
)
"""Pipecat frame types -> the moment of a turn they stand for, first match wins (a thought frame is
checked before plain LLM text)."""


def _moment_of(frame: object) -> str | None:
    """The moment a frame stands for, or None."""
    for kinds, moment in _MOMENTS:
        if isinstance(frame, kinds):
            return moment
    return None
