"""The commands that convert and check archives: ``convert``, ``info``, ``batch``,
``validate`` and ``cluster-script`` (registered by :mod:`mzpeak_dask.cli`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import MzPeakDaskError, OutputError
from ..options import BatchOptions, ClusterOptions, ConvertOptions
from ..storage.keys import shown
from ..storage.urls import basename, is_url, join, local_path
from ..support.pathtext import human_size, plural, redact, text, uri
from .args import GROUP_FLAGS, add_options, command, options, said

EXIT_FAILED = 1


def cmd_convert(args: argparse.Namespace) -> int:
    from ..convert import convert_many
    from .progress import ProgressReporter

    convert, cluster = options(args, ConvertOptions), options(args, ClusterOptions)
    existed = os.path.lexists(local_path(args.output))
    if any(is_url(p) for p in [*args.inputs, args.output]):
        jobs = _url_jobs(args.inputs, args.output)
    else:
        output = local_path(args.output)
        jobs = _jobs([Path(local_path(p)) for p in args.inputs], Path(output), str(output))
    progress = None if args.quiet else ProgressReporter(len(jobs))
    announce = None if args.quiet else partial(print, file=sys.stderr)
    made = None if is_url(args.output) or existed else Path(local_path(args.output))
    try:
        results = convert_many(
            jobs,
            convert,
            cluster=cluster,
            progress=progress,
            fail_fast=len(jobs) == 1,
            announce=announce,
        )
    finally:
        if progress:
            progress.close()
        _unmade(made)
    failed = 0
    for result in results:
        if isinstance(result, BaseException):
            failed += 1
            print(f"error: {said(result)}", file=sys.stderr)
            continue
        for warning in result.warnings:
            print(f"warning: {text(warning)}", file=sys.stderr)
        if args.json:  # valid UTF-8 whatever the names; the URIs give the exact paths
            fields = result.to_dict()
            for key in ("input", "output"):
                exact = uri(fields[key])  # a URL as it is, its password hidden
                fields[key], fields[f"{key}_uri"] = text(fields[key]), exact
            print(json.dumps(fields))
        elif not args.quiet:
            print(
                f"{text(result.input)} -> {text(result.output)}: "
                f"{plural(result.spectra, 'spectrum', 'spectra')}, "
                f"{plural(result.points, 'point')}, "
                f"{plural(result.chromatograms, 'chromatogram')}, "
                f"{human_size(result.output_bytes)} "
                f"({result.output_bytes / max(result.input_bytes, 1):.2f}x input) "
                f"in {result.seconds:.1f} s"
            )
    return EXIT_FAILED if failed else 0


def _jobs(inputs: list[Path], output: Path, named: str) -> list[tuple[Path, Path]]:
    """One input to an archive path, or several into a folder (made if need be, as is
    OUTPUT ending in a slash: ``convert run.mzML out/``; :func:`_unmade` removes it again
    if it is left empty)."""
    from ..convert import archive_names, is_archive_folder

    folder = output.is_dir() and not is_archive_folder(output)
    wants_folder = len(inputs) > 1 or named.endswith(("/", os.sep))
    if not wants_folder and not folder:
        return [(inputs[0], output)]
    if not folder and (output.is_dir() or output.exists()):
        what = "is an mzPeak archive" if output.is_dir() else "is not a directory"
        raise MzPeakDaskError(f"{output}: {what}; with several inputs, OUTPUT is a folder")
    if not folder:
        try:
            output.mkdir(parents=True)
        except OSError as exc:
            raise OutputError(f"{output}: cannot make the folder ({exc.strerror})") from None
    return [(i, output / name) for i, name in zip(inputs, archive_names(inputs), strict=True)]


def _unmade(folder: Path | None) -> None:
    """Remove the output folder this command made if nothing was written into it."""
    if folder is not None and folder.is_dir():
        try:
            folder.rmdir()  # only if empty
        except OSError:
            pass


def _url_jobs(inputs: list[str], output: str) -> list[tuple[str, str]]:
    """Jobs with URLs: one input to OUTPUT, or several under the prefix OUTPUT/ (or folder)."""
    from ..convert import archive_names

    if len(inputs) == 1 and not output.endswith("/") and not Path(output).is_dir():
        return [(inputs[0], output)]
    names = archive_names([Path(basename(i)) for i in inputs])
    where = (lambda n: join(output, n)) if is_url(output) else (lambda n: str(Path(output) / n))
    return [(i, where(n)) for i, n in zip(inputs, names, strict=True)]


def cmd_info(args: argparse.Namespace) -> int:
    from ..analysis.run_folders import expand_archives
    from ..read.archive import open_archive
    from ..read.summary import format_summary, summarize

    for path in expand_archives(args.archives):
        with open_archive(path) as archive:
            summary = summarize(archive)
        summary["path"] = redact(summary["path"])  # a URL's password hidden
        print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    from ..batch.runner import run_batch
    from .progress import ProgressReporter

    convert, cluster = options(args, ConvertOptions), options(args, ClusterOptions)
    batch = options(args, BatchOptions)
    progress = None if args.quiet else ProgressReporter(0)
    try:
        if is_url(args.source) or is_url(args.output_dir):
            from ..batch.remote import run_remote_batch

            outcome = run_remote_batch(
                args.source,
                args.output_dir,
                convert,
                cluster,
                batch,
                progress=progress,
                state_dir=args.state_dir,
            )
        else:
            outcome = run_batch(
                args.source, args.output_dir, convert, cluster, batch, progress=progress
            )
    finally:
        if progress:
            progress.close()
    for record in outcome.records:
        if record["status"] in ("failed", "pending"):
            # one line each, whatever the names hold (a key may hold control characters)
            error, source = shown(text(record.get("error") or "")), shown(text(record["input"]))
            where = "" if error.startswith(source) else f"{source}: "
            print(f"failed: {where}{error}", file=sys.stderr)
    if not args.quiet:
        where = (
            text(join(args.output_dir, "batch_report.json"))
            if is_url(args.output_dir)
            else text(Path(args.output_dir) / "batch_report.json")
        )
        print(
            f"{plural(len(outcome.records), 'file')}: {outcome.count('converted')} converted, "
            f"{outcome.count('skipped')} skipped, {outcome.failed} failed "
            f"({outcome.seconds:.1f} s); report: {where}"
        )
    return EXIT_FAILED if outcome.failed else 0


def cmd_validate(args: argparse.Namespace) -> int:
    from ..analysis.run_folders import expand_archives
    from ..read.validate import ERROR, problems_json, validate

    failed = False
    documents = []
    for given in expand_archives(args.archives):
        problems, path = validate(given), redact(given)  # a URL's password hidden
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
    from ..parallel.cluster import job_script

    print(job_script(options(args, ClusterOptions)))
    return 0


ENCODING = "encoding (defaults: configs/default.toml)"
ARCHIVE_HELP = (
    "an mzPeak archive (.mzpeak file or unpacked folder), a path or a URL; a folder holding "
    "archives (a batch's output), or a bucket prefix ending in /, stands for every archive "
    "under it"
)
# a batch always replaces its own outputs: --overwrite would change nothing
BATCH_ENCODING = tuple(n for n in GROUP_FLAGS[ConvertOptions] if n != "overwrite")

CONVERT_EXAMPLES = """
  mzpeak-dask convert run.mzML run.mzpeak
  mzpeak-dask convert run.mzML.gz run.mzpeak --layout chunked --overwrite
  mzpeak-dask convert a.mzML b.mzXML c.mgf out/          # several inputs into a folder
  mzpeak-dask convert run.mzML run.mzpeak --workers 4    # a LocalCluster of 4 workers
  mzpeak-dask convert run.mzML run.mzpeak --scheduler tcp://head:8786
  mzpeak-dask convert s3://bucket/raw/run.mzML s3://bucket/mzpeak/run.mzpeak

