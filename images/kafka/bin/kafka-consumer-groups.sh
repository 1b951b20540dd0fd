#!/usr/bin/env bash
# kafka-consumer-groups.sh ARGS...: Apache Kafka's script of the same name (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand).
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "$@"
