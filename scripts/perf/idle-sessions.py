#!/usr/bin/env python3
"""What an idle MCP session costs the gateway in memory, and whether session churn leaks.

Starts the release gateway (or --bin) on a free loopback port with server-everything over one
stdio child, then:

  idle:  opens N sessions (initialize + notifications/initialized, never ended) and reads the
         gateway's resident memory (VmRSS of /proc/PID/status) before and after, once it has
         settled: the difference over N is the memory per idle session;
  soak:  for SECONDS, opens a session, calls echo in it (the answer checked), and abandons it,
         RATE times a second (default 100), sampling VmRSS every 30 s; the unused-session grace (set to 5 s here) and
         the session TTL (10 s) end the abandoned ones. Flat means the last samples are within
         10 % of the first sample taken after the first minute.

Prints Markdown. The gateway binds 127.0.0.1 only.

  scripts/perf/idle-sessions.py [--bin PATH] [--sessions N] [--soak SECONDS] [--rate N]
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def post(url: str, body: dict, session: str | None = None) -> tuple[int, dict, str | None]:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if session:
        headers["mcp-session-id"] = session
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read().decode()
        sid = answer.headers.get("mcp-session-id")
        data = {}
        for line in text.splitlines():
            line = line.removeprefix("data: ")
            if line.startswith("{"):
                data = json.loads(line)
        return answer.status, data, sid


def open_session(url: str) -> str:
    status, data, sid = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "idle", "version": "1"}}})
    assert status == 200 and sid and "result" in data, (status, data)
    status, _, _ = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    assert status in (200, 202), status
    return sid


def settled(pid: int) -> int:
    """VmRSS once two readings a second apart agree within 1 %."""
    last = rss_kib(pid)
    for _ in range(30):
        time.sleep(1)
        now = rss_kib(pid)
        if abs(now - last) <= last / 100:
            return now
        last = now
    return last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "target/release/mcp-http-gateway"))
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--soak", type=int, default=0, help="seconds of churn after the idle test")
    parser.add_argument("--rate", type=int, default=100, help="sessions a second in the soak")
    args = parser.parse_args()
    everything = os.path.join(ROOT, ".deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "idle.yaml")
        with open(config, "w") as f:
            f.write(
                f"service: {{ name: idle, port: {port} }}\n"
                # Room for the idle ones and for the soak's abandoned ones while they live.
                f"mcp: {{ max_sessions: {args.sessions + 100 + 20 * args.rate}, max_sessions_per_client: {args.sessions + 100 + 20 * args.rate},"
                " session_ttl_secs: 10, unused_session_grace_secs: 5 }\n"
                "security: { rate_limit: 1000000 }\n"
                f"providers:\n  - {{ name: everything, kind: mcp, command: node, args: [\"{everything}\", stdio] }}\n"
            )
        gateway = subprocess.Popen([args.bin, "serve", "--config", config],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            deadline = time.time() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as h:
                        if json.loads(h.read())["data"]["state"] == "HEALTHY":
                            break
                except Exception:
                    pass
                if time.time() > deadline:
                    sys.exit("the gateway did not become healthy within 60 s")
                time.sleep(0.2)
            # One session first, so what every session shares is paid before the baseline.
            open_session(url)
            before = settled(gateway.pid)
            started = time.time()
            for _ in range(args.sessions):
                open_session(url)
            took = time.time() - started
            after = settled(gateway.pid)
            per = (after - before) / args.sessions
            print(f"| idle sessions | VmRSS before | after | per session | opened in |")
            print(f"|---|---|---|---|---|")
            print(f"| {args.sessions} | {before / 1024:.1f} MiB | {after / 1024:.1f} MiB | {per:.1f} KiB | {took:.1f} s |")
            if args.soak:
                samples, calls = [], 0
                end = time.time() + args.soak
                next_sample = time.time()
                next_at = time.time()
                while time.time() < end:
                    # The churn's pace: RATE sessions a second, however fast the gateway answers.
                    next_at += 1 / args.rate
                    if next_at > time.time():
                        time.sleep(next_at - time.time())
                    sid = open_session(url)
                    status, data, _ = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                 "params": {"name": "echo", "arguments": {"message": "soak"}}}, sid)
                    assert status == 200 and data["result"]["content"][0]["text"] == "Echo: soak", data
                    calls += 1
                    if time.time() >= next_sample:
                        samples.append((round(time.time() - end + args.soak), rss_kib(gateway.pid)))
                        next_sample += 30
                print()
                print(f"soak: {args.soak} s, {calls} sessions opened, called and abandoned")
                print()
                print("| s | VmRSS |")
                print("|---|---|")
                for at, kib in samples:
                    print(f"| {at} | {kib / 1024:.1f} MiB |")
                after_warmup = [kib for at, kib in samples if at >= 60] or [samples[-1][1]]
                flat = all(abs(kib - after_warmup[0]) <= after_warmup[0] / 10 for kib in after_warmup[-3:])
                print()
                print("flat" if flat else "NOT flat")
                if not flat:
                    sys.exit(1)
        finally:
            gateway.terminate()
            gateway.wait(timeout=30)


if __name__ == "__main__":
    main()
