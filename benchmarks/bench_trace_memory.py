"""Peak memory and time of ``check`` on each line-based trace format (issue 22: "check on 200 MB of each
line-based format stays under 500 MB peak, and the time is linear in the size (1, 10, 100 MB)").

Generates, in a temporary directory, a LiveKit metrics JSON-lines trace (the four-line turn of
``tests/data/traces/livekit-metrics.jsonl``: stt/eou/llm/tts, ~1.4 KB a turn), a Pipecat debug log (the
six-line turn of ``tests/data/traces/pipecat.log``) and an OTLP JSON-lines span export (one line a turn:
LiveKit's agent_turn, llm_node and tts_node spans, as in ``tests/data/traces/otel-livekit-broken.jsonl``,
~1.3 KB), then runs :func:`~voicebudget.traces.check_traces` on each in a fresh interpreter, which reports
its CPU time; its peak RSS is the parent's ``RUSAGE_CHILDREN`` maximum (a fresh parent per call).

Targets, each printed with its verdict (exit status 1 when one is not met):

- **memory**: peak RSS of ``check`` on ``--mb`` MB (default 200) below 500 MB, for each format;
- **linear time**: CPU seconds per MB at the largest ``--series`` size (default 1, 10, 100 MB) at most
  1.5x that at the middle one (a reader quadratic in turns would be 10x); each size is timed ``--repeat``
  times (default 3) and the least kept: on a shared machine a single sub-second timing at 10 MB varied
  0.38 to 0.60 s, enough to read 1.68x on a linear reader.

The baseline of an interpreter that imported voicebudget is printed too, and the bytes each turn adds
above it. Usage: ``python benchmarks/bench_trace_memory.py [--mb 200] [--series 1,10,100] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _bench import checkout_env, compile_checkout, load, verdict

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
from voicebudget.traces import check_traces
what, path = sys.argv[1], sys.argv[2]
t = time.process_time()
if what == "check":
    check_traces([path])
print(time.process_time() - t)
"""

MEMORY_TARGET_MB = 500.0
LINEAR_TARGET = 1.5
FORMATS = {"livekit metrics JSON lines": livekit_turn, "pipecat log": pipecat_turn, "otlp JSON lines": otlp_turn}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=200.0, help="size of the trace the memory target is for, MB")
    parser.add_argument("--series", default="1,10,100", help="sizes for the time series, MB (comma-separated)")
    parser.add_argument("--formats", default=",".join(FORMATS), help="which formats (comma-separated)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per size of the series (the least is kept)")
    args = parser.parse_args()
    sizes = [float(x) for x in args.series.split(",") if x]
    chosen = {name: FORMATS[name] for name in args.formats.split(",")}
    met = True
    with tempfile.TemporaryDirectory() as tmp:
        print(compile_checkout())
        seed = Path(tmp) / "seed.log"
        write(seed, pipecat_turn, 0.01)
        base, _ = _isolated("import", str(seed))
        print(f"baseline (python + import voicebudget): {base:.0f} MB; {load()}")
        for name, maker in chosen.items():
            path = Path(tmp) / "trace"
            turns = write(path, maker, args.mb)
            peak, secs = _isolated("check", str(path))
            per_turn = (peak - base) * 2**20 / turns
            print(
                f"{name}: {path.stat().st_size / 1e6:.0f} MB, {turns:,} turns, check {secs:.1f} s CPU, "
                f"{per_turn:,.0f} bytes a turn above the baseline"
            )
            line = verdict(f"  peak RSS of check on {args.mb:g} MB", peak, MEMORY_TARGET_MB, unit=" MB")
            met &= peak <= MEMORY_TARGET_MB
            print(line)
            per_mb: list[float] = []
            for mb in sizes:
                write(path, maker, mb)
                times = sorted(_isolated("check", str(path))[1] for _ in range(args.repeat))
                secs = times[0]  # the least: another process's load only ever adds (cache, frequency)
                per_mb.append(secs / (path.stat().st_size / 1e6))
                spread = f" (of {args.repeat}: {times[0]:.2f}..{times[-1]:.2f} s)" if args.repeat > 1 else ""
                print(f"  {mb:g} MB: {secs:.2f} s CPU, {per_mb[-1] * 1000:.1f} ms/MB{spread}")
            if len(per_mb) >= 2:
                ratio = per_mb[-1] / per_mb[-2]
                met &= ratio <= LINEAR_TARGET
                print(verdict(f"  CPU per MB at {sizes[-1]:g} MB / at {sizes[-2]:g} MB", ratio, LINEAR_TARGET))
    print("all targets met" if met else "a target is NOT met")
    sys.exit(0 if met else 1)


def _isolated(what: str, path: str) -> tuple[float, float]:
    """Peak RSS (MB) and CPU time (s) of one call in a fresh interpreter, measured by a fresh parent
    (``RUSAGE_CHILDREN`` is the maximum over every child a process has waited for)."""
    code = (
        "import resource, subprocess, sys; r = subprocess.run([sys.executable, '-c', sys.argv[1], sys.argv[2], "
        "sys.argv[3]], check=True, capture_output=True, text=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.stdout.split()[-1])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, _CHILD, what, path], check=True, capture_output=True, text=True, env=checkout_env()
    )
    kb, secs = out.stdout.split()
    return int(kb) / 1024, float(secs)


if __name__ == "__main__":
    main()
