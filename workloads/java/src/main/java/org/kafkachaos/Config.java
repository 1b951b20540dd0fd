package org.kafkachaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The typed configs of workloads/config.py, as the harness hands them over: one JSON document (a HostConfig) in the
 * environment variable KAFKA_CHAOS_WORKLOAD_CONFIG, never on the command line.
 */
final class Config {
    static final String ENV_VAR = "KAFKA_CHAOS_WORKLOAD_CONFIG";
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Config() {
    }

    /** workloads.config.ProcessingConfig: the application's work per batch. */
    record Processing(double perRecordMs, double perBatchMs, String distribution, long seed) {
        static Processing of(JsonNode node) {
            if (node == null || node.isNull()) {
                return new Processing(0, 0, "fixed", 0);
            }
            return new Processing(node.path("per_record_ms").asDouble(0), node.path("per_batch_ms").asDouble(0),
                    node.path("distribution").asText("fixed"), node.path("seed").asLong(0));
        }
    }

    /** workloads.config.MemberConfig (the fields a member reads; `release` is the launcher's). */
    record Member(String member, String runDir, String client, String bootstrapServers, String groupId,
                  List<String> topics, String pattern, Integer metadataRefreshMs, String protocol, String assignor,
                  String remoteAssignor, int sessionTimeoutMs, int heartbeatIntervalMs, int maxPollIntervalMs,
                  String commit, Integer autoCommitIntervalMs, Processing processing, int batchSize,
                  Map<String, Object> extra, String instanceId, List<String> subscribedTopics, String host,
                  Map<String, Object> hostedSettings) {
        static Member of(JsonNode n) {
            return new Member(text(n, "member"), text(n, "run_dir"), text(n, "client"), text(n, "bootstrap_servers"),
                    text(n, "group_id"), strings(n.get("topics")), text(n, "pattern"), integer(n, "metadata_refresh_ms"),
                    text(n, "protocol"), text(n, "assignor"), text(n, "remote_assignor"),
                    n.path("session_timeout_ms").asInt(), n.path("heartbeat_interval_ms").asInt(),
                    n.path("max_poll_interval_ms").asInt(), text(n, "commit"), integer(n, "auto_commit_interval_ms"),
                    Processing.of(n.get("processing")), n.path("batch_size").asInt(), map(n.get("extra")),
                    text(n, "instance_id"), strings(n.get("subscribed_topics")), text(n, "host"),
                    map(n.get("hosted_settings")));
        }

        /** The topics it subscribes to: its own (a member spec's) or all of the run's. */
        List<String> subscription() {
            return subscribedTopics != null ? subscribedTopics : topics;
        }

        /** The assignor as the `started` facts name it: the client-side one, else (KIP-848) the remote one. */
        String assignorFact() {
            return assignor != null ? assignor : remoteAssignor;
        }
    }

    /** workloads.config.HostConfig: one process, many members. */
    record Host(String host, String runDir, List<Member> members) {
        static Host of(JsonNode n) {
            List<Member> members = new ArrayList<>();
            for (JsonNode m : n.path("members")) {
                members.add(Member.of(m));
            }
            return new Host(text(n, "host"), text(n, "run_dir"), members);
        }
    }

    static Host fromEnvironment() {
        String text = System.getenv(ENV_VAR);
        if (text == null) {
            throw new IllegalStateException(ENV_VAR + " is not set: workload processes are started by the kafka-chaos harness");
        }
        return parse(text);
    }

    static Host parse(String text) {
        try {
            return Host.of(MAPPER.readTree(text));
        } catch (IOException e) {
            throw new IllegalArgumentException(ENV_VAR + " is not a host config: " + e.getMessage(), e);
        }
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    private static Integer integer(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? null : v.asInt();
    }

    private static List<String> strings(JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        List<String> out = new ArrayList<>();
        n.forEach(item -> out.add(item.asText()));
        return out;
    }

    /** A JSON object as plain Java values (String, Long, Double, Boolean, List, Map, null), in its order. */
    static Map<String, Object> map(JsonNode n) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (n == null || !n.isObject()) {
            return out;
        }
        for (Map.Entry<String, JsonNode> e : n.properties()) {
            out.put(e.getKey(), plain(e.getValue()));
        }
        return out;
    }

    static Object plain(JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isObject()) {
            return map(v);
        }
        if (v.isArray()) {
            List<Object> out = new ArrayList<>();
            v.forEach(item -> out.add(plain(item)));
            return out;
        }
        if (v.isBoolean()) {
            return v.asBoolean();
        }
        if (v.isIntegralNumber()) {
            return v.asLong();
        }
        if (v.isNumber()) {
            return v.asDouble();
        }
        return v.asText();
    }
}