Where it runs: with none of --cluster, --workers, --scheduler (nor those keys under
[cluster] of --config), small work runs in this process and larger work on a LocalCluster;
one line on stderr says which.
"""
INFO_EXAMPLES = """
  mzpeak-dask info run.mzpeak
  mzpeak-dask info run.mzpeak --json
  mzpeak-dask info s3://bucket/mzpeak/run.mzpeak
"""
VALIDATE_EXAMPLES = """
  mzpeak-dask validate run.mzpeak                # exit status 1 if any error
  mzpeak-dask validate a.mzpeak b.mzpeak --json
"""
BATCH_EXAMPLES = """
  mzpeak-dask batch /data/repository /data/mzpeak
  mzpeak-dask batch /data/repository /data/mzpeak --resume --retries 1
  mzpeak-dask batch manifest.csv /data/mzpeak --workers 8
  mzpeak-dask batch s3://bucket/raw s3://bucket/mzpeak --resume
  mzpeak-dask batch /data/repository /scratch/mzpeak --config configs/slurm.toml

Outputs mirror the input tree; OUTPUT_DIR gets batch_report.json, batch_report.html and
catalog.parquet. Exit status 1 if any input failed, 75 if another batch holds OUTPUT_DIR.
"""
CLUSTER_SCRIPT_EXAMPLES = """
  mzpeak-dask cluster-script --config configs/slurm.toml

