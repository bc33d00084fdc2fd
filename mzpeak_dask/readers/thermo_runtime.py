"""Thermo's RawFileReader, reached through fisher-py (the ``thermo`` extra) and pythonnet on
Mono: loaded in the process that reads a ``.raw`` file, and only there.

Loading puts a .NET runtime (Mono, with threads of its own) into the process, so nothing
imports fisher-py or pythonnet at module level: the coordinator of a conversion on a cluster
never loads it (it only sniffs the file's signature); the spawned Dask workers that survey and
read the file do, once each, and so does the process of an inline conversion. A process loads
a file once (Thermo's thread manager, kept in a :class:`~mzpeak_dask.storage.filecache.FileCache`)
and each of its threads reads it through an accessor of its own (:func:`open_raw`): one
accessor is not safe to share between threads.

Where the extra or Mono is missing, :func:`runtime` raises one line saying what to install.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import importlib.util
import os
import threading
import warnings
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np

from ..errors import ExtraMissingError, InputError
from ..storage.filecache import per_file

EXTRA_HINT = "pip install 'mzpeak-dask[thermo]'"
MONO_HINT = "apt-get install mono-runtime libmonosgen-2.0-1 mono-devel"
# netstandard.dll ships in mono-devel only; without it the assemblies fail to load
NETSTANDARD = "/usr/lib/mono/4.5/Facades/netstandard.dll"
_LOCK = threading.Lock()


class ThermoRuntime:
    """The .NET namespaces the reader uses, once loaded."""

    def __init__(self) -> None:
        from fisher_py.net_wrapping import ThermoFisher  # loads Mono and the assemblies

        business = ThermoFisher.CommonCore.Data.Business
        self.adapter = ThermoFisher.CommonCore.RawFileReader.RawFileReaderAdapter
        self.device_ms = business.Device.MS
        self.trace_settings = business.ChromatogramTraceSettings
        self.trace_tic = business.TraceType.TIC
        self.trace_base_peak = business.TraceType.BasePeak


def missing() -> str | None:
    """What is missing to read Thermo files here, as one instruction, or None."""
    if importlib.util.find_spec("fisher_py") is None:
        return f"reading Thermo .raw files needs the 'thermo' extra: {EXTRA_HINT}"
    from clr_loader.util.find import find_libmono

    try:
        libmono = find_libmono()
    except RuntimeError:  # clr_loader raises, on Linux, where no libmono is installed
        libmono = None
    if libmono is None or not os.path.exists(NETSTANDARD):
        return f"reading Thermo .raw files needs Mono: {MONO_HINT}"
    return None


@cache
def _load() -> ThermoRuntime | str:
    reason = missing()
    if reason is not None:
        return reason
    try:
        with warnings.catch_warnings(), _floating_point_kept():
            # clr_loader warns of every Mono before 6.12 (Debian 12 has 6.8, which works)
            warnings.filterwarnings("ignore", "Hosting Mono versions", UserWarning)
            loaded = ThermoRuntime()
    except Exception as exc:  # noqa: BLE001 - pythonnet raises whatever the runtime throws
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"cannot load Thermo's RawFileReader through Mono ({first}): {MONO_HINT}"
    _no_shutdown_at_exit()
    return loaded


@contextlib.contextmanager
def _floating_point_kept() -> Iterator[None]:
    """The process' floating-point environment as it was before Mono starts: Mono sets the x87
    precision to double, which changes the last bits of numpy's least-squares fits (the m/z
    spacing models) in the process, so that a worker that had read a Thermo file wrote other
    runs' archives differently from every other process."""
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    except OSError:  # no C maths library to ask: nothing to keep
        yield
        return
    saved = ctypes.create_string_buffer(256)  # fenv_t: 32 bytes on x86-64 glibc
    kept = libm.fegetenv(saved) == 0
    try:
        yield
    finally:
        if kept:
            libm.fesetenv(saved)


