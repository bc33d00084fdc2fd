"""Helpers the tests and benchmarks share, one module for each kind: the command line as users
run it (cli), the real runs read by pyteomics (real_runs), archive comparisons (archives),
buckets and ranged conversions (s3), loopback servers (servers, fault_proxy), generated and
damaged inputs (batch_inputs, generated_runs, hostile_inputs, archive_damage), large inputs
(replicate) and the reference reader of the round-trip tests (oracle)."""
