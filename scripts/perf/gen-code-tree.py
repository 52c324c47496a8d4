#!/usr/bin/env python3
"""Writes a synthetic source tree for the search benchmark (scripts/perf/search-bench.sh).

    scripts/perf/gen-code-tree.py DIR [--files N] [--seed S]

N files (default 100000) in folders of 100, a third each Rust, Python and TypeScript, each
20-60 lines of functions whose names are camelCase / snake_case compounds of a 4000-word
vocabulary drawn with a Zipf-like skew (so some words are common and some rare, as in real
code). Deterministic for a seed. Prints the files and bytes written.
"""
import argparse
import itertools
import os
import random

SYLLABLES = ["ba", "ce", "di", "fo", "gu", "ha", "ke", "li", "mo", "nu", "pa", "re", "si", "to",
             "vu", "wa", "xe", "yo", "za", "qu", "ar", "en", "ir", "on", "ul"]


def vocabulary(rng, n):
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=17)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    words = vocabulary(rng, 4000)
    cumulative = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(words))))

    def name(camel):
        parts = rng.choices(words, cum_weights=cumulative, k=rng.randint(2, 3))
        if camel:
            return parts[0] + "".join(p.capitalize() for p in parts[1:])
        return "_".join(parts)

    total = 0
    for i in range(args.files):
        folder = os.path.join(args.dir, f"m{i // 1000:03d}", f"p{(i // 100) % 10}")
        os.makedirs(folder, exist_ok=True)
        kind = i % 3
        lines = []
        for _ in range(rng.randint(4, 12)):
            fn, a, b = name(kind == 2), name(False), name(True)
            if kind == 0:
                lines += [f"/// Computes {a} from {b}.", f"pub fn {fn}({a}: u64) -> u64 {{",
                          f"    let {name(False)} = {a} + 1;", f"    {b}({a})", "}"]
            elif kind == 1:
                lines += [f"def {fn}({a}):", f'    """Computes {a} from {b}."""',
                          f"    {name(False)} = {a} + 1", f"    return {b}({a})", ""]
            else:
                lines += [f"// Computes {a} from {b}.", f"export function {fn}({a}: number): number {{",
                          f"  const {name(True)} = {a} + 1;", f"  return {b}({a});", "}"]
        ext = ["rs", "py", "ts"][kind]
        text = "\n".join(lines) + "\n"
        with open(os.path.join(folder, f"f{i}.{ext}"), "w") as f:
            f.write(text)
        total += len(text)
    print(f"{args.files} files, {total} bytes in {args.dir}")


if __name__ == "__main__":
    main()
