"""hello-py: an example provider of mcp-http-gateway's gRPC Provider contract, in Python.

It behaves exactly like the Rust example (examples/hello-provider): the same tools, resource,
prompt, events, health and log lines. It serves `mcpgateway.provider.v1.Provider` and the
standard `grpc.health.v1.Health` on one port and prints `listening on HOST:PORT` as its first
stdout line, so that a script or test that asked for port 0 learns the port.

The Provider stubs are generated from proto/ by examples/hello-py/install.sh into
.deps/hello-py/stubs (set HELLO_PY_STUBS to use another folder). Run it with that venv:

    examples/hello-py/install.sh
    .deps/hello-py/bin/python examples/hello-py/hello_py.py --listen 127.0.0.1:50052
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import queue
import signal
import sys
import threading
import time
import uuid
from concurrent import futures
from pathlib import Path
from typing import Any, Callable, Iterator

import grpc
import jsonschema
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

sys.path.insert(
    0,
    os.environ.get("HELLO_PY_STUBS")
    or str(Path(__file__).resolve().parents[2] / ".deps" / "hello-py" / "stubs"),
)
from mcpgateway.provider.v1 import provider_pb2, provider_pb2_grpc  # noqa: E402

SERVICE_NAME = "mcpgateway.provider.v1.Provider"
VERSION = "0.1.0"

# ---------------------------------------------------------------------------------------------
# What hello offers: the part a provider team rewrites first.
# ---------------------------------------------------------------------------------------------

GREETING_URI = "hello://greeting"
GREETING_TEMPLATE = "hello://greeting/{name}"
PLAN_PROMPT = "hello-plan"
PLAN_TEMPLATE = "Make a plan to reach this goal: {{goal}}. Use {{steps}} steps."
DEFAULT_STEPS = 3
MAX_SLOW_MS = 60_000

NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}

TOOLS: dict[str, dict[str, Any]] = {
    "echo.v1": {
        "description": "Returns the message it is given, with the name of the provider that answered.",
        "input": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The text to echo."}},
            "required": ["message"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {"message": {"type": "string"}, "provider": {"type": "string"}},
            "required": ["message", "provider"],
        },
    },
    "fail.v1": {
        "description": "Always fails (status INTERNAL): for testing how failures are reported.",
        "input": NO_ARGUMENTS,
        "output": None,
    },
    "slow.v1": {
        "description": "Sleeps `ms` milliseconds, then answers; stops when the call's deadline passes.",
        "input": {
            "type": "object",
            "properties": {"ms": {"type": "integer", "minimum": 0, "maximum": MAX_SLOW_MS}},
            "required": ["ms"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {"slept_ms": {"type": "integer"}},
            "required": ["slept_ms"],
        },
    },
    "bad_output.v1": {
        "description": "Returns a result that violates its own output schema: for testing output validation.",
        "input": NO_ARGUMENTS,
        "output": {
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        },
    },
}

PLAN_ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "minLength": 1, "description": "What the plan is for."},
        "steps": {
            "type": "integer",
            "minimum": 1,
            "maximum": 10,
            "description": "How many steps (default 3).",
        },
    },
    "required": ["goal"],
    "additionalProperties": False,
}

# The schemas are ours and fixed: one that does not compile is a bug in this file.
VALIDATORS = {
    name: jsonschema.Draft202012Validator(tool["input"]) for name, tool in TOOLS.items()
}
PLAN_VALIDATOR = jsonschema.Draft202012Validator(PLAN_ARGS_SCHEMA)
for _schema in [t["input"] for t in TOOLS.values()] + [PLAN_ARGS_SCHEMA]:
    jsonschema.Draft202012Validator.check_schema(_schema)


class InvalidArguments(Exception):
    """Arguments that are not JSON or violate a schema: the caller gets INVALID_ARGUMENT."""


def parse_arguments(text: str) -> Any:
    """Arguments travel as JSON text; an empty text means no arguments, i.e. `{}`."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError as e:
        raise InvalidArguments(f"the arguments are not JSON: {e}") from None


