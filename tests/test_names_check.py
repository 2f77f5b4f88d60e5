#!/usr/bin/env python3
"""Checks that every Catch test name can be a CTest: catch_discover_tests turns each name into a
CMake list item, so a ';' splits it, and the CTest then runs a filter that matches no test and
passes without running anything.

usage: test_names_check.py DTSIM_TESTS
"""
import subprocess
import sys


def main():
    # Catch's listing exits with the number of tests it lists: not an error.
    listing = subprocess.run([sys.argv[1], "--list-test-names-only"], capture_output=True, text=True)
    names = listing.stdout.split("\n")
    if not any(names):
        print(f"{sys.argv[1]} listed no tests: {listing.stderr}")
        return 1
    bad = [name for name in names if ";" in name]
    for name in bad:
        print(f"test name with ';' (CTest would not run it): {name}")
    if bad:
        return 1
    print(f"{len([n for n in names if n])} test names, none with ';'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
