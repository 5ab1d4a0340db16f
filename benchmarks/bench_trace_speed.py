"""Throughput and memory of the line-based trace readers against their floors (issue 24, reader rows).

For each line-based format (the readers with ``read_lines``: Pipecat debug log, LiveKit metrics JSON
lines, OTLP JSON lines) a ~``--mb`` MB trace is generated with ``bench_trace_memory.py``'s turns (the
six-line Pipecat turn, the four-line LiveKit turn, one OTLP line a turn whose ``llm_node`` span also
carries the chat context, as LiveKit's does), then, in one process and in turns (best of ``--repeat``,
CPU time). The six-line Pipecat turn holds only the lines a turn needs; ``pipecat-session`` is a Pipecat
1.14 DEBUG log as a pipeline writes it, every line (:func:`pipecat_session_turn`: 23 lines a turn, 10 of
them read, as a pipecat-ai 1.14.0 pipeline run by ``tests/pipecat_matrix.py`` wrote them).

- ``read_trace(path)``, as MB/s (file bytes over CPU seconds). Target: >= 25 MB/s;
- its floor, and the reader's ratio to it. Target: <= 10x. The floor of a log is reading the file's
  lines and decoding each (``for raw in open(path, "rb"): raw.decode()``, what a streaming reader does
  before it looks at a line); of a JSON-lines format, ``json.loads`` of each line.

Memory (OTLP JSON lines, and the others alike): ``read_trace`` under ``tracemalloc`` in a fresh process;
the peak of Python allocations over what the returned table holds at the end (the turns kept). Memory
bounded by the turns kept, not by the file: a small multiple of the table, whatever a line carries
besides what a turn needs. Target: <= 3x (an OTLP turn's spans are held until the end of the file, where
its children and its ``user_turn`` sibling may be).

Usage: ``python benchmarks/bench_trace_speed.py [--mb 20] [--repeat 5] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _bench import checkout_env, cpu_seconds, interleaved_best, load, verdict
from bench_trace_memory import livekit_turn, otlp_turn, pipecat_turn, write

from voicebudget.traces import read_trace

MB_PER_S = 25.0
"""Every line-based reader reads at least this many MB (10^6 bytes) of trace per CPU second."""
FLOOR_RATIO = 10.0
"""... and takes at most this many times its floor."""
MEMORY_RATIO = 3.0
"""Peak Python allocations while reading over what the table keeps."""


def split_lines(path: Path) -> None:
    """The floor of a log: its lines, each decoded (a streaming reader decodes line by line, so that one
    bad byte costs one line and the size limit holds while reading)."""
    with path.open("rb") as fh:
        for raw in fh:
            raw.decode("utf-8", "replace")


def json_lines(path: Path) -> None:
    """The floor of a JSON-lines format: its lines, each parsed."""
    with path.open("rb") as fh:
        for raw in fh:
            json.loads(raw)


def otlp_turn_with_context(i: int) -> str:
    """``bench_trace_memory.otlp_turn`` with what LiveKit Agents puts on its ``llm_node`` span besides the
    TTFT: the chat context so far as JSON (``lk.pii.chat_ctx``, ``json.dumps(chat_ctx.to_dict(...))``) and
    the reply (``lk.pii.response.text``), livekit-agents 1.8.9 ``telemetry/trace_types.py`` and
    ``voice/generation.py`` (read 2026-12-02); here the last 6 exchanges, ~1.5 KB."""
    doc = json.loads(otlp_turn(i))
    history = [
        {"type": "message", "role": role, "content": [f"{role} words of exchange {k}, a sentence or two long"]}
        for k in range(max(0, i - 6), i + 1)
        for role in ("user", "assistant")
    ]
    extra = [
        {"key": "lk.pii.chat_ctx", "value": {"stringValue": json.dumps({"items": history})}},
        {"key": "lk.pii.response.text", "value": {"stringValue": f"the reply of turn {i}, a sentence or two long"}},
    ]
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        if span["name"] == "llm_node":
            span["attributes"] += extra
    return json.dumps(doc) + "\n"


_SESSION_HEAD = (
    (0, "pipecat.services.openai.base_llm:__init__:284", "OpenAILLMService#0: Using system instruction: {system}"),
    *(
        (3, "pipecat.processors.frame_processor:link:696", f"Linking {a} -> {b}")
        for a, b in (
            ("Pipeline#0::Source", "VADProcessor#0"),
            ("VADProcessor#0", "DeepgramSTTService#0"),
            ("DeepgramSTTService#0", "LLMUserAggregator#0"),
            ("LLMUserAggregator#0", "OpenAILLMService#0"),
            ("OpenAILLMService#0", "CartesiaTTSService#0"),
            ("CartesiaTTSService#0", "DailyOutputTransport#0"),
            ("DailyOutputTransport#0", "LLMAssistantAggregator#0"),
            ("LLMAssistantAggregator#0", "Pipeline#0::Sink"),
            ("PipelineWorker#0::Source", "Pipeline#0"),
            ("Pipeline#0", "PipelineWorker#0::Sink"),
        )
    ),
    (
        4,
        "pipecat.workers.runner:add_workers:230",
        "WorkerRunner 'runner-{session:08x}': added worker 'PipelineWorker#0'",
    ),
    (5, "pipecat.workers.runner:run:273", "WorkerRunner 'runner-{session:08x}': started running"),
    (
        5,
        "pipecat.workers.runner:_start_worker:459",
        "WorkerRunner 'runner-{session:08x}': starting worker 'PipelineWorker#0'",
    ),
    (
        5,
        "pipecat.audio.vad.vad_analyzer:set_params:157",
        "Setting VAD params to: confidence=0.7 start_secs=0.2 stop_secs=0.2 min_volume=0.6",
    ),
    (
        6,
        "pipecat.utils.tracing.turn_trace_observer:start_conversation_tracing:132",
        "Generated new conversation ID: {uuid}",
    ),
    (
        6,
        "pipecat.utils.tracing.turn_trace_observer:start_conversation_tracing:151",
        "Started tracing for Conversation {uuid}",
    ),
    (6, "pipecat.utils.tracing.turn_trace_observer:_handle_turn_started:213", "Started tracing for Turn 1"),
    (
        6,
        "pipecat.pipeline.worker:_wait_for_pipeline_start:1309",
        "PipelineWorker#0: Starting. Waiting for StartFrame#0 to reach the end of the pipeline...",
    ),
    (
        12,
        "pipecat.services.llm_service:_compose_system_instruction:846",
        "OpenAILLMService#0: System instruction composed: {system}",
    ),
    (13, "pipecat.registry.registry:register:132", "Worker 'PipelineWorker#0' ready (local)"),
    (
        13,
        "pipecat.workers.runner:_send_registry:511",
        "WorkerRunner 'runner-{session:08x}': broadcasting registry: ['PipelineWorker#0']",
    ),
    (13, "pipecat.workers.base_worker:_maybe_activate:1284", "Worker 'PipelineWorker#0': activated"),
    (
        14,
        "pipecat.pipeline.worker:_wait_for_pipeline_start:1326",
        "PipelineWorker#0: StartFrame#0 reached the end of the pipeline, pipeline is now ready.",
    ),
)
_UST = "pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy"
_AGG = "pipecat.processors.aggregators.llm_response_universal"
_METRICS = "pipecat.processors.metrics.frame_processor_metrics"
_SESSION_TURN = (
    (
        ("start", 0),
        "pipecat.processors.audio.vad_processor:on_speech_started:73",
        "VADProcessor#0: User started speaking",
    ),
    (
        ("start", 1),
        f"{_AGG}:_on_user_turn_started:1402",
        "LLMUserAggregator#0: User started speaking (strategy: VADUserTurnStartStrategy#0)",
    ),
    (
        ("start", 1),
        "pipecat.processors.frame_processor:broadcast_interruption:1041",
        "LLMUserAggregator#0: broadcasting interruption",
    ),
    (
        ("start", 4),
        f"{_UST}:process_frame:163",
        "SpeechTimeoutUserTurnStopStrategy#0 VADUserStartedSpeakingFrame received",
    ),
    (("start", 5), "pipecat.utils.tracing.turn_trace_observer:_handle_turn_ended:233", "Ended tracing for Turn {k}"),
    (
        ("start", 5),
        "pipecat.utils.tracing.turn_trace_observer:_handle_turn_started:213",
        "Started tracing for Turn {k1}",
    ),
    (
        ("stop", 0),
        "pipecat.processors.audio.vad_processor:on_speech_stopped:81",
        "VADProcessor#0: User stopped speaking",
    ),
    (
        ("stop", 1),
        f"{_UST}:process_frame:166",
        "SpeechTimeoutUserTurnStopStrategy#0 VADUserStoppedSpeakingFrame received",
    ),
    (
        ("llm", -1),
        f"{_AGG}:_on_user_turn_inference_triggered:1449",
        "LLMUserAggregator#0: User turn inference triggered (strategy: SpeechTimeoutUserTurnStopStrategy#0)",
    ),
    (
        ("llm", -1),
        f"{_AGG}:_on_user_turn_stopped:1497",
        "LLMUserAggregator#0: User stopped speaking (strategy: SpeechTimeoutUserTurnStopStrategy#0)",
    ),
    (
        ("llm", 0),
        "pipecat.services.openai.base_llm:get_chat_completions:356",
        "OpenAILLMService#0: Generating LLM response {context}",
    ),
    (("ttfb", 0), f"{_METRICS}:stop_ttfb_metrics:175", "OpenAILLMService#0 TTFB: {ttfb:.3f}s"),
    (("ttfb", 1), f"{_METRICS}:stop_ttfat_metrics:269", "OpenAILLMService#0 TTFAT: {ttfat:.3f}s (0.001s thinking)"),
    (("done", 0), f"{_METRICS}:stop_processing_metrics:308", "OpenAILLMService#0 processing time: {llm_time:.3f}s"),
    (
        ("done", 0),
        f"{_METRICS}:stop_text_aggregation_metrics:387",
        "CartesiaTTSService#0 text aggregation time: {agg!r}",
    ),
    (
        ("done", 1),
        "pipecat.services.tts_service:_synthesize_text:1690",
        "CartesiaTTSService#0: Generating TTS [{reply}]",
    ),
    (("tts", 0), f"{_METRICS}:stop_processing_metrics:308", "CartesiaTTSService#0 processing time: {tts:.3f}s"),
    (("tts", 0), f"{_METRICS}:stop_ttfb_metrics:175", "CartesiaTTSService#0 TTFB: {tts:.3f}s"),
    (("tts", 1), "pipecat.transports.base_output:_bot_started_speaking:751", "Bot started speaking"),
    (
        ("tts", 2),
        "pipecat.services.tts_service:_finish_tts_context:1392",
        "CartesiaTTSService#0 cleaning up TTS context {uuid}",
    ),
    (
        ("tts", 3),
        "pipecat.utils.tracing.turn_trace_observer:_handle_latency_measured:103",
        "Turn {k1} user-bot latency: {total:.3f}s",
    ),
    (
        ("tts", 2027),
        "pipecat.transports.base_output:_handle_frame:922",
        "Bot stopped speaking based on TTSStoppedFrame",
    ),
    (("tts", 2028), "pipecat.transports.base_output:_bot_stopped_speaking:856", "Bot stopped speaking"),
)
"""A turn's lines: (the moment it is logged at: an anchor of :func:`pipecat_session_turn` and ms after it,
where, message)."""
_SESSION_TAIL = (
    (
        900,
        "pipecat.pipeline.worker:_wait_for_pipeline_end:1346",
        "PipelineWorker#0: Closing. Waiting for EndFrame#0(reason: None) to reach the end of the pipeline...",
    ),
    (900, "pipecat.utils.tracing.turn_trace_observer:_handle_turn_ended:233", "Ended tracing for Turn {k1}"),
    (
        904,
        "pipecat.pipeline.worker:_wait_for_pipeline_end:1355",
        "PipelineWorker#0: EndFrame#0(reason: None) reached the end of the pipeline, pipeline is closing.",
    ),
    (
        904,
        "pipecat.utils.base_object:cleanup:179",
        "PipelineWorker#0: waiting on event handlers to finish ['on_pipeline_finished']...",
    ),
    (
        905,
        "pipecat.utils.tracing.turn_trace_observer:end_conversation_tracing:179",
        "Ended tracing for Conversation {uuid}",
    ),
    (905, "pipecat.pipeline.worker:run:909", "Pipeline worker PipelineWorker#0 is finishing..."),
    (909, "pipecat.pipeline.worker:run:914", "Pipeline worker PipelineWorker#0 has finished"),
    (909, "pipecat.workers.runner:run:316", "WorkerRunner 'runner-{session:08x}': finished running"),
)
SESSION_TURNS = 8
"""Turns of one conversation in :func:`pipecat_session_turn`: its LLM context line grows with them."""


def pipecat_session_turn(i: int) -> str:
    """Turn ``i`` of a Pipecat 1.14 DEBUG log as a pipeline writes it, every line it logs (not only those a
    turn needs: 10 of its 23 are read): the lines, their order and their gaps (ms) are those of a pipecat-ai
    1.14.0 pipeline run by ``tests/pipecat_matrix.py`` (``VADProcessor``, the default speech-timeout stop
    strategy, ``OpenAILLMService``, turn tracing on; its log read 2026-12-02), with Deepgram, Cartesia and
    Daily's processor names for the harness's scripted ones and without the harness's own lines. A
    conversation is :data:`SESSION_TURNS` turns between the pipeline's start and end lines, and the LLM's
    context line (``Generating LLM response [...]``) holds the conversation so far, as Pipecat prints it."""
    session, k = divmod(i, SESSION_TURNS)
    start = datetime(2025, 11, 29, tzinfo=UTC) + timedelta(seconds=5 * i + 6 * session)
    uuid = f"{i:08x}-8e98-4e67-8234-d31a29318555"
    system = "You are a helpful assistant for a restaurant: answer in one or two short sentences."
    turns = [
        (f"what time do you open on day {j} of the week", f"We open at {8 + j % 3} am on day {j}.")
        for j in range(k + 1)
    ]
    history = [m for q, r in turns[:-1] for m in ({"role": "user", "content": q}, {"role": "assistant", "content": r})]
    context = repr([*history, {"role": "user", "content": turns[-1][0]}])
    ttfb, llm_time, tts = 200 + i * 37 % 500, 230 + i * 37 % 500 + i * 41 % 200, 80 + i * 53 % 300  # ms
    # (as varied as a real log's values: a metrics line repeats rarely)
    values = {
        "session": session,
        "uuid": uuid,
        "system": system,
        "k": k,
        "k1": k + 1,
        "context": context,
        "reply": turns[-1][1],
        "ttfb": ttfb / 1000,
        "ttfat": (ttfb + 1) / 1000,
        "llm_time": llm_time / 1000,
        "tts": tts / 1000,
        "agg": 0.016682863235473633 + i * 61 % 997 / 100_000,
        "total": (324 + 200 + ttfb + (llm_time - ttfb) + 1 + tts) / 1000,
    }
    shift = 500 if k == 0 else 0  # (the pipeline's start lines first)
    at = {"start": shift, "stop": shift + 660, "llm": shift + 784}
    at |= {"ttfb": at["llm"] + ttfb, "done": at["llm"] + llm_time}
    at["tts"] = at["done"] + 1 + tts
    lines = [
        *(_SESSION_HEAD if k == 0 else ()),
        *((at[a] + d, w, m) for (a, d), w, m in _SESSION_TURN if k or "Ended tracing" not in m),
        *((at["tts"] + 2028 + t, w, m) for t, w, m in (_SESSION_TAIL if k == SESSION_TURNS - 1 else ())),
    ]
    return "".join(
        f"{(start + timedelta(milliseconds=t)).strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]} | "
        f"{'DEBUG':<8} | {where} - {msg.format(**values)}\n"
        for t, where, msg in lines
    )


FORMATS: dict[str, tuple[Callable[[int], str], str, Callable[[Path], None], str]] = {
    "pipecat": (pipecat_turn, "pipecat.log", split_lines, "lines decoded"),
    "pipecat-session": (pipecat_session_turn, "pipecat-session.log", split_lines, "lines decoded"),
    "livekit": (livekit_turn, "metrics.jsonl", json_lines, "json.loads per line"),
    "otel": (otlp_turn_with_context, "spans.jsonl", json_lines, "json.loads per line"),
}
"""Format name -> (one turn's text, file name, floor, floor's description)."""

_MEMORY_CHILD = """
import gc, sys, tracemalloc
from voicebudget.traces import read_trace
import voicebudget.traces._read  # the readers' modules and their patterns load before tracing starts
gc.collect()
tracemalloc.start()
table = read_trace(sys.argv[1])
gc.collect()
kept, peak = tracemalloc.get_traced_memory()
print(kept, peak, len(table.turns))
"""


def memory(path: Path) -> tuple[int, int, int]:
    """Bytes the table keeps, peak bytes while reading, turns: ``read_trace`` in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, str(path)], check=True, capture_output=True, text=True, env=checkout_env()
    )
    kept, peak, turns = out.stdout.split()
    return int(kept), int(peak), int(turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=20.0, help="size of each generated trace, MB")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="only the formats whose name contains this")
    args = parser.parse_args()
    met = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (turn, file, floor, floor_name) in FORMATS.items():
            if args.only not in name:
                continue
            path = Path(tmp) / file
            write(path, turn, args.mb)
            size = path.stat().st_size
            t = interleaved_best(
                args.repeat,
                {
                    "reader": lambda p=path: cpu_seconds(lambda: read_trace(p)),
                    "floor": lambda p=path, f=floor: cpu_seconds(lambda: f(p)),
                },
            )
            kept, peak, turns = memory(path)
            rate = size / 1e6 / t["reader"]
            lines = [
                verdict(f"{name}: read_trace {rate:6.1f} MB/s", rate, MB_PER_S, at_least=True, unit=" MB/s"),
                verdict(
                    f"{name}: read_trace {t['reader'] * 1e3:.0f} ms vs {floor_name} {t['floor'] * 1e3:.0f} ms",
                    t["reader"] / t["floor"],
                    FLOOR_RATIO,
                ),
                verdict(
                    f"{name}: peak {peak / 2**20:.1f} MiB of Python allocations while reading {size / 1e6:.1f} MB, "
                    f"{kept / 2**20:.1f} MiB kept ({turns:,} turns, {kept / max(turns, 1):.0f} B/turn)",
                    peak / max(kept, 1),
                    MEMORY_RATIO,
                ),
            ]
            for line in lines:
                print(line)
                met += "NOT met" not in line
                total += 1
    print(f"{met} of {total} targets met (CPU time, best of {args.repeat}; {load()})")


if __name__ == "__main__":
    main()
