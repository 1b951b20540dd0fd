#!/usr/bin/env bash
# kafka-get-offsets.sh ARGS...: Apache Kafka's script of the same name (org.apache.kafka.tools.GetOffsetShell).
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.GetOffsetShell "$@"
