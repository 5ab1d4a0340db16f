"""Overhead of timing a stage with TurnRecorder, against two bare perf_counter_ns calls and an OTel span.

Run: ``.venv/bin/python benchmarks/bench_recorder.py`` (needs the ``bench`` extra for the
OpenTelemetry SDK). Everything is measured in one run on this machine; the figures are per stage,
net of the empty loop, best of several repeats (the least disturbed by other processes), with the
cases taking turns within each repeat.

Target (issue 6): <= 3 us per stage, and >= 3x cheaper than an OpenTelemetry SDK span. The span is
measured two ways: with no span processor (the cheapest an SDK span gets: built and ended, sent
nowhere) and with a SimpleSpanProcessor into an InMemorySpanExporter (kept, as the recorder keeps its
spans). The target is judged against the cheaper one.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable

import voicebudget

N = 20_000
REPEATS = 15
Loop = Callable[[int], None]


def best_ns_per_op(loops: dict[str, tuple[Loop, int]]) -> dict[str, float]:
    """Best of ``REPEATS`` runs of each ``loop(n)``, ns per iteration.

    The cases take turns within each repeat, so a burst of load from other processes hits them all.
    """
    best = dict.fromkeys(loops, float("inf"))
    for _ in range(REPEATS):
        for name, (loop, n) in loops.items():
            gc.collect()
            t0 = time.perf_counter_ns()
            loop(n)
            best[name] = min(best[name], (time.perf_counter_ns() - t0) / n)
    return best


def empty(n: int) -> None:
    for _ in range(n):
        pass


def bare_perf_counter(n: int) -> None:
    clock = time.perf_counter_ns
    for _ in range(n):
        clock()
        clock()


def recorder_sync(n: int) -> None:
    turn = voicebudget.TurnRecorder().turn()
    for _ in range(n):
        with turn.stage("llm"):
            pass


async def _recorder_async(n: int) -> None:
    turn = voicebudget.TurnRecorder().turn()
    for _ in range(n):
        async with turn.stage("llm"):
            pass


async def _async_empty(n: int) -> None:
    for _ in range(n):
        pass


def recorder_async(n: int) -> None:
    asyncio.run(_recorder_async(n))


def async_empty(n: int) -> None:
    asyncio.run(_async_empty(n))


def otel_loop(with_processor: bool) -> Loop:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    if with_processor:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")

    def loop(n: int) -> None:
        for _ in range(n):
            with tracer.start_as_current_span("llm"):
                pass
        exporter.clear()

    return loop


def report_cost_ms(turns: int = 1000) -> float:
    """ms to build a report from ``turns`` turns of 3 overlapping stages."""
    recorder = voicebudget.TurnRecorder()
    for i in range(turns):
        turn = recorder.turn()
        turn.mark("speech_end", at_ns=0)
        turn.add_stage("asr", start_ms=-400.0, end_ms=80.0 + i % 7)
        turn.add_stage("llm", start_ms=90.0, end_ms=900.0)
        turn.add_stage("tts", start_ms=400.0 + i % 50, end_ms=700.0)
        turn.mark("first_audio", at_ms=520.0 + i % 50)
        turn.end()
    t0 = time.perf_counter_ns()
    recorder.report()
    return (time.perf_counter_ns() - t0) / 1e6


def main() -> None:
    b = best_ns_per_op(
        {
            "empty": (empty, N),
            "async_empty": (async_empty, N),
            "bare": (bare_perf_counter, N),
            "sync": (recorder_sync, N),
            "async": (recorder_async, N),
            "otel_bare": (otel_loop(False), N // 5),
            "otel_kept": (otel_loop(True), N // 5),
        }
    )
    loop_ns = b["empty"]
    bare = b["bare"] - loop_ns
    sync = b["sync"] - loop_ns
    asyn = b["async"] - b["async_empty"]
    otel_bare = b["otel_bare"] - loop_ns
    otel_kept = b["otel_kept"] - loop_ns
    worst = max(sync, asyn)
    rows = [
        ("two bare perf_counter_ns calls", bare),
        ("TurnRecorder stage, with", sync),
        ("TurnRecorder stage, async with (asyncio)", asyn),
        ("OpenTelemetry SDK span, no processor", otel_bare),
        ("OpenTelemetry SDK span, in-memory exporter", otel_kept),
    ]
    print(f"per-stage cost, best of {REPEATS}, net of the empty loop ({loop_ns:.0f} ns)")
    for label, ns in rows:
        print(f"  {label:<44} {ns / 1000:7.3f} us")
    print(f"recorder (worst form) / bare clock calls:   {worst / bare:6.1f}x")
    print(f"OTel span (no processor) / recorder:        {otel_bare / worst:6.1f}x   (target >= 3x)")
    print(f"OTel span (in-memory) / recorder:           {otel_kept / worst:6.1f}x")
    print(f"recorder per stage <= 3 us:                 {'yes' if worst <= 3000 else 'NO'} ({worst / 1000:.3f} us)")
    print(f"report over 1000 turns x 3 overlapping stages: {report_cost_ms():.1f} ms")


if __name__ == "__main__":
    main()
