#!/usr/bin/env python3
"""The slowest tests of a JUnit report (nextest's, .config/nextest.toml), slowest first.

Usage: junit-slowest.py <junit.xml> [count]
"""
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    path = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    root = ET.parse(path).getroot()
    cases = [
        (float(c.get("time", "0")), f"{c.get('classname', '')} {c.get('name', '')}".strip())
        for c in root.iter("testcase")
    ]
    total = float(root.get("time", "0") or 0)
    cases.sort(reverse=True)
    print(f"{len(cases)} tests in {total:.0f} s of wall time; the {min(count, len(cases))} slowest:")
    for secs, name in cases[:count]:
        print(f"{secs:8.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
