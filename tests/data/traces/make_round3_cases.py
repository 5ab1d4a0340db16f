"""Writes round-3 case inputs with the frameworks' own code (LiveKit's metrics models, log_metrics and
formatters; Pipecat's LatencyBreakdown and loguru), at fixed times so the files are reproducible."""

import io
import json
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path

C = Path("tests/data/traces/cases")


def livekit():
    from livekit.agents import metrics
    from livekit.agents.cli.log import ColoredFormatter, JsonFormatter
    from livekit.agents.metrics import log_metrics
    from livekit.agents.metrics.base import Metadata

    T0 = 1796140800.0  # 2026-12-01 ...
    meta_llm = Metadata(model_name="gpt-4.1-mini", model_provider="openai")

    def eou(t, d, asr):
        return metrics.EOUMetrics(
            timestamp=t,
            end_of_utterance_delay=d,
            transcription_delay=asr,
            on_user_turn_completed_delay=0.0,
            speech_id=None,
        )

    def llm(t, ttft, dur, tokens=30):
        return metrics.LLMMetrics(
            label="openai",
            request_id="r",
            timestamp=t,
            duration=dur,
            ttft=ttft,
            cancelled=False,
            completion_tokens=tokens,
            prompt_tokens=800,
            prompt_cached_tokens=0,
            total_tokens=800 + tokens,
            tokens_per_second=tokens / dur,
            metadata=meta_llm,
        )

    def tts(t, ttfb, dur):
        return metrics.TTSMetrics(
            label="cartesia",
            request_id="a",
            timestamp=t,
            ttfb=ttfb,
            duration=dur,
            audio_duration=2.0,
            cancelled=False,
            characters_count=40,
            streamed=True,
        )

    # three turns; the third calls a tool: LLM 1 (0.31 s TTFT, ends at +0.45 s), tool 0.82 s, LLM 2 (0.27 s TTFT)
    # record times are when log_metrics runs: LiveKit emits each metric when its request ends
    records = []
    t = T0
    for d, asr, ttft, ttfb in ((0.55, 0.31, 0.42, 0.18), (0.48, 0.27, 0.95, 0.21)):
        commit = t + d
        records += [
            (commit, eou(commit, d, asr)),
            (commit + 1.0, llm(commit + 1.0, ttft, 1.0)),
            (commit + ttft + 0.9, tts(commit + ttft + 0.9, ttfb, 0.9)),
        ]
        t += 20
    commit = t + 0.52
    l1_end = commit + 0.45
    l2_start = l1_end + 0.82
    l2_end = l2_start + 0.8
    records += [
        (commit, eou(commit, 0.52, 0.29)),
        (l1_end, llm(l1_end, 0.31, 0.45, tokens=18)),
        (l2_end, llm(l2_end, 0.27, 0.8)),
        (l2_start + 0.27 + 0.9, tts(l2_start + 0.27 + 0.9, 0.16, 0.9)),
    ]

    class At(logging.Filter):
        def __init__(self):
            super().__init__()
            self.at = 0.0

        def filter(self, record):
            record.created = self.at
            record.msecs = (self.at % 1) * 1000
            record.relativeCreated = 0
            record.process = 4242
            return True

    def write(fmt, path, twice=False):
        buf = io.StringIO()
        h = logging.StreamHandler(buf)
        h.setFormatter(fmt)
        at = At()
        h.addFilter(at)
        lg = logging.getLogger("livekit.agents")
        lg.handlers = [h]
        lg.setLevel(logging.INFO)
        lg.propagate = False
        for when, m in records:
            at.at = when
            log_metrics(m)
            if twice:
                log_metrics(m)  # the dev console prints a job's records twice
        return buf.getvalue()

    dev = ColoredFormatter(
        "%(asctime)s - %(esc_levelcolor)s%(levelname)-4s%(esc_reset)s %(name)s - %(message)s %(esc_gray)s%(extra)s"
    )
    dev.converter = lambda secs: datetime.fromtimestamp(secs, tz=UTC).timetuple()
    (C / "livekit-log-metrics-console").mkdir(exist_ok=True)
    (C / "livekit-log-metrics-console" / "agent-dev.log").write_text(write(dev, None, twice=True))
    # `python agent.py console`: the same records through the console formatter, whole seconds (cli/log.py)
    console = ColoredFormatter(
        "\r%(asctime)s %(esc_levelcolor)s%(levelname)-4s%(esc_reset)s %(name)s %(message)s %(esc_gray)s%(extra)s",
        datefmt="%H:%M:%S",
    )
    console.converter = dev.converter
    (C / "livekit-console-tool-turn").mkdir(exist_ok=True)
    (C / "livekit-console-tool-turn" / "agent-console.log").write_text(write(console, None))
    js = write(JsonFormatter(), None)
    (C / "livekit-docker-json-wrapped").mkdir(exist_ok=True)
    js = js.replace(str(Path(logging.__file__).parents[1]) + "/", "/usr/lib/python3.11/")
    import livekit.agents as lka

    js = js.replace(str(Path(lka.__file__).parents[2]), "/app/.venv/lib/python3.11/site-packages")
    lines = [
        json.dumps({"log": x + "\n", "stream": "stderr", "time": json.loads(x)["timestamp"].replace("+00:00", "Z")})
        for x in js.splitlines()
    ]
    (C / "livekit-docker-json-wrapped" / "container.log").write_text("\n".join(lines) + "\n")

    # LiveKit 1.8's new metrics types beside a turn (model_dump lines)
    t = T0 + 100
    extra = [
        metrics.EOTInferenceMetrics(
            timestamp=t + 0.40,
            total_duration=0.13,
            detection_delay=0.11,
            prediction_duration=0.05,
            metadata=Metadata(model_name="multilingual", model_provider="livekit"),
        ),
        metrics.DecisionMetrics(
            label="openai", request_id="d1", timestamp=t + 0.45, duration=0.09, input_tokens=120, output_tokens=3
        ),
        metrics.EOUMetrics(
            timestamp=t + 0.50,
            end_of_utterance_delay=0.50,
            transcription_delay=0.30,
            on_user_turn_completed_delay=0.0,
            speech_id="speech_x1",
        ),
        metrics.LLMMetrics(
            label="openai",
            request_id="r1",
            timestamp=t + 1.40,
            duration=0.9,
            ttft=0.36,
            cancelled=False,
            completion_tokens=30,
            prompt_tokens=800,
            prompt_cached_tokens=0,
            total_tokens=830,
            tokens_per_second=33.3,
            speech_id="speech_x1",
        ),
        metrics.TTSMetrics(
            label="cartesia",
            request_id="a1",
            timestamp=t + 1.75,
            ttfb=0.17,
            duration=0.89,
            audio_duration=2.4,
            cancelled=False,
            characters_count=48,
            streamed=True,
            speech_id="speech_x1",
        ),
        metrics.InterruptionMetrics(
            timestamp=t + 2.9,
            total_duration=0.21,
            prediction_duration=0.06,
            detection_delay=0.34,
            num_interruptions=1,
            num_backchannels=0,
            num_requests=4,
        ),
        metrics.EOTInferenceMetrics(
            timestamp=t + 3.62, total_duration=0.16, detection_delay=0.14, prediction_duration=0.06
        ),
        metrics.EOUMetrics(
            timestamp=t + 3.70,
            end_of_utterance_delay=0.62,
            transcription_delay=0.33,
            on_user_turn_completed_delay=0.0,
            speech_id="speech_x2",
        ),
        metrics.LLMMetrics(
            label="openai",
            request_id="r2",
            timestamp=t + 4.60,
            duration=0.9,
            ttft=0.41,
            cancelled=False,
            completion_tokens=30,
            prompt_tokens=800,
            prompt_cached_tokens=0,
            total_tokens=830,
            tokens_per_second=33.3,
            speech_id="speech_x2",
        ),
        metrics.TTSMetrics(
            label="cartesia",
            request_id="a2",
            timestamp=t + 5.0,
            ttfb=0.19,
            duration=0.89,
            audio_duration=2.4,
            cancelled=False,
            characters_count=48,
            streamed=True,
            speech_id="speech_x2",
        ),
    ]
    (C / "livekit-1.8-metrics-types").mkdir(exist_ok=True)
    (C / "livekit-1.8-metrics-types" / "metrics.jsonl").write_text(
        "".join(json.dumps(m.model_dump()) + "\n" for m in extra)
    )


