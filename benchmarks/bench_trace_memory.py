"""Peak memory and time of reading a ~200 MB trace (issue 11: "reading a 200 MB trace keeps peak
memory under 500 MB"). Target: peak RSS below 500 MB for each line-based format.

Generates, in a temporary directory, a LiveKit metrics JSON-lines trace (the four-line turn of
``tests/data/traces/livekit-metrics.jsonl``: stt/eou/llm/tts, ~830 bytes a turn), a Pipecat debug
log (the six-line turn of ``tests/data/traces/pipecat.log``) and an OTLP JSON-lines span export (one
line a turn: LiveKit's agent_turn, llm_node and tts_node spans, as in
``tests/data/traces/otel-livekit-broken.jsonl``, ~1.3 KB), each about ``--mb`` MB; then runs
:func:`~voicebudget.traces.read_trace` and :func:`~voicebudget.traces.check_traces` on each in a fresh
subprocess and prints the child's peak RSS (``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``) and
wall time. For the OTLP file it also runs the whole-text reader (``read_otel(read_text(path))``, what
``read_trace`` did before OTLP JSON lines were streamed, and still does for a pretty-printed export).
The baseline of an empty interpreter that imported voicebudget is printed too.
Usage: ``python benchmarks/bench_trace_memory.py [--mb 200]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

_PIPECAT = (
    "{t0} | DEBUG    | pipecat.processors.audio.vad_processor:on_speech_stopped:78 - "
    "VADProcessor#0: User stopped speaking\n"
    "{t1} | DEBUG    | pipecat.processors.metrics.frame_processor_metrics:stop_ttfb_metrics:175 - "
    "DeepgramSTTService#0 TTFB: 0.289s\n"
    "{t2} | DEBUG    | pipecat.processors.metrics.frame_processor_metrics:stop_ttfb_metrics:175 - "
    "OpenAILLMService#0 TTFB: {llm:.3f}s\n"
    "{t3} | DEBUG    | pipecat.processors.metrics.frame_processor_metrics:stop_text_aggregation_metrics:385 - "
    "OpenAILLMService#0 text aggregation time: 0.19974925247644154\n"
    "{t4} | DEBUG    | pipecat.processors.metrics.frame_processor_metrics:stop_ttfb_metrics:175 - "
    "CartesiaTTSService#0 TTFB: 0.115s\n"
    "{t5} | DEBUG    | pipecat.processors.metrics.frame_processor_metrics:_check_ttfa:228 - "
    "CartesiaTTSService#0 TTFA: 0.137s (0.023s leading silence)\n"
)


def livekit_turn(i: int) -> str:
    s = f"speech_{i:08d}"
    t = 1764413800.0 + 17 * i
    rows = [
        {
            "type": "stt_metrics",
            "label": "livekit.plugins.deepgram.stt.STT",
            "request_id": f"stt_{s}",
            "timestamp": t + 0.482,
            "duration": 0.0,
            "audio_duration": 2.684,
            "input_tokens": 0,
            "output_tokens": 0,
            "streamed": True,
            "acquire_time": 0.0,
            "connection_reused": True,
            "metadata": {"model_name": "nova-3", "model_provider": "deepgram"},
        },
        {
            "type": "eou_metrics",
            "timestamp": t,
            "end_of_utterance_delay": 0.5 + i % 7 / 100,
            "transcription_delay": 0.48,
            "on_user_turn_completed_delay": 0.0005,
            "speech_id": s,
        },
        {
            "type": "llm_metrics",
            "label": "livekit.plugins.openai.llm.LLM",
            "request_id": f"req_{s}",
            "timestamp": t + 2.2,
            "duration": 3.0121,
            "ttft": 0.3 + i % 11 / 100,
            "cancelled": False,
            "completion_tokens": 46,
            "prompt_tokens": 800,
            "prompt_cached_tokens": 0,
            "cache_creation_tokens": 0,
            "total_tokens": 846,
            "tokens_per_second": 47.47,
            "speech_id": s,
            "metadata": {"model_name": "gpt-4.1-mini", "model_provider": "openai"},
        },
        {
            "type": "tts_metrics",
            "label": "livekit.plugins.cartesia.tts.TTS",
            "request_id": f"tts_{s}",
            "timestamp": t + 2.4,
            "ttfb": 0.15 + i % 5 / 100,
            "duration": 1.0665,
            "audio_duration": 2.041,
            "cancelled": False,
            "characters_count": 40,
            "streamed": True,
            "segment_id": "seg_0",
            "speech_id": s,
            "connection_reused": True,
            "acquire_time": 0.0,
            "metadata": {"model_name": "sonic-3", "model_provider": "cartesia"},
        },
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


def otlp_turn(i: int) -> str:
    trace, t0 = f"{i:032x}", 1_000_000_000_000 + 17_000_000_000 * i

    def span(sid: str, name: str, start_ms: int, attrs: dict[str, float | str], parent: str = "") -> dict[str, object]:
        values = [
            {"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"doubleValue": v}}
            for k, v in attrs.items()
        ]
        out: dict[str, object] = {
            "traceId": trace,
            "spanId": f"{sid}{i:015x}",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(t0 + start_ms * 1_000_000),
            "endTimeUnixNano": str(t0 + (start_ms + 1000) * 1_000_000),
            "attributes": values,
            "status": {},
        }
        if parent:
            out["parentSpanId"] = f"{parent}{i:015x}"
        return out

    spans = [
        span(
            "a",
            "agent_turn",
            0,
            {
                "lk.speech_id": f"s{i}",
                "lk.e2e_latency": 1.2 + i % 7 / 100,
                "lk.end_of_turn_delay": 0.5,
                "lk.transcription_delay": 0.2,
            },
        ),
        span("b", "llm_node", 10, {"lk.response.ttft": 0.4 + i % 11 / 100}, "a"),
        span("c", "tts_node", 300, {"lk.response.ttfb": 0.2 + i % 5 / 100}, "a"),
    ]
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                "scopeSpans": [{"scope": {"name": "livekit-agents"}, "spans": spans}],
            }
        ]
    }
    return json.dumps(doc) + "\n"


def pipecat_turn(i: int) -> str:
    start = datetime(2025, 11, 29, tzinfo=UTC) + timedelta(seconds=17 * i)
    offsets = (0.2, 0.289, 1.24, 1.439, 1.554, 1.577)
    stamps = {
        f"t{k}": (start + timedelta(seconds=o)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] for k, o in enumerate(offsets)
    }
    return _PIPECAT.format(llm=0.3 + i % 11 / 100, **stamps)


def write(path: Path, turn: object, mb: float) -> int:
    target = int(mb * 1e6)
    size = n = 0
    with path.open("w", encoding="utf-8") as fh:
        while size < target:
            block = "".join(turn(n + k) for k in range(1000))  # type: ignore[operator]
            fh.write(block)
            size += len(block.encode())
            n += 1000
    return n


_CHILD = """
import sys, time
from voicebudget.traces import check_traces, read_trace
what, path = sys.argv[1], sys.argv[2]
t = time.perf_counter()
if what == "read_trace":
    read_trace(path)
