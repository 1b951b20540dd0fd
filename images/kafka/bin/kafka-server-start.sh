#!/usr/bin/env bash
# kafka-server-start.sh server.properties [--override property=value]...: a broker and/or controller in
# the foreground, as Apache Kafka's script of the same name. Logs go to stdout (config/log4j2.properties).
if [ $# -lt 1 ]; then echo "USAGE: $0 server.properties [--override property=value]*" >&2; exit 1; fi
base_dir=$(cd "$(dirname "$0")/.." && pwd)
export KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$base_dir/config/log4j2.properties}
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx512m -Xms512m}
exec "$base_dir/bin/kafka-run-class.sh" kafka.Kafka "$@"