def avatar():
    """A LiveKit agent with an avatar worker in its audio output: livekit-agents' own AvatarMetrics (the join,
    then one per reply with its playback_latency) beside two turns, as model_dump() lines and through
    log_metrics() and the production JsonFormatter."""
    from livekit.agents import metrics
    from livekit.agents.cli.log import JsonFormatter
    from livekit.agents.metrics import log_metrics
    from livekit.agents.metrics.base import AvatarMetrics, Metadata

    t = 1796144400.0  # 2026-12-01 17:00:00 UTC
    tavus = Metadata(model_provider="tavus")
    records = [
        AvatarMetrics(timestamp=t - 8.0, session_started_time=t - 10.25, avatar_joined_time=t - 8.0, metadata=tavus)
    ]
    replies = ((t, 0.50, 0.38, 0.17, 0.185), (t + 20, 0.62, 0.44, 0.21, 0.24))
    for i, (start, eou, ttft, ttfb, playback) in enumerate(replies):
        sid = f"speech_av{i + 1}"
        commit = start + eou
        records += [
            metrics.EOUMetrics(
                timestamp=commit,
                end_of_utterance_delay=eou,
                transcription_delay=0.3,
                on_user_turn_completed_delay=0.0,
                speech_id=sid,
            ),
            metrics.LLMMetrics(
                label="openai",
                request_id=f"r{i}",
                timestamp=commit + 0.95,
                duration=0.95,
                ttft=ttft,
                cancelled=False,
                completion_tokens=32,
                prompt_tokens=900,
                prompt_cached_tokens=0,
                total_tokens=932,
                tokens_per_second=32 / 0.95,
                speech_id=sid,
            ),
            metrics.TTSMetrics(
                label="cartesia",
                request_id=f"a{i}",
                timestamp=commit + ttft + 0.9,
                ttfb=ttfb,
                duration=0.9,
                audio_duration=2.6,
                cancelled=False,
                characters_count=52,
                streamed=True,
                speech_id=sid,
            ),
            # the assistant's message is added when its speech ends: AvatarMetrics' timestamp is that event's
            AvatarMetrics(timestamp=commit + ttft + ttfb + playback + 2.6, playback_latency=playback, metadata=tavus),
        ]
    out = C / "livekit-avatar-metrics"
    out.mkdir(exist_ok=True)
    (out / "metrics.jsonl").write_text("".join(json.dumps(m.model_dump()) + "\n" for m in records))

    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(JsonFormatter())
    lg = logging.getLogger("livekit.agents")
    lg.handlers, lg.propagate = [handler], False
    lg.setLevel(logging.INFO)

    def stamp(at):
        def stamped(record):
            record.created, record.msecs, record.process = at, (at % 1) * 1000, 4242
            return True

        return stamped

    for m in records:
        handler.filters = [stamp(m.timestamp)]
        log_metrics(m)
    js = buf.getvalue().replace(str(Path(logging.__file__).parents[1]) + "/", "/usr/lib/python3.11/")
    import livekit.agents as lka

    js = js.replace(str(Path(lka.__file__).parents[2]), "/app/.venv/lib/python3.11/site-packages")
    out = C / "livekit-avatar-log-metrics"
    out.mkdir(exist_ok=True)
    (out / "agent.jsonl").write_text(js)