elif what == "check_traces":
    check_traces([path])
elif what == "read_otel(whole)":
    from voicebudget._io import MAX_TRACE_BYTES, read_text
    from voicebudget.traces._otel import read_otel
    read_otel(read_text(path, max_bytes=MAX_TRACE_BYTES, errors="replace"), path)
print(time.perf_counter() - t)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=200.0, help="size of each generated trace, MB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "livekit metrics JSON lines": Path(tmp) / "metrics.jsonl",
            "pipecat log": Path(tmp) / "pipecat.log",
            "otlp JSON lines": Path(tmp) / "spans.jsonl",
        }
        makers = {"livekit metrics JSON lines": livekit_turn, "pipecat log": pipecat_turn, "otlp JSON lines": otlp_turn}
        turns = {name: write(path, makers[name], args.mb) for name, path in files.items()}
        base, _ = _isolated("import", str(files["pipecat log"]))
        print(f"baseline (python + import voicebudget): {base:.0f} MB")
        print(f"{'trace':28s} {'MB':>6s} {'turns':>8s} {'call':>16s} {'peak RSS MB':>12s} {'time s':>7s}")
        for name, path in files.items():
            for what in ("read_trace", "check_traces", *(("read_otel(whole)",) if "otlp" in name else ())):
                peak, secs = _isolated(what, str(path))
                print(
                    f"{name:28s} {path.stat().st_size / 1e6:6.0f} {turns[name]:8d} {what:>16s} {peak:12.0f} {secs:7.1f}"
                )


def _isolated(what: str, path: str) -> tuple[float, float]:
    """Peak RSS (MB) and time (s) of one call in a fresh interpreter, measured by a fresh parent
    (``RUSAGE_CHILDREN`` is the maximum over every child a process has waited for)."""
    code = (
        "import resource, subprocess, sys; r = subprocess.run([sys.executable, '-c', sys.argv[1], sys.argv[2], "
        "sys.argv[3]], check=True, capture_output=True, text=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.stdout.split()[-1])"
    )
    out = subprocess.run([sys.executable, "-c", code, _CHILD, what, path], check=True, capture_output=True, text=True)
    kb, secs = out.stdout.split()
    return int(kb) / 1024, float(secs)


if __name__ == "__main__":
    main()