def check(validator: jsonschema.Draft202012Validator, instance: Any) -> None:
    """Raises InvalidArguments naming the first violation."""
    error = next(iter(validator.iter_errors(instance)), None)
    if error is not None:
        path = "".join(f"/{p}" for p in error.absolute_path) or "/"
        raise InvalidArguments(f"invalid arguments at {path}: {error.message}")


def read_greeting(uri: str, provider: str) -> str | None:
    """The text of a resource, or None when the URI names none of ours."""
    if uri == GREETING_URI:
        return f"Hello from {provider}!"
    prefix = "hello://greeting/"
    if uri.startswith(prefix):
        name = uri[len(prefix):]
        if name and "/" not in name:
            return f"Hello, {name}! (from {provider})"
    return None


def render_plan(arguments: dict[str, Any]) -> str:
    """Renders `hello-plan`'s template with checked arguments."""
    return PLAN_TEMPLATE.replace("{{goal}}", arguments["goal"]).replace(
        "{{steps}}", str(arguments.get("steps", DEFAULT_STEPS))
    )


def bad_output() -> dict[str, Any]:
    """What `bad_output.v1` returns: `count` should be an integer."""
    return {"count": "not a number"}


# ---------------------------------------------------------------------------------------------
# Events (CloudEvents 1.0, structured JSON mode) and the log.
# ---------------------------------------------------------------------------------------------

TOOL_EXECUTED = "provider.tool.executed"
METRIC_REPORTED = "provider.metric.reported"


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )


