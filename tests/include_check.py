#!/usr/bin/env python3
"""The include checker: every #include "..." of a part's sources must name a header of the same part
or of a part it uses, as CMakeLists.txt declares them (dtsim_part ... USES, written to
build/parts.txt); every C++ file under sim/, topologies/ and workloads/ must lie in a part; the
arrows must form no cycle; and docs/architecture.md's table of parts must list the same arrows.

usage: include_check.py SOURCE_DIR PARTS_FILE
Prints each violation (file:line, the include, the part it belongs to and what the including part
may use) and exits 1 if there is any.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ROOTS = ("sim", "topologies", "workloads")


def read_parts(parts_file):
    """{part name: (folder, [used part names])} from the lines `NAME FOLDER: USED...`."""
    parts = {}
    for line in pathlib.Path(parts_file).read_text().splitlines():
        if not line.strip():
            continue
        head, _, uses = line.partition(":")
        name, folder = head.split()
        parts[name] = (folder, uses.split())
    return parts


def part_of(path, folders):
    """The part whose folder holds `path` (a path relative to the source tree), or None."""
    parent = str(pathlib.PurePosixPath(path).parent)
    return folders.get(parent)


def find_cycle(parts):
    """One cycle of the arrows as a list of part names, or None."""
    state = {}

    def visit(name, stack):
        state[name] = "open"
        for used in parts[name][1]:
            if state.get(used) == "open":
                return stack[stack.index(used):] + [used]
            if used not in state:
                cycle = visit(used, stack + [used])
                if cycle:
                    return cycle
        state[name] = "done"
        return None

    for name in parts:
        if name not in state:
            cycle = visit(name, [name])
            if cycle:
                return cycle
    return None


def documented_arrows(doc):
    """{part: set(uses)} from the rows `| `name` | `folder/` | uses a, b |` of the parts table."""
    arrows = {}
    for line in doc.read_text().splitlines():
        m = re.match(r"^\|\s*`([a-z_]+)`\s*\|\s*`[^`]+`\s*\|([^|]*)\|", line)
        if m:
            arrows[m.group(1)] = set(re.findall(r"`([a-z_]+)`", m.group(2)))
    return arrows


def main():
    source_dir = pathlib.Path(sys.argv[1])
    parts = read_parts(sys.argv[2])
    folders = {folder: name for name, (folder, _) in parts.items()}
    problems = []

    for name, (_, uses) in parts.items():
        for used in uses:
            if used not in parts:
                problems.append(f"CMakeLists.txt: part {name} uses {used}, which is no part")
    cycle = find_cycle(parts)
    if cycle:
        problems.append("CMakeLists.txt: the parts' arrows form a cycle: " + " -> ".join(cycle))

    for root in ROOTS:
        for path in sorted((source_dir / root).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h"):
                continue
            rel = path.relative_to(source_dir).as_posix()
            part = part_of(rel, folders)
            if part is None:
                problems.append(f"{rel}: in no part (a folder of its own needs dtsim_part in CMakeLists.txt)")
                continue
            allowed = {part, *parts[part][1]}
            for number, line in enumerate(path.read_text().splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = part_of(m.group(1), folders)
                if target is None:
                    problems.append(f"{rel}:{number}: #include \"{m.group(1)}\" is in no part")
                elif target not in allowed:
                    problems.append(f"{rel}:{number}: #include \"{m.group(1)}\" reaches part {target}; "
                                    f"part {part} may use only {', '.join(sorted(allowed - {part})) or 'nothing'}")

    doc = source_dir / "docs" / "architecture.md"
    documented = documented_arrows(doc)
    declared = {name: set(uses) for name, (_, uses) in parts.items()}
    if documented != declared:
        for name in sorted(set(documented) | set(declared)):
            if documented.get(name) != declared.get(name):
                problems.append(f"docs/architecture.md: part {name} is documented as using "
                                f"{sorted(documented.get(name, []))}, CMakeLists.txt says {sorted(declared.get(name, []))}")

    for problem in problems:
        print(problem)
    checked = sum(1 for root in ROOTS for p in (source_dir / root).rglob("*") if p.suffix in (".cpp", ".hpp", ".h"))
    print(f"{checked} files in {len(parts)} parts checked: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
