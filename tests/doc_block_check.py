#!/usr/bin/env python3
"""Checks that a fenced block of a document is what a dtsim command prints today, so that a
reference page generated from the binary cannot drift from it.

usage: doc_block_check.py DOC.md AFTER_LINE DTSIM ARGS...
The block is the first ``` fence after the line that contains AFTER_LINE.
"""
import subprocess
import sys


def main():
    doc, after, binary, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    lines = open(doc).read().split("\n")
    start = next(i for i, line in enumerate(lines) if after in line)
    fence = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    documented = "\n".join(lines[fence + 1:end]) + "\n"
    printed = subprocess.run([binary, *args], capture_output=True, text=True, check=True).stdout
    if documented != printed:
        for n, (a, b) in enumerate(zip(documented.split("\n"), printed.split("\n"))):
            if a != b:
                print(f"{doc}: line {fence + 2 + n} of the block differs from `dtsim {' '.join(args)}`:\n  doc: {a}\n  now: {b}")
                break
        else:
            print(f"{doc}: the block has {documented.count(chr(10))} lines, `dtsim {' '.join(args)}` prints {printed.count(chr(10))}")
        print("regenerate the block from the command's output")
        return 1
    print(f"{doc}: the block is `dtsim {' '.join(args)}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
