"""File-level metadata for the footers: the source's own, plus what this conversion adds — the
converted file as a source file (with its checksums and format), this software, and a data
processing entry recording the conversion options."""

from __future__ import annotations

import copy
import hashlib
import os
from pathlib import Path
from typing import Any

from .._version import __version__
from ..format import vocabulary as V
from ..model.records import Param, RunMetadata
from ..storage.inputs import remote_input, url_sha256, vendor_files
from ..storage.origins import origin_folder, origin_of
from ..support.pathtext import redact, text

SOFTWARE_ID = "mzpeak_dask"
PROCESSING_ID = "mzpeak_dask_conversion"


HASH_BLOCK = 1 << 22


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file (it identifies the converted input; mzML's traditional SHA-1 is not
    computed, to read the file once). Runs on a worker, beside the conversion.

    A local file is read, not memory-mapped: an I/O error (a shared file system's client
    evicted, say) is then an exception, reported as the run's failure, where a mapped page
    failing to load would kill the worker with SIGBUS. Mapped, in a thread beside the task
    finishing the 102 MB run, it would have saved that task about 10 ms (105-122 ms against
    111-138 ms, medians 109 and 120, of 8 each; 72-109 ms given the digest)."""
    url = remote_input(path)
    if url:  # an input read by ranges: the object streamed once (on the worker hashing it)
        return url_sha256(url)
    digest = hashlib.sha256()
    # a vendor folder (Bruker .d): its files directly inside, by name, one after the other
    for name in vendor_files(path) if os.path.isdir(path) else [path]:
        with open(name, "rb") as f:
            while block := f.read(HASH_BLOCK):
                digest.update(block)
    return digest.hexdigest()


def _location(source: Path) -> str:
    """The folder of the input as a URI: the object's for an input staged from a URL."""
    origin = origin_of(source)  # its password, if it has one, hidden
    return redact(origin_folder(origin)) if origin else source.resolve().parent.as_uri()


def footer_metadata(
    meta: RunMetadata,
    *,
    source: Path,
    file_format: Param,
    native_id_format: Param | None,
    sha256: str,
    options: dict[str, Any],
) -> dict[str, Any]:
    """The six file-level JSON objects, with this conversion recorded."""
    footer = copy.deepcopy(meta.footer())
    params = [Param("SHA-256", V.SHA256, sha256), file_format]
    if native_id_format is not None:
        params.append(native_id_format)
    sources = footer["file_description"].setdefault("source_files", [])
    sources.append(
        {
            "id": "mzpeak_dask_input",
            "name": text(source.name),  # a name that is not UTF-8 shows its bytes as \xNN
            "location": _location(source),
            "parameters": [p.to_json() for p in params],
        }
    )
    footer["software_list"].append(
        {
            "id": SOFTWARE_ID,
            "version": __version__,
            "parameters": [
                Param("custom unreleased software tool", V.CUSTOM_SOFTWARE, "mzpeak_dask").to_json()
            ],
        }
    )
    order = 1 + max(
        (
            m.get("order") or 0
            for dp in footer["data_processing_method_list"]
            for m in dp.get("methods", [])
        ),
        default=-1,
    )
    options_text = " ".join(f"{k}={v}" for k, v in sorted(options.items()))
    footer["data_processing_method_list"].append(
        {
            "id": PROCESSING_ID,
            "methods": [
                {
                    "order": order,
                    "software_reference": SOFTWARE_ID,
                    "parameters": [
                        Param(
                            V.TERM_NAMES[V.CONVERSION_TO_MZPEAK], V.CONVERSION_TO_MZPEAK
                        ).to_json(),
                        Param("conversion options", None, options_text).to_json(),
                    ],
                }
            ],
        }
    )
    run = footer["run"]
    run.setdefault("id", source.name)
    if not run.get("default_source_file_id"):
        run["default_source_file_id"] = "mzpeak_dask_input"
    return footer
