"""Reads OTLP/JSON lines (the OpenTelemetry file exporter's format) with the official
schema: each line is parsed by google.protobuf.json_format into
opentelemetry.proto.trace.v1.TracesData, unknown fields refused. OTLP/JSON writes
trace and span ids as hex where protobuf's JSON mapping has base64, so the ids are
turned into base64 first (the one documented difference), and their lengths checked.

Prints one JSON object: every span as the schema read it. Exits 1 on any fault.
Usage: check.py FILE   (or - for stdin)
"""

import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def rebase(value, where):
    """Hex ids to base64, recursively; a malformed id is a fault."""
    if isinstance(value, list):
        return [rebase(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if k in ID_FIELDS:
            raw = bytes.fromhex(v)
            if len(raw) != ID_FIELDS[k] or v != v.lower():
                raise ValueError(f"{where}: {k} {v!r} is not {ID_FIELDS[k]} bytes of lowercase hex")
            out[k] = base64.b64encode(raw).decode()
        else:
            out[k] = rebase(v, where)
    return out


def attrs(kvs):
    out = {}
    for kv in kvs:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


def parse_lines(text):
    """Every line as TracesData; raises on the first fault."""
    datas = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            raise ValueError(f"line {n} is empty")
        data = TracesData()
        json_format.Parse(json.dumps(rebase(json.loads(line), f"line {n}")), data)
        datas.append(data)
    return datas


def summary(datas):
    spans = []
    for data in datas:
        for rs in data.resource_spans:
            res = attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    spans.append({
                        "service": res.get("service.name"),
                        "resource": res,
                        "schema_url": ss.schema_url,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "name": s.name,
                        "kind": s.kind,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attributes": attrs(s.attributes),
                        "events": [e.name for e in s.events],
                        "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in s.links],
                        "status": s.status.code,
                    })
    return {"lines": len(datas), "spans": spans}


def main():
    path = sys.argv[1]
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    try:
        datas = parse_lines(text)
    except Exception as e:  # the schema's refusal, or a malformed id
        print(f"not OTLP/JSON TracesData: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(summary(datas)))


if __name__ == "__main__":
    main()
