"""The ``mzpeak-dask`` command: thin subcommands over the public API.

Errors print one line (``error: FILE: [spectrum ID: ]what``) and exit non-zero; ``--verbose``
adds tracebacks. Options follow one precedence rule: command line > ``--config`` > defaults.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import traceback
from pathlib import Path

from .cli_args import (
    add_cluster_options,
    add_common,
    add_convert_options,
    options_from,
    picked,
)
from .errors import MzPeakDaskError, OptionsError, OutputBusyError
from .export.commands import add_commands
from .options import load_config, resolve
from .pathtext import text, uri

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BUSY = 75  # EX_TEMPFAIL: another batch holds the output folder; try again later
EXIT_INTERRUPTED = 130


def cmd_convert(args: argparse.Namespace) -> int:
    from .convert import archive_names, convert_many, is_archive_folder
    from .parallel.progress import ProgressReporter

    options, cluster = options_from(args)
    inputs = [Path(p) for p in args.inputs]
    output = Path(args.output)
    folder = output.is_dir() and not is_archive_folder(output)
    if len(inputs) == 1 and not folder:
        jobs = [(inputs[0], output)]
    else:
        if not folder:
            what = "is an mzPeak archive" if output.is_dir() else "is not a directory"
            raise MzPeakDaskError(
                f"{output}: {what}; with several inputs, OUTPUT must be an existing directory"
            )
        jobs = [(i, output / name) for i, name in zip(inputs, archive_names(inputs), strict=True)]
    progress = None if args.quiet else ProgressReporter(len(jobs))
    try:
        results = convert_many(
            jobs, options, cluster=cluster, progress=progress, fail_fast=len(jobs) == 1
        )
    finally:
        if progress:
            progress.close()
    failed = 0
    for result in results:
        if isinstance(result, BaseException):
            failed += 1
            print(f"error: {text(result)}", file=sys.stderr)
            continue
        for warning in result.warnings:
            print(f"warning: {text(warning)}", file=sys.stderr)
        if args.json:  # valid UTF-8 whatever the names; the URIs give the exact paths
            fields = result.to_dict()
            for key in ("input", "output"):
                fields[key], fields[f"{key}_uri"] = text(fields[key]), uri(fields[key])
            print(json.dumps(fields))
        elif not args.quiet:
            print(
                f"{text(result.input)} -> {text(result.output)}: {result.spectra:,} spectra, "
                f"{result.points:,} points, {result.chromatograms:,} chromatograms, "
                f"{result.output_bytes:,} bytes "
                f"({result.output_bytes / max(result.input_bytes, 1):.2f}x input) "
                f"in {result.seconds:.1f} s"
            )
    return EXIT_FAILED if failed else 0


def cmd_info(args: argparse.Namespace) -> int:
    from .read.archive import open_archive
    from .read.summary import format_summary, summarize

    for path in args.archives:
        with open_archive(path) as archive:
            summary = summarize(archive)
        print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    from .batch.runner import run_batch
    from .options import BatchOptions
    from .parallel.progress import ProgressReporter

    options, cluster = options_from(args)
    batch = resolve(BatchOptions, load_config(args.config), picked(args, BatchOptions))
    progress = None if args.quiet else ProgressReporter(0)
    try:
        outcome = run_batch(
            args.source, args.output_dir, options, cluster, batch, progress=progress
        )
    finally:
        if progress:
            progress.close()
    for record in outcome.records:
        if record["status"] in ("failed", "pending"):
            error, source = record.get("error") or "", text(record["input"])
            where = "" if error.startswith(source) else f"{source}: "
            print(f"failed: {where}{error}", file=sys.stderr)
    if not args.quiet:
        where = text(Path(args.output_dir) / "batch_report.json")
        print(
            f"{len(outcome.records)} files: {outcome.count('converted')} converted, "
            f"{outcome.count('skipped')} skipped, {outcome.failed} failed "
            f"({outcome.seconds:.1f} s); report: {where}"
        )
    return EXIT_FAILED if outcome.failed else 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .read.validate import ERROR, problems_json, validate

    failed = False
    documents = []
    for path in args.archives:
        problems = validate(path)
        failed = failed or any(p.severity == ERROR for p in problems)
        if args.json:
            documents.append(
                {
                    "archive": path,
                    "valid": not any(p.severity == ERROR for p in problems),
                    "problems": problems_json(problems),
                }
            )
        else:
            for problem in problems:
                print(f"{path}: {problem}")
            if not problems:
                print(f"{path}: valid")
    if args.json:
        print(json.dumps(documents, indent=2))
    return EXIT_FAILED if failed else 0


def cmd_cluster_script(args: argparse.Namespace) -> int:
    from .parallel.cluster import job_script

    _, cluster = options_from(args)
    print(job_script(cluster))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mzpeak-dask", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("convert", help="convert MS runs into mzPeak archives")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="mzML, mzXML, MGF or mzMLb")
    p.add_argument("output", metavar="OUTPUT", help="archive path, or a directory for several")
    p.add_argument("--json", action="store_true", help="print results as JSON lines")
    add_convert_options(p)
    add_cluster_options(p)
    add_common(p)
    p.set_defaults(func=cmd_convert)
    p = sub.add_parser("info", help="summarize mzPeak archives")
    p.add_argument("archives", nargs="+", metavar="ARCHIVE")
    p.add_argument("--json", action="store_true")
    add_common(p)
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("batch", help="convert a whole repository (folder tree or manifest)")
    p.add_argument(
        "source",
        metavar="SOURCE",
        help="a folder (searched recursively) or a "
        "manifest (one path per line, or CSV/TSV with a 'path' column)",
    )
    p.add_argument("output_dir", metavar="OUTPUT_DIR")
    p.add_argument(
        "--resume",
        action="store_const",
        const=True,
        help="skip inputs whose output is valid and made from the same input",
    )
    p.add_argument("--retries", type=int, help="extra attempts for failed inputs")
    p.add_argument(
        "--no-reports",
        dest="reports",
        action="store_const",
        const=False,
        help="only batch_report.json (no HTML report, no catalog)",
    )
    add_convert_options(p)
    add_cluster_options(p)
    add_common(p)
    p.set_defaults(func=cmd_batch)
    p = sub.add_parser("validate", help="check archives against the format's rules")
    p.add_argument("archives", nargs="+", metavar="ARCHIVE")
    p.add_argument("--json", action="store_true")
    add_common(p)
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser(
        "cluster-script", help="print the SLURM batch script --cluster slurm would submit"
    )
    add_cluster_options(p)
    add_common(p)
    p.set_defaults(func=cmd_cluster_script)
    add_commands(sub)
    return parser


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _handle_stop_signals() -> None:
    """SIGTERM (what SLURM and systemd send at a time limit) stops as cleanly as Ctrl-C; and
    Ctrl-C works even when a non-interactive shell started us with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _handle_stop_signals()
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:  # Dask logs its lifecycle at INFO (read when distributed is imported)
        # (workers log every failed task at ERROR; the coordinator reports each one itself)
        os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    try:
        return args.func(args)
    except MzPeakDaskError as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"error: {text(exc)}", file=sys.stderr)
        if isinstance(exc, OutputBusyError):
            return EXIT_BUSY
        return EXIT_USAGE if isinstance(exc, OptionsError) else EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted: partial outputs removed", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug, not bad input: still one line unless --verbose
        if args.verbose:
            traceback.print_exc()
        print(
            f"error: internal error {type(exc).__name__}: {text(exc)} (rerun with --verbose)",
            file=sys.stderr,
        )
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
