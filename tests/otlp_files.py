"""Finished OpenTelemetry spans as the collector's file exporter writes them: one OTLP JSON export per
line (the OTLP exporter's own protobuf encoding as JSON, ids in hex). Shared by the conformance tests."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans


def otlp_json_line(spans: Sequence[Any]) -> str:
    """``spans`` (SDK ``ReadableSpan``) as one OTLP JSON line."""
    doc = MessageToDict(encode_spans(spans))
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key, width in (("traceId", 32), ("spanId", 16), ("parentSpanId", 16)):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex().rjust(width, "0")
    return json.dumps(doc) + "\n"
