"""Line coverage per crate from an lcov file (scripts/coverage.sh, scripts/test.sh): every
crate's lines, and the same without the `#[cfg(test)]` module that closes a source file (the
project's convention), whose lines run only in tests.

Usage: coverage_by_crate.py LCOV_FILE REPO_ROOT [--min PERCENT CRATE...]

With --min, the gate: each CRATE (e.g. crates/server) must have at least PERCENT of its lines
covered, test modules not counted; one under it, or one with no line in the report at all,
exits 1 and says which. Exit 2 on a usage error."""
import sys, re, collections

args = sys.argv[1:]
if len(args) < 2 or (len(args) > 2 and (args[2] != "--min" or len(args) < 5)):
    print(__doc__, file=sys.stderr)
    sys.exit(2)
lcov, root = args[0], args[1].rstrip("/") + "/"
minimum, gated = (float(args[3]), args[4:]) if len(args) > 2 else (None, [])

def test_start(path):
    """The first line of the file's `#[cfg(test)]` module (the convention: last in the file)."""
    try:
        lines = open(path).read().split("\n")
    except OSError:
        return None
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]":
            nxt = next((l for l in lines[i + 1:] if l.strip()), "")
            if re.match(r"\s*(pub(\(\w+\))?\s+)?mod\s+\w+\s*\{", nxt):
                return i + 1
    return None

all_ = collections.defaultdict(lambda: [0, 0])
prod = collections.defaultdict(lambda: [0, 0])
path = None
for line in open(lcov):
    line = line.rstrip("\n")
    if line.startswith("SF:"):
        path = line[3:]
        start = test_start(path)
        name = path.replace(root, "")
        crate = "/".join(name.split("/")[:2]) if name.startswith("crates/") else name.split("/")[0]
    elif line.startswith("DA:"):
        n, hits = line[3:].split(",")[:2]
        covered = int(hits) > 0
        for table, counted in ((all_, True), (prod, start is None or int(n) < start)):
            if counted:
                table[crate][1] += 1
                table[crate][0] += covered
print(f"{'crate':<22} {'lines':>7} {'covered':>8} {'line %':>7}   {'with test modules':>18}")
tp = [0, 0]; ta = [0, 0]
for crate in sorted(prod):
    c, n = prod[crate]; ca, na = all_[crate]
    tp[0] += c; tp[1] += n; ta[0] += ca; ta[1] += na
    print(f"{crate:<22} {n:>7} {c:>8} {100 * c / max(n, 1):>6.1f}%   {100 * ca / max(na, 1):>17.1f}%")
print(f"{'total':<22} {tp[1]:>7} {tp[0]:>8} {100 * tp[0] / max(tp[1], 1):>6.1f}%   {100 * ta[0] / max(ta[1], 1):>17.1f}%")

if minimum is not None:
    failed = []
    for crate in gated:
        c, n = prod.get(crate, (0, 0))
        percent = 100 * c / n if n else 0.0
        ok = n > 0 and percent >= minimum
        verdict = "ok" if ok else ("NO LINES IN THE REPORT" if n == 0 else "UNDER")
        print(f"coverage gate: {crate} {percent:.1f}% of {n} lines (at least {minimum:g}%): {verdict}")
        if not ok:
            failed.append(crate)
    if failed:
        print(f"coverage gate: FAILED: {', '.join(failed)} under {minimum:g}% line coverage "
              "(target/coverage/summary.txt lists the files; test what they do, or the run fails)",
              file=sys.stderr)
        sys.exit(1)
