"""An output that names an input's object is refused, however either is spelt (doubled
slashes, ``.`` segments, ``s3a://``, a trailing slash, an ``https://`` URL of the same S3
object), with ``--overwrite`` too: one ``error:`` line, a non-zero exit, the input untouched.
A batch of URLs whose reports would land on one of its inputs is refused before any work."""

from __future__ import annotations

import json
import os

import pytest

from ..conftest import BUNDLED
from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import s3_client


def _object(client, bucket: str, key: str) -> tuple[bytes, str]:
    answer = client.get_object(Bucket=bucket, Key=key)
    return answer["Body"].read(), answer["ETag"]


SPELLINGS = [  # (input, output): the same object
    ("s3://{b}/in/a.mzML", "s3://{b}/in/a.mzML"),
    ("s3://{b}/in/a.mzML", "s3://{b}//in/a.mzML"),
    ("s3://{b}/in/a.mzML", "s3://{b}/in/./a.mzML"),
    ("s3://{b}/in/a.mzML", "s3://{b}/in/x/../a.mzML"),
    ("s3a://{b}/in/a.mzML", "s3://{b}/in/a.mzML"),
    ("s3://{b}/in/a.mzML/", "s3://{b}/in/a.mzML"),
    ("{endpoint}/{b}/in/a.mzML", "s3://{b}/in/a.mzML"),  # path-style on the endpoint
    ("https://{b}.s3.amazonaws.com/in/a.mzML", "s3://{b}/in/a.mzML"),
    ("https://s3.us-east-1.amazonaws.com/{b}/in/a.mzML", "s3://{b}/in/a.mzML"),
]


@pytest.mark.parametrize(("source", "output"), SPELLINGS)
def test_an_output_naming_the_input_object_is_refused(s3_endpoint, bucket, source, output):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "in/a.mzML")
    before = _object(client, bucket, "in/a.mzML")
    source, output = (u.format(b=bucket, endpoint=s3_endpoint) for u in (source, output))
    result = run_cli(
        "convert", source, output, "--overwrite", "--cluster", "inline", env=os.environ.copy()
    )
    one_line_error(result, f"{output}: is the input {source}")
    assert _object(client, bucket, "in/a.mzML") == before


def test_the_endpoint_of_the_storage_options_is_known(s3_endpoint, bucket):
    """An ``http://`` URL on the host the storage option ``endpoint_url`` names is that S3
    object (``localhost``: another name than the environment's endpoint)."""
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "in/a.mzML")
    before = _object(client, bucket, "in/a.mzML")
    endpoint = s3_endpoint.replace("127.0.0.1", "localhost")
    options = json.dumps({"endpoint_url": endpoint})
    source, output = f"{endpoint}/{bucket}/in/a.mzML", f"s3://{bucket}/in/a.mzML"
    result = run_cli(
        "convert",
        source,
        output,
        "--overwrite",
        "--cluster",
        "inline",
        "--storage-options",
        options,
        env=os.environ.copy(),
    )
    one_line_error(result, "is the input")
    assert _object(client, bucket, "in/a.mzML") == before


def test_a_file_url_naming_the_input_path_is_refused(tmp_path):
    source = tmp_path / "a.mzML"
    source.write_bytes((BUNDLED / "small.mzML").read_bytes())
    before = source.read_bytes()
    for a, b in ((source.as_uri(), str(source)), (str(source), source.as_uri())):
        result = run_cli("convert", a, b, "--overwrite", "--cluster", "inline")
        one_line_error(result, "is the input")
        assert source.read_bytes() == before


def test_a_batch_whose_report_would_replace_an_input_is_refused(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "runs/small.mzML")
    client.put_object(Bucket=bucket, Key="runs/batch_report.json", Body=b'{"mine": 1}')
    before = _object(client, bucket, "runs/batch_report.json")
    manifest = tmp_path / "urls.txt"
    spelt = f"s3a://{bucket}/runs/batch_report.json"
    manifest.write_text(f"s3://{bucket}/runs/small.mzML\n{spelt}\n")
    result = run_cli(
        "batch",
        str(manifest),
        f"s3://{bucket}/runs/",
        "--cluster",
        "inline",
        "--state-dir",
        str(tmp_path / "state"),
        env=os.environ.copy(),
    )
    one_line_error(result, f"s3://{bucket}/runs/batch_report.json: is the input {spelt}")
    assert _object(client, bucket, "runs/batch_report.json") == before
    keys = [k["Key"] for k in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert sorted(keys) == ["runs/batch_report.json", "runs/small.mzML"]  # nothing written


def test_a_batch_writing_beside_its_inputs_is_allowed(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "runs/small.mzML")
    result = run_cli(
        "batch",
        f"s3://{bucket}/runs",
        f"s3://{bucket}/runs",
        "--cluster",
        "inline",
        "--state-dir",
        str(tmp_path / "state"),
        env=os.environ.copy(),
    )
    assert result.returncode == 0, result.stderr
    keys = {k["Key"] for k in client.list_objects_v2(Bucket=bucket)["Contents"]}
    assert {"runs/small.mzML", "runs/small.mzpeak", "runs/batch_report.json"} <= keys


def test_the_identity_of_an_object_whatever_its_spelling(monkeypatch):
    from mzpeak_dask.storage.urls import object_identity

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://minio.lan:9000")
    same = [
        "s3://runs/in/a.mzML",
        "S3A://Runs//in/./a.mzML/",
        "s3://key:pass@runs/in/a.mzML",
        "http://minio.lan:9000/runs/in/a.mzML",
        "https://runs.minio.lan:9000/in/a.mzML",  # virtual-hosted on the endpoint
        "https://runs.s3.eu-west-1.amazonaws.com/in/a.mzML",
        "https://s3-eu-west-1.amazonaws.com/runs/in/%61.mzML",
    ]
    assert len({object_identity(u) for u in same}) == 1
    other = [
        "s3://runs/in/A.mzML",  # keys are case-sensitive
        "gs://runs/in/a.mzML",
        "http://minio.lan:9001/runs/in/a.mzML",
        "https://example.org/runs/in/a.mzML",
    ]
    assert object_identity(same[0]) not in {object_identity(u) for u in other}
    assert object_identity("gcs://b/x") == object_identity("gs://b/x")
    assert object_identity("abfs://c@acct.dfs.core.windows.net/x") == object_identity("az://c/x")
    endpoint = {"endpoint_url": "https://store.example.org"}
    assert object_identity("https://store.example.org/runs/in/a.mzML", endpoint) == (
        object_identity(same[0])
    )
