"""The ``mzpeak-dask`` command: thin subcommands over the public API.

Errors print one line (``error: FILE: [spectrum ID: ]what``) and exit non-zero; ``--verbose``
adds tracebacks. Options follow one precedence rule: command line > ``--config`` > defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import traceback

from .._version import __version__
from ..errors import MzPeakDaskError, OptionsError, OutputBusyError
from ..storage.urls import set_default_options
from ..support.pathtext import text
from . import analysis, convert, quantify
from .args import said, storage_options
from .checks import refuse_conflicts
from .convert import EXIT_FAILED
from .hidden import hide_storage_options
from .logs import quiet_dask_logs

EXIT_USAGE = 2
EXIT_BUSY = 75  # EX_TEMPFAIL: another batch holds the output folder; try again later
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141  # 128 + SIGPIPE, as a process the closed pipe had stopped


DESCRIPTION = """\
Convert mass-spectrometry runs (mzML, mzXML, MGF, mzMLb; Thermo .raw and Bruker .d with the
thermo and bruker extras) into PSI mzPeak archives, one run or a whole repository at a time, on
this machine, a Dask cluster or SLURM; summarize and check archives; export them to Zarr; and
across many runs compute chromatograms, quantify target lists and draw ion maps."""

EPILOG = """\
examples:
  mzpeak-dask convert run.mzML run.mzpeak
  mzpeak-dask info run.mzpeak
  mzpeak-dask validate run.mzpeak
  mzpeak-dask batch /data/repository /data/mzpeak --resume
  mzpeak-dask export-zarr a.mzpeak b.mzpeak runs.zarr
  mzpeak-dask xic runs.zarr --mz 445.12 --plot xic.png
  mzpeak-dask tic converted/ --plot tic.png --output tics.parquet
  mzpeak-dask quantify converted/ --targets targets.csv --output q.parquet --plot heatmap.png
  mzpeak-dask ion-map run.mzpeak --mz-bins 100:2000:1000 --rt-bins 0:60:600 --plot map.png

'mzpeak-dask COMMAND --help' describes a command. Options follow one rule: command line >
--config file > built-in defaults (configs/default.toml lists them all)."""


def build_parser() -> argparse.ArgumentParser:
    """The ``mzpeak-dask`` argument parser, with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="mzpeak-dask",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="one of these commands:"
    )
    convert.add_commands(sub)
    analysis.add_commands(sub)
    quantify.add_commands(sub)
    return parser


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _handle_stop_signals() -> None:
    """SIGTERM (what SLURM and systemd send at a time limit) stops as cleanly as Ctrl-C; and
    Ctrl-C works even when a non-interactive shell started us with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop)


class _Redacted(logging.Formatter):
    """Log lines with the passwords of URLs hidden (:func:`~..pathtext.redact`)."""

    def format(self, record: logging.LogRecord) -> str:
        return text(super().format(record))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if argv is None and getattr(args, "storage_options", None) is not None:
        hide_storage_options()  # from this process' command line, as soon as it runs
    _handle_stop_signals()
    shown = logging.StreamHandler()
    shown.setFormatter(_Redacted("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, handlers=[shown])
    if not args.verbose:
        quiet_dask_logs()
    try:
        refuse_conflicts(args)  # a flag that cannot act with the others: before any work
        set_default_options(storage_options(args).options)  # workers inherit them
        return args.func(args)
    except MzPeakDaskError as exc:
        if args.verbose:
            print(text(traceback.format_exc()), end="", file=sys.stderr)  # passwords hidden
        print(f"error: {said(exc)}", file=sys.stderr)
        if isinstance(exc, OutputBusyError):
            return EXIT_BUSY
        return EXIT_USAGE if isinstance(exc, OptionsError) else EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted: partial outputs removed", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # what read the output stopped (| head): stop too, quietly
        with contextlib.suppress(OSError):  # and nothing more for the closed pipe at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as exc:  # a bug, not bad input: still one line unless --verbose
        if args.verbose:
            print(text(traceback.format_exc()), end="", file=sys.stderr)  # passwords hidden
        print(
            f"error: internal error {type(exc).__name__}: {text(exc)} (rerun with --verbose)",
            file=sys.stderr,
        )
        return EXIT_FAILED


def run() -> None:
    """The command's entry point (``mzpeak-dask``, ``python -m mzpeak_dask``)."""
    sys.exit(main())
