#!/usr/bin/env bash
# kafka-topics.sh ARGS...: Apache Kafka's script of the same name (org.apache.kafka.tools.TopicCommand).
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.TopicCommand "$@"