def _no_shutdown_at_exit() -> None:
    """Leave Mono running until the process ends, instead of the shutdown pythonnet and
    clr_loader register at exit: that shutdown runs on the main thread, and when a worker
    thread loaded Mono (a Dask worker's task thread, since gone) it aborts the process or
    hangs in it. The main thread is attached to Mono instead (atexit runs last-in first-out,
    so before anything else registered earlier), for the .NET objects Python frees as it
    finalizes."""
    import pythonnet
    from clr_loader import mono

    atexit.unregister(pythonnet.unload)
    atexit.unregister(mono._release)
    atexit.register(_attach_this_thread)


def _attach_this_thread() -> None:
    try:
        from clr_loader.util.find import find_libmono

        mono = ctypes.CDLL(str(find_libmono()))
        mono.mono_get_root_domain.restype = ctypes.c_void_p
        mono.mono_thread_attach.argtypes = [ctypes.c_void_p]
        mono.mono_thread_attach.restype = ctypes.c_void_p
        domain = mono.mono_get_root_domain()
        if domain:
            mono.mono_thread_attach(domain)
    except (OSError, AttributeError):  # no Mono loaded after all: nothing to attach to
        pass


def runtime(name: str) -> ThermoRuntime:
    """The loaded runtime, or an :class:`ExtraMissingError` naming the input ``name``."""
    with _LOCK:  # one load per process, even when several worker threads start at once
        loaded = _load()
    if isinstance(loaded, str):
        raise ExtraMissingError(f"{name}: {loaded}")
    return loaded


def _close(handle: Any) -> None:
    handle.Dispose()


@per_file(16, close=_close)
def _opened(path: str, name: str) -> Any:
    """The file loaded once per process (Thermo's thread manager), whatever threads read it;
    more files are kept here than accessors per thread, so that an accessor a thread holds
    outlives none of its files."""
    rt = runtime(name)
    try:  # the file itself: Thermo's reader on Mono fails on a symbolic link to it
        return rt.adapter.ThreadedFileFactory(os.path.realpath(path))
    except Exception as exc:  # noqa: BLE001 - a .NET exception
        raise InputError(f"{name}: not a readable Thermo .raw file ({dotnet_error(exc)})") from None


@per_file(4, per_thread=True, close=_close)
def open_raw(path: str, name: str) -> Any:
    """The file's reader for this thread (its MS device selected): an accessor of the file
    the process loaded once (:func:`_opened`)."""
    rt = runtime(name)
    try:
        raw = _opened(path, name).CreateThreadAccessor()
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a .NET exception
        raise InputError(f"{name}: not a readable Thermo .raw file ({dotnet_error(exc)})") from None
    if raw.IsError or not raw.IsOpen:
        message = raw.FileError.ErrorMessage if raw.FileError is not None else ""
        raw.Dispose()
        raise InputError(f"{name}: not a readable Thermo .raw file ({_one_line(message)})")
    if raw.GetInstrumentCountOfType(rt.device_ms) < 1:
        raw.Dispose()
        raise InputError(f"{name}: not a readable Thermo .raw file (no mass spectrometer data)")
    raw.SelectInstrument(rt.device_ms, 1)
    return raw


def _one_line(text: str | None) -> str:
    """The gist of a .NET error text: its message, without the stack trace the reader adds."""
    words = " ".join((text or "").split())
    words = words.split(" Stacktrace:")[0]
    words = words.split("Message : ", 1)[-1]
    return words.strip() or "unreadable"


def dotnet_error(exc: BaseException) -> str:
    """One line for an exception thrown by Thermo's library."""
    return _one_line(getattr(exc, "Message", None) or str(exc))


def numbers(values: Any, dtype: type = np.float64) -> np.ndarray:
    """A .NET array of numbers as a numpy array of its own (one copy through the buffer
    protocol pythonnet gives primitive arrays); None and empty give an empty array."""
    if values is None or values.Length == 0:
        return np.empty(0, dtype=dtype)
    return np.array(memoryview(values), copy=True).astype(dtype, copy=False)
