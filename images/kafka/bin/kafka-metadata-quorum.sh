#!/usr/bin/env bash
# kafka-metadata-quorum.sh ARGS...: Apache Kafka's script of the same name (org.apache.kafka.tools.MetadataQuorumCommand).
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.MetadataQuorumCommand "$@"
