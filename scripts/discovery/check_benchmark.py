#!/usr/bin/env python3
"""Checks the tool-discovery benchmark in crates/server/tests/fixtures/discovery/:

* catalog.json and queries.json parse; every tool has source, name, description (may be empty),
  inputSchema; names are unique within a source; every source is declared once;
* counts: at least MIN_TOOLS tools and MIN_QUERIES queries, each query with 1-3 relevant tools,
  every relevant entry "<source>.<name>" in the catalog, no duplicate query text;
* no query gives away a relevant tool's name: the name is split on _ - . and camelCase into
  tokens; the query must not contain the whole name (as written, or as its token sequence) and
  must not contain more than half of the name's distinctive tokens (generic verbs such as
  get/list/create and stop words are not distinctive; a name with one distinctive token may
  not have it in the query). Tokens are compared after a light plural stemming.

Prints counts (tools, sources, queries, sources covered by queries) and every violation; exits
non-zero on any violation.  Run:  python3 scripts/discovery/check_benchmark.py
"""

import json
import os
import re
import sys
from collections import Counter

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIR = os.path.join(ROOT, "crates", "server", "tests", "fixtures", "discovery")
MIN_TOOLS, MIN_QUERIES, MIN_COVERED = 300, 100, 40

GENERIC = set("""get list create update delete read write search set add remove find query api post patch
retrieve a an the by to from with in of and or is for all new my me as on at it its""".split())


def stem(word: str) -> str:
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith(("xes", "ches", "shes", "sses")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def name_tokens(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [t.lower() for t in re.split(r"[_\-.\s/]+", spaced) if t]


def query_tokens(query: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", query.lower())


def leaks(query: str, name: str) -> str | None:
    q_lower = query.lower()
    toks = name_tokens(name)
    q_stems = [stem(t) for t in query_tokens(query)]
    n_stems = [stem(t) for t in toks]
    if name.lower() in q_lower:
        return f"contains the name {name!r}"
    k = len(n_stems)
    if k and any(q_stems[i:i + k] == n_stems for i in range(len(q_stems) - k + 1)):
        return f"contains the name {name!r} as words"
    distinctive = sorted({s for s, t in zip(n_stems, toks) if t not in GENERIC})
    hit = [s for s in distinctive if s in set(q_stems)]
    if distinctive and len(hit) * 2 > len(distinctive):
        return f"has {hit} of the distinctive tokens {distinctive} of {name!r}"
    return None


def main() -> int:
    with open(os.path.join(DIR, "catalog.json")) as f:
        catalog = json.load(f)
    with open(os.path.join(DIR, "queries.json")) as f:
        queries = json.load(f)["queries"]
    problems = []
    source_ids = [s["id"] for s in catalog["sources"]]
    for sid, n in Counter(source_ids).items():
        if n > 1:
            problems.append(f"source {sid} declared {n} times")
    for s in catalog["sources"]:
        for key in ("id", "name", "where", "licence"):
            if not s.get(key):
                problems.append(f"source {s.get('id')} has no {key}")
    tools = {}
    for t in catalog["tools"]:
        if t.get("source") not in source_ids:
            problems.append(f"tool {t.get('name')} has an undeclared source {t.get('source')}")
        for key in ("name", "inputSchema"):
            if key not in t:
                problems.append(f"tool {t.get('source')}.{t.get('name')} has no {key}")
        if not isinstance(t.get("inputSchema"), dict) or t["inputSchema"].get("type") != "object":
            problems.append(f"tool {t['source']}.{t['name']}: inputSchema is not an object schema")
        key = f"{t['source']}.{t['name']}"
        if key in tools:
            problems.append(f"tool {key} listed twice")
        tools[key] = t
    if len(tools) < MIN_TOOLS:
        problems.append(f"only {len(tools)} tools (want >= {MIN_TOOLS})")
    if len(queries) < MIN_QUERIES:
        problems.append(f"only {len(queries)} queries (want >= {MIN_QUERIES})")
    texts = Counter(q["query"].strip().lower() for q in queries)
    for text, n in texts.items():
        if n > 1:
            problems.append(f"query {text!r} appears {n} times")
    covered = Counter()
    for q in queries:
        rel = q.get("relevant", [])
        if not 1 <= len(rel) <= 3 or len(set(rel)) != len(rel):
            problems.append(f"query {q['query']!r}: {len(rel)} relevant tools (want 1-3, distinct)")
        for r in rel:
            if r not in tools:
                problems.append(f"query {q['query']!r}: {r} is not in the catalog")
                continue
            covered[tools[r]["source"]] += 1
            why = leaks(q["query"], tools[r]["name"])
            if why:
                problems.append(f"query {q['query']!r} {why}")
    want_covered = min(MIN_COVERED, len(source_ids))
    if len(covered) < want_covered:
        missing = sorted(set(source_ids) - set(covered))
        problems.append(f"only {len(covered)} sources have a relevant tool (want >= {want_covered}); none for {missing}")
    print(f"tools: {len(tools)} from {len(source_ids)} sources")
    print(f"queries: {len(queries)}; relevant entries: {sum(len(q['relevant']) for q in queries)}; "
          f"queries with several relevant tools: {sum(1 for q in queries if len(q['relevant']) > 1)}; "
          f"distinct relevant tools: {len({r for q in queries for r in q['relevant']})}")
    print(f"sources with a relevant tool: {len(covered)} of {len(source_ids)}")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
