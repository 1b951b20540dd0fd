package org.kafkachaos.contract;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;

/**
 * A member's client settings: workloads/app.py consumer_settings(), in the Java client's names. The classic
 * protocol's settings go only to a classic member (the Java client refuses them under group.protocol=consumer).
 */
public final class ConsumerSettings {
    public static final Map<String, String> ASSIGNORS = Map.of(
            "range", "org.apache.kafka.clients.consumer.RangeAssignor",
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
            "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
    public static final String ENV_PREFIX = "KAFKA_CHAOS_CLIENT_";  // workloads/security.py

    private ConsumerSettings() {
    }

    public static Properties of(MemberConfig cfg, Map<String, String> environment) {
        Properties p = new Properties();
        p.putAll(security(environment));
        p.put("bootstrap.servers", cfg.bootstrapServers());
        p.put("group.id", cfg.groupId());
        p.put("client.id", cfg.member());
        p.put("enable.auto.commit", String.valueOf("auto".equals(cfg.commit())));
        p.put("auto.offset.reset", "earliest");
        p.put("max.poll.interval.ms", String.valueOf(cfg.maxPollIntervalMs()));
        p.put("group.protocol", cfg.protocol());
        if ("classic".equals(cfg.protocol())) {
            if (cfg.assignor() != null) {
                p.put("partition.assignment.strategy", ASSIGNORS.getOrDefault(cfg.assignor(), cfg.assignor()));
            }
            p.put("session.timeout.ms", String.valueOf(cfg.sessionTimeoutMs()));
            p.put("heartbeat.interval.ms", String.valueOf(cfg.heartbeatIntervalMs()));
        } else if (cfg.remoteAssignor() != null) {
            p.put("group.remote.assignor", cfg.remoteAssignor());
        }
        if ("auto".equals(cfg.commit())) {
            // the Java client's auto-commit commits, in poll(), the positions of what earlier polls handed over
            int interval = cfg.autoCommitIntervalMs() != null && cfg.autoCommitIntervalMs() != 0 ? cfg.autoCommitIntervalMs() : 5000;
            p.put("auto.commit.interval.ms", String.valueOf(interval));
        }
        if (cfg.instanceId() != null) {
            p.put("group.instance.id", cfg.instanceId());
        }
        if (cfg.metadataRefreshMs() != null && cfg.metadataRefreshMs() != 0) {
            p.put("metadata.max.age.ms", String.valueOf(cfg.metadataRefreshMs()));
        }
        p.put("max.poll.records", String.valueOf(cfg.batchSize()));  // librdkafka's consume(batch_size)
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        cfg.hostedSettings().forEach((k, v) -> p.put(k, property(v)));
        cfg.extra().forEach((k, v) -> p.put(k, property(v)));
        return p;
    }

    /** A JSON value as a client property: a list as the Java client's comma-separated form. */
    public static String property(Object value) {
        if (value instanceof List) {
            return ((List<?>) value).stream().map(String::valueOf).collect(Collectors.joining(","));
        }
        return String.valueOf(value);
    }

    /**
     * KAFKA_CHAOS_CLIENT_&lt;PROPERTY&gt; (librdkafka's names, workloads/security.py) in the Java client's terms: the
     * names both clients share pass as they are; librdkafka's sasl.username/sasl.password become a JAAS login and
     * ssl.ca.location a PEM trust store.
     */
    public static Properties security(Map<String, String> environment) {
        Properties p = new Properties();
        environment.forEach((key, value) -> {
            if (key.startsWith(ENV_PREFIX)) {
                p.put(key.substring(ENV_PREFIX.length()).toLowerCase(Locale.ROOT).replace('_', '.'), value);
            }
        });
        Object user = p.remove("sasl.username");
        Object password = p.remove("sasl.password");
        if (user != null && !p.containsKey("sasl.jaas.config")) {
            String mechanism = p.getProperty("sasl.mechanism", p.getProperty("sasl.mechanisms", "PLAIN"));
            String module = mechanism.toUpperCase(Locale.ROOT).startsWith("SCRAM")
                    ? "org.apache.kafka.common.security.scram.ScramLoginModule"
                    : "org.apache.kafka.common.security.plain.PlainLoginModule";
            p.put("sasl.jaas.config", module + " required username=\"" + jaas(user) + "\" password=\""
                    + jaas(password == null ? "" : password) + "\";");
        }
        Object mechanisms = p.remove("sasl.mechanisms");  // librdkafka's alias
        if (mechanisms != null) {
            p.putIfAbsent("sasl.mechanism", mechanisms);
        }
        Object ca = p.remove("ssl.ca.location");
        if (ca != null) {
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", ca);
        }
        return p;
    }

    private static String jaas(Object value) {
        return String.valueOf(value).replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
