#!/usr/bin/env python3
"""Reads the JUnit report cargo-nextest writes and prints the slowest tests, or the table of
every test's time for docs/testing.md (issue 51: every run says where its time went).

  test_times.py JUNIT [--slowest N]      the N slowest tests (default 15), slowest first
  test_times.py JUNIT --table            per binary: tests, total, median, p90, max; then the
                                         tests over 20 s, as Markdown
Exit 2 when the report is missing or holds no test (a run that timed nothing is not a pass).
"""
import statistics
import sys
import xml.etree.ElementTree as ET


def cases(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as err:
        sys.exit(f"test_times: cannot read the JUnit report {path}: {err}")
    found = []
    for suite in root.iter("testsuite"):
        binary = suite.get("name", "?")
        for case in suite.iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            found.append((float(case.get("time", "0")), binary, case.get("name", "?"), failed))
    if not found:
        print(f"test_times: no test in {path}", file=sys.stderr)
        sys.exit(2)
    return found


def slowest(found, n):
    print(f"the {min(n, len(found))} slowest of {len(found)} tests:")
    for secs, binary, name, failed in sorted(found, reverse=True)[:n]:
        print(f"  {secs:7.2f} s  {binary} {name}{'  (failed)' if failed else ''}")


def quantile(times, q):
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(found):
    by_binary = {}
    for secs, binary, _, _ in found:
        by_binary.setdefault(binary, []).append(secs)
    print("| binary | tests | sum of times | median | p90 | slowest |")
    print("|---|---:|---:|---:|---:|---:|")
    for binary, times in sorted(by_binary.items(), key=lambda kv: -sum(kv[1])):
        print(f"| {binary} | {len(times)} | {sum(times):.1f} s | {statistics.median(times):.2f} s "
              f"| {quantile(times, 0.9):.2f} s | {max(times):.2f} s |")
    over = sorted((c for c in found if c[0] > 20), reverse=True)
    print(f"\nTests over 20 s: {len(over)}")
    for secs, binary, name, _ in over:
        print(f"- {secs:.1f} s `{name}` ({binary})")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    found = cases(argv[1])
    if argv[2:3] == ["--table"]:
        table(found)
    else:
        n = int(argv[3]) if argv[2:3] == ["--slowest"] and len(argv) > 3 else 15
        slowest(found, n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
