#!/usr/bin/env python3
"""Compares two JUnit XML results of Slurm's test suite, one run under
sched/backfill and one under sched/fairmatch: prints both columns for every
case whose outcome differs, the totals, and exits 1 when a case that passed
under backfill did not pass under fairmatch, or when none passed under
backfill (the suite could not run).

    scripts/slurm-testsuite-diff.py [--json] [--backfill-only NAME]...
                                    backfill.xml fairmatch.xml

--backfill-only NAME names a module (test_126_2) or a case
(test_107_3::test_filter_hetjobs, with all its parameters) that Slurm
itself lets pass only under sched/backfill: its cases that do are listed
apart and do not count against fairmatch.
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


def parse_args(argv):
    as_json, backfill_only, files = False, set(), []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--json":
            as_json = True
        elif a == "--backfill-only":
            if i + 1 == len(argv):
                sys.exit("--backfill-only needs a module or case name\n" + __doc__)
            backfill_only.add(argv[i + 1].replace(".py", ""))
            i += 1
        elif a in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        else:
            files.append(a)
        i += 1
    if len(files) != 2:
        sys.exit(__doc__)
    return as_json, backfill_only, files


def named(case, names):
    """Whether `names` holds the case's module or the case itself:
    tests.test_126_2::test_x[p] is named by test_126_2,
    test_126_2::test_x and test_126_2::test_x[p]."""
    module, _, test = case.partition("::")
    module = module.rsplit(".", 1)[-1]
    return (module in names or f"{module}::{test}" in names
            or f"{module}::{test.split('[')[0]}" in names)


def main():
    as_json, backfill_only, files = parse_args(sys.argv[1:])
    backfill, fairmatch = outcomes(files[0]), outcomes(files[1])
    cases = sorted(set(backfill) | set(fairmatch))
    differ = [
        c for c in cases if backfill.get(c, "missing") != fairmatch.get(c, "missing")
    ]
    only_backfill = [
        c for c in differ if backfill.get(c) == "passed" and fairmatch.get(c) != "passed"
    ]
    by_slurm = [c for c in only_backfill if named(c, backfill_only)]
    worse = [c for c in only_backfill if not named(c, backfill_only)]

    def count(r, what):
        return sum(1 for c in cases if r.get(c) == what)

    summary = {
        "cases": len(cases),
        "backfill": {w: count(backfill, w) for w in ("passed", "failed", "skipped")},
        "fairmatch": {w: count(fairmatch, w) for w in ("passed", "failed", "skipped")},
        "differ": [
            {"case": c, "backfill": backfill.get(c, "missing"),
             "fairmatch": fairmatch.get(c, "missing"),
             "backfill_only_by_slurm": c in by_slurm}
            for c in differ
        ],
        "passed_only_under_backfill": len(worse),
        "passed_only_under_backfill_by_slurm": len(by_slurm),
    }
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        width = max([len(c) for c in differ] + [4])
        print(f"{'case':<{width}}  backfill  fairmatch")
        for c in differ:
            mark = "  (Slurm: backfill only)" if c in by_slurm else ""
            print(f"{c:<{width}}  {backfill.get(c, 'missing'):<8}  "
                  f"{fairmatch.get(c, 'missing')}{mark}")
        for sched in ("backfill", "fairmatch"):
            s = summary[sched]
            print(f"{sched}: {s['passed']} passed, {s['failed']} failed, "
                  f"{s['skipped']} skipped of {len(cases)} cases")
        if by_slurm:
            print(f"passed only under backfill, as Slurm allows them only there: "
                  f"{len(by_slurm)}")
        print(f"passed under backfill but not under fairmatch: {len(worse)}")
    if summary["backfill"]["passed"] == 0:
        print("no case passed under backfill: the suite could not run here")
        sys.exit(1)
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