class Events:
    """Fans each event out to every open StreamEvents call; one nobody listens to is dropped."""

    def __init__(self, provider: str) -> None:
        self.source = f"/providers/{provider}"
        self._lock = threading.Lock()
        self._listeners: list[queue.Queue[tuple[str, str]]] = []

    def subscribe(self) -> queue.Queue[tuple[str, str]]:
        listener: queue.Queue[tuple[str, str]] = queue.Queue(maxsize=256)
        with self._lock:
            self._listeners.append(listener)
        return listener

    def unsubscribe(self, listener: queue.Queue[tuple[str, str]]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        event = {
            "specversion": "1.0",
            "id": str(uuid.uuid4()),
            "source": self.source,
            "type": kind,
            "time": now_rfc3339(),
            "datacontenttype": "application/json",
            "data": data,
        }
        text = json.dumps(event)
        with self._lock:
            for listener in self._listeners:
                try:
                    listener.put_nowait((kind, text))
                except queue.Full:
                    pass  # a listener that far behind skips events


class Log:
    """One JSON line per request, with the caller's correlation id and traceparent."""

    def __init__(self, provider: str, path: str | None) -> None:
        self.provider = provider
        self._out = open(path, "a", encoding="utf-8") if path else sys.stderr
        self._lock = threading.Lock()

    def line(self, message: str, trace: dict[str, str], **fields: Any) -> None:
        line = {
            "time": now_rfc3339(),
            "provider": self.provider,
            "message": message,
            "correlation_id": trace["correlation_id"],
            "traceparent": trace["traceparent"],
            **fields,
        }
        with self._lock:
            self._out.write(json.dumps(line) + "\n")
            self._out.flush()


def trace_of(context: grpc.ServicerContext) -> dict[str, str]:
    metadata = dict(context.invocation_metadata())
    return {
        "correlation_id": metadata.get("x-correlation-id", ""),
        "traceparent": metadata.get("traceparent", ""),
    }


# ---------------------------------------------------------------------------------------------
# The Provider service.
# ---------------------------------------------------------------------------------------------

# How long before the deadline work stops, so that the answer still arrives in time.
DEADLINE_MARGIN_S = 0.020


class Failure(Exception):
    """A status the caller gets: code and message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Hello(provider_pb2_grpc.ProviderServicer):
    def __init__(self, name: str, events: Events, log: Log) -> None:
        self.name = name
        self.events = events
        self.log = log
        self._invocations = 0
        self._lock = threading.Lock()

    @property
    def invocations(self) -> int:
        with self._lock:
            return self._invocations

    def ListCapabilities(self, request, context):
        self.log.line("ListCapabilities", trace_of(context), rpc="ListCapabilities", code="Ok", tools=len(TOOLS))
        return provider_pb2.ListCapabilitiesResponse(
            provider=self.name,
            version=VERSION,
            tools=[
                provider_pb2.Tool(
                    name=name,
                    description=tool["description"],
                    input_schema_json=json.dumps(tool["input"]),
                    output_schema_json=json.dumps(tool["output"]) if tool["output"] else "",
                )
                for name, tool in TOOLS.items()
            ],
            resources=[
                provider_pb2.Resource(
                    uri=GREETING_URI,
                    name="greeting",
                    description="A greeting from the provider.",
                    mime_type="text/plain",
                )
            ],
            resource_templates=[
                provider_pb2.ResourceTemplate(
                    uri_template=GREETING_TEMPLATE,
                    name="greeting-for",
                    description="A greeting for someone by name.",
                    mime_type="text/plain",
                )
            ],
            prompts=[
                provider_pb2.Prompt(
                    name=PLAN_PROMPT,
                    description="Asks for a plan of a few steps to reach a goal.",
                    args_schema_json=json.dumps(PLAN_ARGS_SCHEMA),
                    template=PLAN_TEMPLATE,
                )
            ],
        )

    def InvokeTool(self, request, context):
        started = time.monotonic()
        trace = trace_of(context)
        try:
            result, failure = self._run_tool(request.name, request.arguments_json, context), None
        except Failure as f:
            result, failure = None, f
        duration_ms = int((time.monotonic() - started) * 1000)
        with self._lock:
            self._invocations += 1
        self.log.line(
            "InvokeTool",
            trace,
            rpc="InvokeTool",
            tool=request.name,
            code=code_name(failure.code) if failure else "Ok",
            error=failure.message if failure else None,
            duration_ms=duration_ms,
        )
        self.events.publish(
            TOOL_EXECUTED,
            {
                "tool": request.name,
                "duration_ms": duration_ms,
                "success": failure is None,
                "correlation_id": trace["correlation_id"],
            },
        )
        if failure:
            context.abort(failure.code, failure.message)
        return provider_pb2.InvokeToolResponse(result_json=json.dumps(result))

    def _run_tool(self, name: str, arguments_json: str, context) -> Any:
        if name not in TOOLS:
            raise Failure(grpc.StatusCode.NOT_FOUND, f"no tool named '{name}'")
        try:
            arguments = parse_arguments(arguments_json)
            check(VALIDATORS[name], arguments)
        except InvalidArguments as e:
            raise Failure(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None
        if name == "echo.v1":
            return {"message": arguments["message"], "provider": self.name}
        if name == "fail.v1":
            raise Failure(
                grpc.StatusCode.INTERNAL,
                "fail.v1 always fails: it exists to test how failures are reported",
            )
        if name == "slow.v1":
            return slow(arguments["ms"], context)
        if name == "bad_output.v1":
            return bad_output()
        raise Failure(grpc.StatusCode.UNIMPLEMENTED, f"{name} is listed but not built")

    def ReadResource(self, request, context):
        text = read_greeting(request.uri, self.name)
        code = "Ok" if text is not None else "NotFound"
        self.log.line("ReadResource", trace_of(context), rpc="ReadResource", uri=request.uri, code=code)
        if text is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no resource at '{request.uri}'")
        return provider_pb2.ReadResourceResponse(
            contents=[provider_pb2.ResourceContents(uri=request.uri, mime_type="text/plain", text=text)]
        )

    def GetPrompt(self, request, context):
        failure = None
        text = ""
        if request.name != PLAN_PROMPT:
            failure = Failure(grpc.StatusCode.NOT_FOUND, f"no prompt named '{request.name}'")
        else:
            try:
                arguments = parse_arguments(request.arguments_json)
                check(PLAN_VALIDATOR, arguments)
                text = render_plan(arguments)
            except InvalidArguments as e:
                failure = Failure(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        self.log.line(
            "GetPrompt",
            trace_of(context),
            rpc="GetPrompt",
            prompt=request.name,
            code=code_name(failure.code) if failure else "Ok",
        )
        if failure:
            context.abort(failure.code, failure.message)
        return provider_pb2.GetPromptResponse(
            description="A plan of a few steps to reach a goal.",
            messages=[provider_pb2.PromptMessage(role="user", text=text)],
        )

    def StreamEvents(self, request, context) -> Iterator[provider_pb2.Event]:
        types = set(request.types)
        self.log.line("StreamEvents", trace_of(context), rpc="StreamEvents", code="Ok", types=sorted(types))
        listener = self.events.subscribe()
        context.add_callback(lambda: self.events.unsubscribe(listener))
        try:
            while context.is_active():
                try:
                    kind, text = listener.get(timeout=0.5)
                except queue.Empty:
                    continue  # look again whether the caller is still there
                if not types or kind in types:
                    yield provider_pb2.Event(cloudevent_json=text)
        finally:
            self.events.unsubscribe(listener)


def slow(ms: int, context) -> dict[str, Any]:
    """Sleeps `ms`, unless the answer is due earlier: then stops a little before the deadline
    with DEADLINE_EXCEEDED, so that the answer reaches the caller in time."""
    wanted = min(ms, MAX_SLOW_MS) / 1000
    remaining = context.time_remaining()  # None when the caller set no deadline
    # Woken early when the call ends (the caller went away): no point sleeping on.
    ended = threading.Event()
    context.add_callback(ended.set)
    if remaining is not None and remaining - DEADLINE_MARGIN_S < wanted:
        ended.wait(max(0.0, remaining - DEADLINE_MARGIN_S))
        raise Failure(
            grpc.StatusCode.DEADLINE_EXCEEDED,
            f"the call's deadline passed before {ms} ms were slept",
        )
    ended.wait(wanted)
    return {"slept_ms": ms}


def code_name(code: grpc.StatusCode) -> str:
    """The status code's name as the Rust example logs it, e.g. "InvalidArgument"."""
    return "".join(part.capitalize() for part in code.name.split("_"))


# ---------------------------------------------------------------------------------------------
# The process.
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hello-py", description="An example gRPC provider for mcp-http-gateway"
    )
    parser.add_argument("--listen", metavar="HOST:PORT", default="127.0.0.1:50052",
                        help="address to listen on; port 0 picks a free port")
    parser.add_argument("--name", default="hello-py",
                        help="the provider's name, in its greetings, events and log lines")
    parser.add_argument("--log-file", metavar="PATH",
                        help="write the JSON log lines to this file (appended) instead of stderr")
    parser.add_argument("--metric-interval-ms", metavar="N", type=int, default=10_000,
                        help="how often to emit a provider.metric.reported event")
    args = parser.parse_args(argv)

    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--listen must be HOST:PORT, not {args.listen!r}")

    events = Events(args.name)
    hello = Hello(args.name, events, Log(args.name, args.log_file))
    # Each open StreamEvents call holds a worker thread.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    provider_pb2_grpc.add_ProviderServicer_to_server(hello, server)
    health_servicer = health.HealthServicer()
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_servicer.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    try:
        bound = server.add_insecure_port(args.listen)
    except RuntimeError as e:
        print(f"hello-py: cannot listen on {args.listen}: {e}", file=sys.stderr)
        return 1
    server.start()
    # Printed only once the port is bound, so a reader may connect as soon as it sees it.
    print(f"listening on {host}:{bound}", flush=True)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    def report_metrics() -> None:
        interval = max(args.metric_interval_ms, 1) / 1000
        while not stop.wait(interval):
            events.publish(
                METRIC_REPORTED,
                {"name": "invocations_total", "value": float(hello.invocations), "unit": "count"},
            )

    threading.Thread(target=report_metrics, daemon=True).start()
    stop.wait()
    server.stop(grace=1).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
