"""``python3 -m assay.targets NAME ACTION [options]``: drive one target from a study file.

Actions: ``setup`` (start the system afresh with the ``--knob`` baseline and load its
data), ``run`` (apply ``--knob`` over the baseline when it differs from what runs,
run the workload, print one JSON object), ``reset`` (fresh data), ``teardown`` (stop
and remove everything), ``describe`` (version and configuration as JSON), ``fault``
and ``restore`` (a study's ``[[fault]]`` steps, on targets that have faults: etcd).
A failure is one paragraph on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from assay.targets import TARGETS, target_class
from assay.targets.base import TargetError, parse_knobs
from assay.targets.private import default_state_dir

ACTIONS = ("setup", "run", "reset", "teardown", "describe", "fault", "restore")


def build_parser(name: str) -> argparse.ArgumentParser:
    """The argument parser of one target (its own options plus the common ones)."""
    parser = argparse.ArgumentParser(
        prog=f"python3 -m assay.targets {name}",
        description=(target_class(name).__doc__ or "").strip().splitlines()[0],
    )
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a configuration knob (repeatable); setup: the baseline, run: laid over it",
    )
    parser.add_argument("--output", help="also write the JSON to this file")
    target_class(name).add_arguments(parser)
    return parser


def execute(name: str, argv: list[str]) -> dict[str, object] | None:
    """Run one action of target ``name``; return the JSON object to print (if any)."""
    opts = build_parser(name).parse_args(argv)
    cls = target_class(name)
    target = cls.from_options(opts)
    knobs = parse_knobs(opts.knob)
    workload = cls.workload_from_options(opts)
    if opts.action == "setup":
        target.start(knobs, workload)
        return target.describe()
    if opts.action == "run":
        return target.run({**workload, "knobs": knobs}).to_json()
    if opts.action == "reset":
        target.reset(workload)
        return None
    if opts.action == "teardown":
        target.stop()
        return None
    if opts.action == "fault":
        if cls.faults and opts.fault not in cls.faults:
            raise TargetError(f"--fault {opts.fault!r}: expected one of {', '.join(cls.faults)}")
        return target.fault(getattr(opts, "fault", "") or "", opts)
    if opts.action == "restore":
        return target.restore(opts)
    return target.describe()


def main(argv: list[str] | None = None) -> int:
    """The command-line entry; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "ycsb":  # a workload driver over the targets, with its own actions
        from assay.targets.ycsb import main as ycsb_main

        return ycsb_main(args[1:])
    if not args or args[0] not in TARGETS:
        asked = bool(args) and args[0] in ("-h", "--help")
        print(
            "usage: python3 -m assay.targets NAME ACTION [options]\n"
            f"  NAME: {', '.join(TARGETS)}\n  ACTION: {', '.join(ACTIONS)}\n"
            "  python3 -m assay.targets ycsb load|run|teardown --db BINDING ...: YCSB\n"
            "  (go-ycsb) against the sqlite, redis, postgres or etcd target\n"
            "  python3 -m assay.targets NAME --help lists a target's options\n"
            "  postgres, redis and etcd keep their state in a private directory (mode 700)\n"
            f"  of this user, by default {default_state_dir('NAME')}",
            file=sys.stdout if asked else sys.stderr,
        )
        return 0 if asked else 2
    name = args[0]
    try:
        out = execute(name, args[1:])
    except TargetError as exc:
        print(f"error: {name}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    if out is not None:
        text = json.dumps(out, separators=(",", ":"))
        try:
            print(text, flush=True)
        except BrokenPipeError:  # the reader went away (| head): not our error
            return 0
        opts_output = _output_of(args)
        if opts_output:
            with open(opts_output, "w", encoding="utf-8") as f:
                f.write(text + "\n")
    return 0


def _output_of(args: list[str]) -> str | None:
    for i, a in enumerate(args):
        if a == "--output" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--output="):
            return a.split("=", 1)[1]
    return None


if __name__ == "__main__":
    sys.exit(main())
