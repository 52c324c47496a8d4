#!/usr/bin/env python3
"""Session bounds under floods sent together: the four probes of issue 50, each RUNS times.

Each probe starts the gateway (release build by default, or --bin) on a free loopback port with
server-everything over one stdio child and the probe's `mcp` bounds, sends its flood from
threads released at one barrier, each thread on its own kept-alive connection from the
probe's loopback address, and checks the bound exactly: the sessions granted, /health's live
sessions (clients.sessions) and, where a client is at its own bound, that none of its sessions
was ended to make room for itself (mcp_sessions_ended_early_total{reason="evicted"}). Every
refusal must be 429 or 503 with Retry-After.

  per-client  3,000 initialize from one address on 50 connections, defaults (1000, 100 per
              client): exactly 100 granted, /health 100.
  last-one    a client holding 99 sessions sends 40 initialize at one instant: exactly 1.
  table       max_sessions 40 (40 per client), four clients holding 10, 10, 10 and 9, the
              last place asked 32 times at once by the four: /health 40, and each place
              granted past the first ended another client's session (evicted).
  no-churn    max_sessions 40, 40 per client, 50 threads x 60 initialize from one address:
              exactly 40 granted, the rest 503, none evicted, /health 40.

Prints a Markdown table; exits 1 when a run of a probe broke its bound.

  scripts/perf/session-probes.py [--bin PATH] [--runs 10] [--probe NAME]...
"""

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVERYTHING = os.path.join(ROOT, ".deps/node_modules/@modelcontextprotocol/server-everything/dist/index.js")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gateway:
    def __init__(self, binary: str, mcp: str, tmp: str):
        self.port = free_port()
        config = os.path.join(tmp, f"probe-{self.port}.yaml")
        with open(config, "w") as f:
            f.write(
                f"service: {{ name: probe, port: {self.port} }}\n"
                f"mcp: {{ {mcp} }}\n"
                "monitoring: { metrics_enabled: true }\n"
                "security: { rate_limit: 1000000 }\n"
                f"providers:\n  - {{ name: everything, kind: mcp, command: node, args: [\"{EVERYTHING}\", stdio] }}\n"
            )
        self.process = subprocess.Popen([binary, "serve", "--config", config],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while True:
            try:
                if self.health()["state"] == "HEALTHY":
                    return
            except Exception:
                pass
            if self.process.poll() is not None or time.time() > deadline:
                self.stop()
                sys.exit("session-probes: the gateway did not become healthy within 60 s")
            time.sleep(0.1)

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as answer:
            return answer.read()

    def health(self) -> dict:
        return json.loads(self.get("/health"))["data"]

    def live(self) -> int:
        return self.health()["clients"]["sessions"]

    def evicted(self) -> int:
        text = self.get("/metrics").decode()
        found = re.search(r'mcp_sessions_ended_early_total\{[^}]*reason="evicted"[^}]*\} (\d+)', text)
        return int(found.group(1)) if found else 0

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}})
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def initialize(connection: http.client.HTTPConnection) -> tuple[int, bool]:
    """One initialize on a kept-alive connection: its status, and whether a refusal said when
    to retry (a grant must carry its session id)."""
    connection.request("POST", "/mcp", INIT, HEADERS)
    answer = connection.getresponse()
    answer.read()
    if answer.status == 200:
        assert answer.getheader("mcp-session-id"), "200 without a session id"
        return 200, True
    return answer.status, answer.getheader("retry-after") is not None


def flood(gw: Gateway, address: str, threads: int, each: int) -> list[tuple[int, bool]]:
    """`threads` threads, each on its own kept-alive connection from `address`, released at
    one barrier, each sending `each` initialize one after another."""
    barrier = threading.Barrier(threads)
    answers: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def run() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30,
                                                source_address=(address, 0))
        connection.connect()
        barrier.wait()
        mine = [initialize(connection) for _ in range(each)]
        connection.close()
        with lock:
            answers.extend(mine)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return answers


def granted(answers: list[tuple[int, bool]], refused: int) -> int:
    bad = [a for a in answers if a[0] != 200 and (a[0] != refused or not a[1])]
    assert not bad, f"answers other than 200 or {refused} with Retry-After: {bad[:5]}"
    return sum(1 for a in answers if a[0] == 200)


def hold(gw: Gateway, address: str, n: int) -> None:
    answers = flood(gw, address, 1, n)
    assert granted(answers, 0) == n, answers


def per_client(gw: Gateway) -> str:
    won = granted(flood(gw, "127.0.0.2", 50, 60), 429)
    live = gw.live()
    assert (won, live) == (100, 100), f"{won} granted, {live} live"
    return f"{won} of 3000 granted, /health {live}"


def last_one(gw: Gateway) -> str:
    hold(gw, "127.0.0.2", 99)
    won = granted(flood(gw, "127.0.0.2", 40, 1), 429)
    live = gw.live()
    assert (won, live) == (1, 100), f"{won} granted, {live} live"
    return f"{won} of 40 granted, /health {live}"


def table(gw: Gateway) -> str:
    for address, n in [("127.0.0.2", 10), ("127.0.0.3", 10), ("127.0.0.4", 10), ("127.0.0.5", 9)]:
        hold(gw, address, n)
    results: list[int] = []
    lock = threading.Lock()

    def ask(address: str) -> None:
        won = granted(flood(gw, address, 8, 1), 503)
        with lock:
            results.append(won)

    askers = [threading.Thread(target=ask, args=(f"127.0.0.{i}",)) for i in range(2, 6)]
    for a in askers:
        a.start()
    for a in askers:
        a.join()
    won, live, evicted = sum(results), gw.live(), gw.evicted()
    assert live == 40 and won == 1 + evicted, f"{won} granted, {evicted} evicted, {live} live"
    return f"{won} of 32 granted ({evicted} by eviction), /health {live}"


def no_churn(gw: Gateway) -> str:
    won = granted(flood(gw, "127.0.0.2", 50, 60), 503)
    live, evicted = gw.live(), gw.evicted()
    assert (won, live, evicted) == (40, 40, 0), f"{won} granted, {live} live, {evicted} evicted"
    return f"{won} of 3000 granted, /health {live}, {evicted} evicted"


PROBES = {
    "per-client": ("", per_client),
    "last-one": ("", last_one),
    "table": ("max_sessions: 40, max_sessions_per_client: 40", table),
    "no-churn": ("max_sessions: 40, max_sessions_per_client: 40", no_churn),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "target/release/mcp-http-gateway"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--probe", action="append", choices=sorted(PROBES))
    args = parser.parse_args()
    failed = 0
    print("| probe | runs held | last run |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.probe or list(PROBES):
            mcp, probe = PROBES[name]
            held, last = 0, ""
            for _ in range(args.runs):
                gw = Gateway(args.bin, mcp, tmp)
                try:
                    last = probe(gw)
                    held += 1
                except AssertionError as broken:
                    last = f"BROKEN: {broken}"
                    failed += 1
                finally:
                    gw.stop()
            print(f"| {name} | {held} of {args.runs} | {last} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
