"""Linear time of the LiveKit and OTel readers (issue 11: a 3 MB LiveKit chat history took 59 s, span
trees could loop). Each input is read at N and 10 N turns; the time ratio is ~10 when linear, ~100
when quadratic. Target: below 20.

Inputs: LiveKit metrics JSON lines (whole, and with half the llm lines cut before their speech_id,
placed by position), the same printed by pydantic (``str()``), a chat history document
(``to_dict()``), OTLP JSON lines with LiveKit's ``user_turn``/``agent_turn`` siblings and
``llm_node``/``tts_node`` children, and one span chain N deep under one turn.
Usage: ``python benchmarks/bench_traces_livekit.py [--turns N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path

from voicebudget.traces import read_trace


def metrics_lines(n: int) -> str:
    out = []
    for i in range(n):
        s = f"speech_{i}"
        out += [
            json.dumps(
                {
                    "type": "eou_metrics",
                    "end_of_utterance_delay": 0.5 + i % 7 / 100,
                    "transcription_delay": 0.2,
                    "speech_id": s,
                }
            ),
            json.dumps({"type": "llm_metrics", "request_id": f"r{i}", "ttft": 0.3 + i % 11 / 100, "speech_id": s}),
            json.dumps({"type": "tts_metrics", "request_id": f"t{i}", "ttfb": 0.1 + i % 5 / 100, "speech_id": s}),
        ]
    return "\n".join(out) + "\n"


def cut_lines(n: int) -> str:
    """Every second turn's llm_metrics line cut before its speech_id (placed by position)."""
    lines = metrics_lines(n).splitlines()
    return "\n".join(line[:40] if i % 6 == 4 else line for i, line in enumerate(lines)) + "\n"


def pydantic_lines(n: int) -> str:
    out = []
    for i in range(n):
        s = f"speech_{i}"
        out += [
            f"INFO metrics -> type='eou_metrics' timestamp=1.0 end_of_utterance_delay={0.5 + i % 7 / 100} "
            f"transcription_delay=0.2 speech_id='{s}' metadata=None",
            f"INFO metrics -> type='llm_metrics' request_id='r{i}' ttft={0.3 + i % 11 / 100} speech_id='{s}'",
            f"INFO metrics -> type='tts_metrics' request_id='t{i}' ttfb={0.1 + i % 5 / 100} speech_id='{s}'",
        ]
    return "\n".join(out) + "\n"


def history(n: int) -> str:
    items = []
    for i in range(n):
        ttft, ttfb = 0.3 + i % 11 / 100, 0.1 + i % 5 / 100
        items += [
            {
                "id": f"u{i}",
                "type": "message",
                "role": "user",
                "content": ["a question of some words"],
                "metrics": {"stopped_speaking_at": 10.0 * i, "end_of_turn_delay": 0.5},
            },
            {
                "id": f"a{i}",
                "type": "message",
                "role": "assistant",
                "content": ["an answer"],
                "metrics": {
                    "started_speaking_at": 10.0 * i + 1.0 + ttft + ttfb,
                    "llm_node_ttft": ttft,
                    "tts_node_ttfb": ttfb,
                    "e2e_latency": 1.0 + ttft + ttfb,
                },
            },
        ]
    return json.dumps({"items": items}, indent=1)


def _attr(key: str, value: float | str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value} if isinstance(value, str) else {"doubleValue": value}}


def otel_lines(n: int) -> str:
    out = []
    for i in range(n):
        t0 = 10**18 + i * 10**10
        spans = [
            {
                "traceId": "t",
                "spanId": f"u{i:015x}",
                "parentSpanId": "r",
                "name": "user_turn",
                "startTimeUnixNano": str(t0),
                "attributes": [_attr("lk.end_of_turn_delay", 0.5)],
            },
            {
                "traceId": "t",
                "spanId": f"a{i:015x}",
                "parentSpanId": "r",
                "name": "agent_turn",
                "startTimeUnixNano": str(t0 + 10**9),
                "attributes": [_attr("lk.e2e_latency", 1.5), _attr("lk.speech_id", f"s{i}")],
            },
            {
                "traceId": "t",
                "spanId": f"l{i:015x}",
                "parentSpanId": f"a{i:015x}",
                "name": "llm_node",
                "startTimeUnixNano": str(t0 + 10**9),
                "attributes": [_attr("lk.response.ttft", 0.3 + i % 11 / 100)],
            },
            {
                "traceId": "t",
                "spanId": f"x{i:015x}",
                "parentSpanId": f"a{i:015x}",
                "name": "tts_node",
                "startTimeUnixNano": str(t0 + 10**9),
                "attributes": [_attr("lk.response.ttfb", 0.1 + i % 5 / 100)],
            },
        ]
        out.append(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return "\n".join(out) + "\n"


def span_chain(n: int) -> str:
    spans = [{"name": "agent_turn", "traceId": "t", "spanId": "s0", "attributes": {"lk.e2e_latency": 1.0}}]
    spans += [{"name": "x", "traceId": "t", "spanId": f"s{i}", "parentSpanId": f"s{i - 1}"} for i in range(1, n)]
    spans.append({"name": "x", "traceId": "t", "spanId": "s0", "parentSpanId": f"s{n - 1}"})  # closes a loop
    return json.dumps(spans)


INPUTS: dict[str, tuple[Callable[[int], str], str]] = {
    "metrics JSON lines": (metrics_lines, "m.jsonl"),
    "metrics, half llm lines cut": (cut_lines, "m.jsonl"),
    "metrics pydantic str()": (pydantic_lines, "m.log"),
    "chat history document": (history, "h.json"),
    "OTLP JSON lines": (otel_lines, "s.jsonl"),
    "span chain with a loop": (span_chain, "c.json"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.turns
    print(f"{'input':28s} {f'{n} ms':>10s} {f'{10 * n} ms':>11s} {'MB':>6s} {'ratio':>6s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, file) in INPUTS.items():
            times, size = [], 0
            for k in (n, 10 * n):
                path = Path(tmp) / file
                path.write_text(make(k))
                size = path.stat().st_size
                times.append(min(timeit.repeat(lambda p=path: read_trace(p), repeat=args.repeat, number=1)))
            print(
                f"{name:28s} {times[0] * 1e3:10.1f} {times[1] * 1e3:11.1f} {size / 2**20:6.1f} "
                f"{times[1] / times[0]:6.1f}"
            )


if __name__ == "__main__":
    main()
