#!/usr/bin/env bash
# prepare-fast-start.sh: run once when the image is built; keeps in the image what makes a broker start sooner.
#   /opt/kafka/bootstrap/bootstrap.checkpoint  what `kafka-storage.sh format` writes beside meta.properties for a
#       node of a static quorum (this release's feature levels, no cluster id): a container copies it and writes
#       its own meta.properties (harness/broker_config.startup_script), so no formatting JVM runs at start-up.
#   /opt/kafka/kafka.jsa  a class-data archive (the JDK's dynamic AppCDS) of the classes a broker loads while it
#       starts and serves a topic; kafka-run-class.sh maps it into every JVM of this image.
set -euo pipefail
base=/opt/kafka
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/server.properties" <<EOF
node.id=1
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:19093
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$work/data
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
group.initial.rebalance.delay.ms=0
EOF
"$base/bin/kafka-storage.sh" format -t kafka-chaos-prepare00 -c "$work/server.properties" >/dev/null
mkdir -p "$base/bootstrap"
cp "$work/data/bootstrap.checkpoint" "$base/bootstrap/"

KAFKA_OPTS="-XX:ArchiveClassesAtExit=$base/kafka.jsa" "$base/bin/kafka-server-start.sh" "$work/server.properties" \
  >"$work/broker.log" 2>&1 &
broker=$!
for _ in $(seq 600); do
  grep -q 'Kafka Server started' "$work/broker.log" && break
  kill -0 "$broker" 2>/dev/null || { tail -30 "$work/broker.log" >&2; exit 1; }
  sleep 0.2
done
grep -q 'Kafka Server started' "$work/broker.log" || { tail -30 "$work/broker.log" >&2; exit 1; }
# a topic, records in and out and a group: the classes of replication, the log and the group coordinator
"$base/bin/kafka-topics.sh" --bootstrap-server 127.0.0.1:19092 --create --topic warm --partitions 2 \
  --replication-factor 1 >/dev/null
# (the verifiable clients: every release from 3.7 on has them in org.apache.kafka.tools, where the console
# clients moved there only in 3.8/4.0)
"$base/bin/kafka-verifiable-producer.sh" --bootstrap-server 127.0.0.1:19092 --topic warm --max-messages 100 >/dev/null
"$base/bin/kafka-verifiable-consumer.sh" --bootstrap-server 127.0.0.1:19092 --topic warm --group-id warm \
  --max-messages 100 >/dev/null
kill -TERM "$broker"
wait "$broker" || true  # a broker stopped by SIGTERM exits 143; the archive is written as the JVM exits
test -s "$base/kafka.jsa"
