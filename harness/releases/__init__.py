"""Releases: which Kafka and client versions a run uses (versions.env), and getting a release that is not here yet."""
