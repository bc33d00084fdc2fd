"""Batch conversion of whole repositories: discovery, durable state, failure isolation,
resume, validation, reports and a catalog (``mzpeak-dask batch``)."""
