"""``info`` and ``validate`` on archives in S3 and on a web server, as a user runs them, and the
storage options: ``--storage-options`` over the config's ``[storage]`` table, key by key."""

from __future__ import annotations

import json
import os

import pytest

from mzpeak_dask.cli import build_parser
from mzpeak_dask.cli.args import storage_options

from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import s3_client


@pytest.mark.slow  # four commands in fresh processes
def test_info_and_validate_read_an_s3_archive(s3_endpoint, bucket, reference_archives):
    s3_client(s3_endpoint).upload_file(
        str(reference_archives / "small.mzpeak"), bucket, "runs/small.mzpeak"
    )
    url = f"s3://{bucket}/runs/small.mzpeak"
    local = run_cli("info", "--json", str(reference_archives / "small.mzpeak"))
    remote = run_cli("info", "--json", url, env=os.environ.copy())
    assert remote.returncode == 0, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert b.pop("path") == url
    a.pop("path")
    assert a == b
    checked = run_cli("validate", url, env=os.environ.copy())
    here = run_cli("validate", str(reference_archives / "small.mzpeak"))
    assert checked.returncode == here.returncode == 0, checked.stderr
    assert checked.stdout.replace(url, "X") == here.stdout.replace(
        str(reference_archives / "small.mzpeak"), "X"
    )


def test_validate_over_https(http_server):
    url = f"{http_server.url}/small.chunked.mzpeak"
    checked = run_cli("validate", "--json", url)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)[0]["valid"] is True


def test_a_missing_client_fails_the_command_in_one_line(tmp_path):
    hidden = tmp_path / "hidden" / "gcsfs"  # first on the path: gcsfs as if not installed
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError(\"No module named 'gcsfs'\")\n")
    path = os.pathsep.join(filter(None, [str(hidden.parent), os.environ.get("PYTHONPATH")]))
    result = run_cli("info", "gs://bucket/run.mzpeak", env={**os.environ, "PYTHONPATH": path})
    one_line_error(result, "gs://bucket/run.mzpeak", "pip install 'mzpeak-dask[gcs]'")


def test_storage_options_command_line_over_config_key_by_key(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[storage]\noptions = {anon = true, default_block_size = 1024}\n")
    parser = build_parser()
    args = parser.parse_args(["info", "--config", str(config), "x.mzpeak"])
    assert storage_options(args).options == {"anon": True, "default_block_size": 1024}
    args = parser.parse_args(
        ["info", "--config", str(config), "--storage-options", '{"anon": false}', "x.mzpeak"]
    )
    assert storage_options(args).options == {"anon": False, "default_block_size": 1024}
    bad = run_cli("info", "--storage-options", "[1]", "x.mzpeak")
    assert bad.returncode == 2 and "not a JSON object" in bad.stderr
