"""Pages: a run's report, the trend across nights, a comparison across runs."""
