"""A real OTLP/HTTP receiver for the live export tests: POST /v1/traces bodies are
parsed with the official schema (opentelemetry.proto's ExportTraceServiceRequest,
google.protobuf.json_format, unknown fields refused; hex ids as check.py reads them),
answered 200 with an ExportTraceServiceResponse, and each request's spans appended to
OUT as one JSON line (check.py's summary). A body the schema refuses is answered 400
and written to OUT as {"refused": why}, so the test sees it.

Prints its port on stdout once it listens. Usage: receiver.py OUT
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import rebase, summary  # noqa: E402

from google.protobuf import json_format  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)

OUT = sys.argv[1]


def record(obj):
    with open(OUT, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj) + "\n")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        try:
            if self.headers.get("Content-Type", "").split(";")[0] != "application/json":
                raise ValueError(f"Content-Type {self.headers.get('Content-Type')!r}")
            req = ExportTraceServiceRequest()
            json_format.Parse(json.dumps(rebase(json.loads(body), "body")), req)
        except Exception as e:  # the schema's refusal
            record({"refused": str(e)})
            self.send_response(400)
            self.end_headers()
            return
        got = summary([req])
        got["headers"] = {k.lower(): v for k, v in self.headers.items()}
        record(got)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
