"""The Spark engine: the session, the record-level plan and the kernels its executors run, the analysis service,
synthetic runs."""
