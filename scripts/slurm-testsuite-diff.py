#!/usr/bin/env python3
"""Compares two JUnit XML results of Slurm's test suite, one run under
sched/backfill and one under sched/fairmatch: prints both columns for every
case whose outcome differs, the totals, and exits 1 when a case that passed
under backfill did not pass under fairmatch, or when none passed under
backfill (the suite could not run).

    scripts/slurm-testsuite-diff.py backfill.xml fairmatch.xml [--json]
"""
import json
import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        sys.exit(f"{path}: cannot read the results: {e}")
    result = {}
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        # A teardown error is reported as a second entry of the same case.
        if result.get(name, "passed") != "passed" and outcome == "passed":
            continue
        result[name] = outcome
    return result


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    if len(args) != 2:
        sys.exit(__doc__)
    backfill, fairmatch = outcomes(args[0]), outcomes(args[1])
    cases = sorted(set(backfill) | set(fairmatch))
    differ = [
        c for c in cases if backfill.get(c, "missing") != fairmatch.get(c, "missing")
    ]
    worse = [
        c for c in differ if backfill.get(c) == "passed" and fairmatch.get(c) != "passed"
    ]

    def count(r, what):
        return sum(1 for c in cases if r.get(c) == what)

    summary = {
        "cases": len(cases),
        "backfill": {w: count(backfill, w) for w in ("passed", "failed", "skipped")},
        "fairmatch": {w: count(fairmatch, w) for w in ("passed", "failed", "skipped")},
        "differ": [
            {"case": c, "backfill": backfill.get(c, "missing"),
             "fairmatch": fairmatch.get(c, "missing")}
            for c in differ
        ],
        "passed_only_under_backfill": len(worse),
    }
    if "--json" in sys.argv:
        print(json.dumps(summary, indent=2))
    else:
        width = max([len(c) for c in differ] + [4])
        print(f"{'case':<{width}}  backfill  fairmatch")
        for c in differ:
            print(f"{c:<{width}}  {backfill.get(c, 'missing'):<8}  {fairmatch.get(c, 'missing')}")
        for sched in ("backfill", "fairmatch"):
            s = summary[sched]
            print(f"{sched}: {s['passed']} passed, {s['failed']} failed, "
                  f"{s['skipped']} skipped of {len(cases)} cases")
        print(f"passed under backfill but not under fairmatch: {len(worse)}")
    if summary["backfill"]["passed"] == 0:
        print("no case passed under backfill: the suite could not run here")
        sys.exit(1)
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
