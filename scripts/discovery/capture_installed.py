#!/usr/bin/env python3
"""Captures the tools/list of the MCP servers this project installs (and of its own MCP fixtures)
for the tool-discovery benchmark, exactly as each server sends it over stdio.

Speaks plain JSON-RPC over stdio (newline-delimited, protocol 2025-11-25 handshake): sends
`initialize` declaring the client capabilities roots, sampling, elicitation (form and url) and
tasks, so servers that register tools conditionally on them (server-everything) list all of
them; then `notifications/initialized`, waits a moment for conditional registration, and pages
through `tools/list` (following `nextCursor`). Each tool object is kept verbatim (name, title,
description, inputSchema; outputSchema, annotations, icons, _meta and execution dropped, as the
benchmark ranks on the first four only; a tool with no title but an annotations.title has that
as its title).

Needs the installed servers (scripts/install-mcp-servers.sh, into .deps/) and node on PATH.

Run from the repository root:
    python3 scripts/discovery/capture_installed.py > /tmp/installed.json
Merge into the catalog (replaces the tools and source entries of these sources, keeps the rest):
    python3 scripts/discovery/capture_installed.py --merge crates/server/tests/fixtures/discovery/catalog.json
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPS = os.path.join(ROOT, ".deps")
PY = os.path.join(DEPS, "venv", "bin", "python")
NM = os.path.join(DEPS, "node_modules", "@modelcontextprotocol")
FIX = os.path.join(ROOT, "crates", "server", "tests", "fixtures")
KEEP = ("name", "title", "description", "inputSchema")
WAIT = 20  # seconds a response may take


def installed_version(kind: str, package: str) -> str:
    if kind == "node":
        folder = os.path.join(NM, package) if package.startswith("server-") else os.path.join(DEPS, "node_modules", package)
        with open(os.path.join(folder, "package.json")) as f:
            return json.load(f)["version"]
    out = subprocess.run(
        [PY, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def targets(memory_file: str) -> list[dict]:
    fixture = lambda sid, file, desc: {  # noqa: E731
        "id": sid,
        "name": desc,
        "where": f"this repository, crates/server/tests/fixtures/{file} (captured by running it)",
        "licence": "MIT OR Apache-2.0 (this repository)",
        "command": [PY, os.path.join(FIX, file)],
    }
    return [
        {
            "id": "everything",
            "name": "MCP reference test server (server-everything)",
            "where": "installed npm package @modelcontextprotocol/server-everything@{v} "
                     "(source: modelcontextprotocol/servers, src/everything), captured by running it",
            "package": ("node", "server-everything"),
            "licence": "MIT / Apache-2.0 (project licensing transition; package.json says SEE LICENSE IN LICENSE)",
            "command": ["node", os.path.join(NM, "server-everything", "dist", "index.js"), "stdio"],
        },
        {
            "id": "memory",
            "name": "MCP knowledge-graph memory server (server-memory)",
            "where": "installed npm package @modelcontextprotocol/server-memory@{v} "
                     "(source: modelcontextprotocol/servers, src/memory), captured by running it",
            "package": ("node", "server-memory"),
            "licence": "MIT / Apache-2.0 (project licensing transition; package.json says SEE LICENSE IN LICENSE)",
            "command": ["node", os.path.join(NM, "server-memory", "dist", "index.js")],
            "env": {"MEMORY_FILE_PATH": memory_file},
        },
        {
            "id": "time",
            "name": "MCP time server (mcp-server-time)",
            "where": "installed Python package mcp-server-time {v} in .deps/venv "
                     "(source: modelcontextprotocol/servers, src/time), captured by running it "
                     "with --local-timezone UTC",
            "package": ("python", "mcp-server-time"),
            "licence": "MIT",
            "command": [os.path.join(DEPS, "venv", "bin", "mcp-server-time"), "--local-timezone", "UTC"],
        },
        {
            "id": "playwright",
            "name": "Playwright MCP (browser automation), as bundled in playwright-core",
            "where": "installed npm package playwright-core@{v}, its MCP entry point lib/entry/mcp.js "
                     "(the server published as @playwright/mcp; source: microsoft/playwright-mcp, "
                     "microsoft/playwright), captured by running it with --headless "
                     "--caps vision,pdf,devtools (listing tools starts no browser)",
            "package": ("node", "playwright-core"),
            "licence": "Apache-2.0",
            "command": ["node", os.path.join(DEPS, "node_modules", "playwright-core", "lib", "entry", "mcp.js"),
                        "--headless", "--caps", "vision,pdf,devtools"],
            "scratch_cwd": True,
        },
        fixture("fault_fixture", "fault_mcp_server.py", "gateway test fixture: fault-injecting MCP server"),
        fixture("meta_echo_fixture", "meta_echo_server.py", "gateway test fixture: meta/echo MCP server"),
        fixture("mrtr_fixture", "mrtr_server.py", "gateway test fixture: multi-round-trip MCP server"),
        fixture("paged_fixture", "paged_dynamic_server.py", "gateway test fixture: paged, dynamic tool list"),
        fixture("typed_fixture", "typed_server.py", "gateway test fixture: typed-arguments MCP server"),
        fixture("versioned_fixture", "versioned_names_server.py", "gateway test fixture: versioned tool names"),
    ]


class Stdio:
    def __init__(self, command: list[str], env: dict | None, cwd: str):
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})}, cwd=cwd)
        self.buf = b""
        self.next_id = 0

    def send(self, message: dict) -> None:
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def read_message(self, deadline: float) -> dict | None:
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError("server closed its stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line) if line.strip() else {}

    def answer_server_request(self, message: dict) -> None:
        # The server may ask its client things (roots/list, ...): answer with empty results.
        result = {"roots": []} if message.get("method") == "roots/list" else {}
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + WAIT
        while True:
            message = self.read_message(deadline)
            if message is None:
                raise RuntimeError(f"no answer to {method} in {WAIT}s")
            if "method" in message and "id" in message:
                self.answer_server_request(message)
            elif message.get("id") == rid:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (message := self.read_message(deadline)) is not None:
            if "method" in message and "id" in message:
                self.answer_server_request(message)

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def keep(tool: dict) -> dict:
    """name, title, description, inputSchema as sent; a server that gives no top-level title but
    annotations.title (the older place for it) has that taken as the title."""
    kept = {k: tool[k] for k in KEEP if k in tool}
    if "title" not in kept and (tool.get("annotations") or {}).get("title"):
        kept = {"name": kept["name"], "title": tool["annotations"]["title"],
                **{k: v for k, v in kept.items() if k != "name"}}
    return kept


def capture(target: dict, scratch: str) -> list[dict]:
    # A server that may write files where it runs (playwright's output folder) runs in scratch.
    conn = Stdio(target["command"], target.get("env"), scratch if target.get("scratch_cwd") else ROOT)
    try:
        conn.request("initialize", {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "roots": {"listChanged": True},
                "sampling": {},
                "elicitation": {"form": {}, "url": {}},
                "tasks": {"requests": {"sampling": {"createMessage": {}},
                                       "elicitation": {"create": {}}}},
            },
            "clientInfo": {"name": "discovery-benchmark-capture", "version": "1.0.0"},
        })
        conn.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        conn.drain(1.5)  # conditional tools are registered after initialization
        tools, cursor = [], None
        while True:
            page = conn.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return [keep(t) for t in tools]
    finally:
        conn.close()


def main(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sources, tools = [], []
        for target in targets(os.path.join(tmp, "memory.jsonl")):
            listed = capture(target, tmp)
            where = target["where"]
            if "package" in target:
                where = where.format(v=installed_version(*target["package"]))
            sources.append({"id": target["id"], "name": target["name"], "where": where,
                            "licence": target["licence"]})
            tools.extend({"source": target["id"], **t} for t in listed)
            print(f"{target['id']}: {len(listed)} tools", file=sys.stderr)
    captured = {"sources": sources, "tools": tools}
    if len(argv) == 2 and argv[0] == "--merge":
        ids = {s["id"] for s in sources}
        with open(argv[1]) as f:
            catalog = json.load(f)
        catalog["sources"] = sources + [s for s in catalog["sources"] if s["id"] not in ids]
        catalog["tools"] = tools + [t for t in catalog["tools"] if t["source"] not in ids]
        with open(argv[1], "w") as f:
            json.dump(catalog, f, indent=1, ensure_ascii=False)
            f.write("\n")
    elif argv:
        sys.exit("usage: capture_installed.py [--merge CATALOG_JSON]")
    else:
        json.dump(captured, sys.stdout, indent=1, ensure_ascii=False)
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
