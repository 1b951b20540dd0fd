"""The pytest plugin (entry point kafka_chaos): its options and fixtures, and the assertions on a chaos run."""