The script is built from the [slurm] table of the config file; SLURM need not be installed.
"""


def add_commands(sub: Any) -> None:
    """Register ``convert``, ``info``, ``batch``, ``validate`` and ``cluster-script``."""
    p = command(
        sub,
        "convert",
        "convert MS runs into mzPeak archives",
        cmd_convert,
        CONVERT_EXAMPLES,
        description="Convert mass-spectrometry runs (mzML, mzXML, MGF, mzMLb; .gz and .bz2 "
        "too) into mzPeak archives. Inputs and OUTPUT may be paths or URLs (s3://, gs://, "
        "az://; https:// inputs).",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="mzML, mzXML, MGF or mzMLb")
    p.add_argument("output", metavar="OUTPUT", help="archive path, or a directory for several")
    p.add_argument("--json", action="store_true", help="print results as JSON lines")
    add_options(p, ConvertOptions, ENCODING)
    add_options(p, ClusterOptions)
    for name, help, handler, examples, json_help in (
        (
            "info",
            "summarize mzPeak archives",
            cmd_info,
            INFO_EXAMPLES,
            "print each summary as JSON",
        ),
        (
            "validate",
            "check archives against the format's rules",
            cmd_validate,
            VALIDATE_EXAMPLES,
            "print one JSON list: each archive, whether it is valid, and its problems",
        ),
    ):
        p = command(sub, name, help, handler, examples, quiet=False)
        p.add_argument("archives", nargs="+", metavar="ARCHIVE", help=ARCHIVE_HELP)
        p.add_argument("--json", action="store_true", help=json_help)
    p = command(
        sub,
        "batch",
        "convert a whole repository (folder tree or manifest)",
        cmd_batch,
        BATCH_EXAMPLES,
        description="Convert every MS file of a folder tree, a manifest or a bucket prefix, "
        "resumably: each input is converted, validated and recorded; one that fails is "
        "reported and the others go on. A batch always replaces its own outputs.",
    )
    p.add_argument(
        "source",
        metavar="SOURCE",
        help="a folder (searched recursively), a bucket prefix, or a manifest (one path or "
        "URL per line, or CSV/TSV with a 'path' column)",
    )
    p.add_argument("output_dir", metavar="OUTPUT_DIR", help="a folder, or a bucket prefix")
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="with URLs: where the batch's state is kept (default: "
        "~/.cache/mzpeak-dask/batches/<hash of OUTPUT_DIR>)",
    )
    add_options(p, BatchOptions)
    add_options(p, ConvertOptions, ENCODING, BATCH_ENCODING)
    add_options(p, ClusterOptions)
    command(
        sub,
        "cluster-script",
        "print the SLURM job script of --cluster slurm",
        cmd_cluster_script,
        CLUSTER_SCRIPT_EXAMPLES,
        description="Print the job script each SLURM worker job runs with --cluster slurm, "
        "from the [slurm] table of --config, without submitting anything.",
        quiet=False,
        storage=False,
    )


__all__ = ["add_commands"]
