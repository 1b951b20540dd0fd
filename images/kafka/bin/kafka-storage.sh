#!/usr/bin/env bash
# kafka-storage.sh ARGS...: Apache Kafka's script of the same name (kafka.tools.StorageTool).
exec "$(dirname "$0")/kafka-run-class.sh" kafka.tools.StorageTool "$@"
