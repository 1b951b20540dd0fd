"""Reading a run directory: its contract, its inputs (compacted), the brokers' and the coordinator's logs, and the run's
history (who owned what, when)."""
