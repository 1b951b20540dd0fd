#!/usr/bin/env bash
# kafka-run-class.sh CLASS [ARGS...]: run a class from /opt/kafka/libs, as Apache Kafka's script of the
# same name does. Honours KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_LOG4J_OPTS, KAFKA_OPTS, CLASSPATH.
if [ $# -lt 1 ]; then echo "USAGE: $0 CLASS [ARGS...]" >&2; exit 1; fi
base_dir=$(cd "$(dirname "$0")/.." && pwd)
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx256m}
KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true}
KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$base_dir/config/tools-log4j2.properties}
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
# The class-data archive bin/prepare-fast-start.sh recorded when the image was built: classes mapped, not parsed.
CDS=""
if [ -r "$base_dir/kafka.jsa" ]; then CDS="-XX:SharedArchiveFile=$base_dir/kafka.jsa -Xlog:cds=off -Xlog:cds+dynamic=off"; fi
# The *_OPTS variables are lists of options: split them on purpose.
# shellcheck disable=SC2086
exec "$JAVA" $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS $KAFKA_LOG4J_OPTS $CDS ${KAFKA_OPTS:-} \
  -cp "$base_dir/libs/*${CLASSPATH:+:$CLASSPATH}" "$@"