def pipecat():
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)
    from loguru import logger
    from pipecat.observers.user_bot_latency_observer import (
        LatencyBreakdown,
        LatencyContribution,
        LatencyOwnerKind,
        MeasuredFrom,
    )

    def c(key, label, owner, kind, start, secs):
        return LatencyContribution(
            key=key, label=label, owner=owner, owner_kind=kind, start_time=start, duration_secs=secs
        )

    S, SET, P = LatencyOwnerKind.SERVICE, LatencyOwnerKind.SETTING, LatencyOwnerKind.PIPELINE
    t = 1796140800.0
    turns = [
        [
            c("endpointing_wait", "endpointing wait", "config: VAD stop_secs", SET, t, 0.2),
            c("transcription", "transcription", "DeepgramSTTService#0", S, t + 0.2, 0.125),
            c("turn_detection", "turn detection", "config: user turn strategies", SET, t + 0.325, 0.18),
            c("llm_inference", "LLM inference", "OpenAILLMService#0", S, t + 0.505, 0.336),
            c("speech_synthesis", "speech synthesis", "CartesiaTTSService#0", S, t + 0.841, 0.359),
            c("pipeline", "pipeline", "pipecat", P, t, 0.012),
        ],
        [
            c("endpointing_wait", "endpointing wait", "config: VAD stop_secs", SET, t, 0.2),
            c("transcription", "transcription", "DeepgramSTTService#0", S, t + 0.2, 0.11),
            c("turn_detection", "turn detection", "config: user turn strategies", SET, t + 0.31, 0.15),
            c("llm_inference", "LLM inference", "OpenAILLMService#0", S, t + 0.46, 0.41),
            c("llm_tool_call", "LLM tool call", "OpenAILLMService#0", S, t + 0.87, 0.06),
            c("function_handler", "function handler", "get_order_status", S, t + 0.93, 1.24),
            c("llm_inference", "LLM inference", "OpenAILLMService#0", S, t + 2.21, 0.38),
            c("sentence_aggregation", "sentence aggregation", "config: text_aggregation_mode", SET, t + 2.59, 0.09),
            c("speech_synthesis", "speech synthesis", "CartesiaTTSService#0", S, t + 2.68, 0.29),
            c("output_transport", "output transport", "DailyOutputTransport#0", S, t + 2.97, 0.04),
            c("pipeline", "pipeline", "pipecat", P, t, 0.021),
        ],
    ]
    out = C / "pipecat-1.14-latency-breakdown"
    out.mkdir(exist_ok=True)
    path = out / "bot.log"
    path.unlink(missing_ok=True)
    clock = [datetime(2026, 12, 1, 10, 0, 5, 120000)]
    sink = logger.add(str(path), level="INFO")
    for i, contribs in enumerate(turns):
        b = LatencyBreakdown(
            contributions=contribs,
            measured_from=MeasuredFrom.USER_SILENCE,
            total_secs=sum(x.duration_secs for x in contribs),
        )
        clock[0] = clock[0].replace(second=5 + 20 * i)
        lg = logger.patch(
            lambda r: r.update(
                time=r["time"].replace(
                    year=2026, month=12, day=1, hour=10, minute=0, second=clock[0].second, microsecond=120000
                )
            )
        )
        for line in b.turn_contribution_lines():
            lg.info(line)
    logger.remove(sink)


if __name__ == "__main__":
    sys.path.insert(0, "tests")
    livekit()
    avatar()
    pipecat()
