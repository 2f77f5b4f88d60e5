#!/usr/bin/env python3
"""The include checker's worked example: a small tree whose engine includes a command header, with
a file in no part, a cycle between two parts and a docs table that disagrees must fail with each
named; the same tree mended must pass.

usage: include_check_test.py INCLUDE_CHECK_PY
"""
import pathlib
import subprocess
import sys
import tempfile


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def run(checker, root, parts):
    (root / "parts.txt").write_text(parts)
    done = subprocess.run([sys.executable, checker, str(root), str(root / "parts.txt")],
                          capture_output=True, text=True)
    return done.returncode, done.stdout


def main():
    checker = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for folder in ("topologies", "workloads"):
            write(root, f"{folder}/a.hpp", "#pragma once\n")
        write(root, "sim/base/error.hpp", "#pragma once\n")
        write(root, "sim/engine/engine.cpp", '#include "sim/base/error.hpp"\n#include "sim/commands/verb.hpp"\n')
        write(root, "sim/commands/verb.hpp", '#include "sim/engine/engine.hpp"\n')
        write(root, "sim/engine/engine.hpp", "#pragma once\n")
        write(root, "sim/stray.cpp", "int x;\n")
        doc = ("| part | folder | uses |\n|---|---|---|\n| `base` | `sim/base/` | |\n"
               "| `engine` | `sim/engine/` | `base` |\n| `commands` | `sim/commands/` | `engine` |\n"
               "| `topologies` | `topologies/` | |\n| `workloads` | `workloads/` | |\n")
        write(root, "docs/architecture.md", doc)
        bad = ("base sim/base:\ntopologies topologies:\nworkloads workloads:\n"
               "engine sim/engine: base commands\ncommands sim/commands: engine\n")
        code, out = run(checker, root, bad)
        expected = ["cycle", "sim/stray.cpp: in no part", "docs/architecture.md: part engine"]
        missing = [e for e in expected if e not in out]
        assert code == 1 and not missing, f"the broken tree passed or a problem went unreported ({missing}):\n{out}"

        good = ("base sim/base:\ntopologies topologies:\nworkloads workloads:\n"
                "engine sim/engine: base\ncommands sim/commands: engine\n")
        code, out = run(checker, root, good)
        assert code == 1 and 'sim/engine/engine.cpp:2: #include "sim/commands/verb.hpp" reaches part commands' in out, out
        write(root, "sim/engine/engine.cpp", '#include "sim/base/error.hpp"\n')
        (root / "sim/stray.cpp").unlink()
        code, out = run(checker, root, good)
        assert code == 0, f"the mended tree failed:\n{out}"
    print("include checker: reports wrong arrows, stray files, cycles and a stale docs table")


if __name__ == "__main__":
    main()
