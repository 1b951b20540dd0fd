#!/usr/bin/env bash
# kafka-console-consumer.sh ARGS...: Apache Kafka's script of the same name (org.apache.kafka.tools.consumer.ConsoleConsumer).
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx512m}
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.consumer.ConsoleConsumer "$@"
