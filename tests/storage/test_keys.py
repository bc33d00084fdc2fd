"""A name from outside (an object key, a manifest's URL) becomes a local path or an output key
only if it stays inside what it is joined to."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from mzpeak_dask.errors import InputError
from mzpeak_dask.storage.keys import safe_relative


@pytest.mark.parametrize(
    "name",
    ["a.mzML", "raw/b/run 1.mzML.gz", "host:8080/x/y.mzML", "é/ü.mgf", "..a/b..", "x" * 255],
)
def test_plain_names_are_kept(name):
    relative = safe_relative(name)
    assert relative == PurePosixPath(name) and not relative.is_absolute()
    assert ".." not in relative.parts


@pytest.mark.parametrize(
    "name",
    [
        "",
        "..",
        "../a.mzML",
        "a/../../b.mzML",
        "a/./b.mzML",
        "./a.mzML",
        "/etc/a.mzML",
        "a//b.mzML",
        "a/",
        "a\x00b.mzML",
        "a\nb.mzML",
        "a\x1b[2Jb.mzML",
        "x" * 256 + ".mzML",
        "a/" * 600 + "b.mzML",
    ],
)
def test_names_that_would_leave_their_folder_are_refused(name):
    with pytest.raises(InputError) as refused:
        safe_relative(name, "s3://bucket/" + name)
    line = str(refused.value)
    assert "\n" not in line and "\x00" not in line and "\x1b" not in line
    assert line.startswith("s3://bucket/") and line.endswith("not converted")
