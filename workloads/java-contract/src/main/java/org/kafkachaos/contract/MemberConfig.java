package org.kafkachaos.contract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * workloads.config.MemberConfig (the fields a member reads; `release` is the launcher's), as the harness hands it
 * over: JSON in the environment variable KAFKA_CHAOS_WORKLOAD_CONFIG, never on the command line. A command member's
 * program gets its own; the Java member program gets a host's, whose `members` are these.
 */
public record MemberConfig(String member, String runDir, String client, String bootstrapServers, String groupId,
                           List<String> topics, String pattern, Integer metadataRefreshMs, String protocol,
                           String assignor, String remoteAssignor, int sessionTimeoutMs, int heartbeatIntervalMs,
                           int maxPollIntervalMs, String commit, Integer autoCommitIntervalMs, Processing processing,
                           int batchSize, Map<String, Object> extra, String instanceId, List<String> subscribedTopics,
                           String host, Map<String, Object> hostedSettings, String outputTopic, State state,
                           Streams streams, Transaction transaction) {
    public static final String ENV_VAR = "KAFKA_CHAOS_WORKLOAD_CONFIG";
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** workloads.config.ProcessingConfig: the application's work per batch. */
    public record Processing(double perRecordMs, double perBatchMs, String distribution, long seed) {
        public static Processing of(JsonNode node) {
            if (node == null || node.isNull()) {
                return new Processing(0, 0, "fixed", 0);
            }
            return new Processing(node.path("per_record_ms").asDouble(0), node.path("per_batch_ms").asDouble(0),
                    node.path("distribution").asText("fixed"), node.path("seed").asLong(0));
        }
    }

    /**
     * workloads.config.StateConfig: a stateful member's changelog, its keys (keys_per_partition in each of the input's
     * partitions) and whether it keeps a revoked partition's state; null: the member keeps no state.
     */
    public record State(String changelog, int keysPerPartition, int partitions, boolean keepOnRevoke) {
        public static State of(JsonNode node) {
            if (node == null || node.isNull()) {
                return null;
            }
            JsonNode keys = node.path("keys");
            return new State(node.path("changelog").asText(), keys.path("keys_per_partition").asInt(),
                    keys.path("partitions").asInt(), node.path("keep_on_revoke").asBoolean(false));
        }
    }

    /**
     * workloads.config.StreamsSettings: a Kafka Streams member's processing guarantee, standby replicas, stream
     * threads and warm-up settings (classic only; null: none asked, every instance counts as caught up); null: the
     * member is no Streams member.
     */
    public record Streams(String guarantee, int standbyReplicas, int threads, Warmup warmup) {
        public record Warmup(int maxWarmupReplicas, long acceptableRecoveryLag, long probingRebalanceIntervalMs) {
        }

        public static Streams of(JsonNode node) {
            if (node == null || node.isNull()) {
                return null;
            }
            JsonNode w = node.get("warmup");
            Warmup warmup = w == null || w.isNull() ? null : new Warmup(w.path("max_warmup_replicas").asInt(),
                    w.path("acceptable_recovery_lag").asLong(), w.path("probing_rebalance_interval_ms").asLong());
            return new Streams(node.path("guarantee").asText("at_least_once"), node.path("standby_replicas").asInt(0),
                    node.path("threads").asInt(1), warmup);
        }
    }

    /**
     * workloads.config.TransactionSettings: commit: transaction's interval, transaction.timeout.ms and the aborts on
     * purpose (every abort_every-th; 0: none), the producer's request.timeout.ms (0: the client's) and each
     * transactional call's time-out (max.block.ms), and whose transactional.id: one a member ("member") or one an input
     * partition ("partition"); null: the member commits otherwise.
     */
    public record Transaction(int intervalMs, int timeoutMs, int abortEvery, int requestTimeoutMs, int callTimeoutMs,
                              String transactionalId) {
        public static Transaction of(JsonNode node) {
            if (node == null || node.isNull()) {
                return null;
            }
            return new Transaction(node.path("interval_ms").asInt(200), node.path("timeout_ms").asInt(60_000),
                    node.path("abort_every").asInt(0), node.path("request_timeout_ms").asInt(0),
                    node.path("call_timeout_ms").asInt(30_000), node.path("transactional_id").asText("member"));
        }
    }

    public static MemberConfig of(JsonNode n) {
        return new MemberConfig(text(n, "member"), text(n, "run_dir"), text(n, "client"), text(n, "bootstrap_servers"),
                text(n, "group_id"), strings(n.get("topics")), text(n, "pattern"), integer(n, "metadata_refresh_ms"),
                text(n, "protocol"), text(n, "assignor"), text(n, "remote_assignor"),
                n.path("session_timeout_ms").asInt(), n.path("heartbeat_interval_ms").asInt(),
                n.path("max_poll_interval_ms").asInt(), text(n, "commit"), integer(n, "auto_commit_interval_ms"),
                Processing.of(n.get("processing")), n.path("batch_size").asInt(), map(n.get("extra")),
                text(n, "instance_id"), strings(n.get("subscribed_topics")), text(n, "host"),
                map(n.get("hosted_settings")), text(n, "output_topic"), State.of(n.get("state")),
                Streams.of(n.get("streams")), Transaction.of(n.get("transaction")));
    }

    /** This process's member config when the harness started it; null outside a run. */
    public static MemberConfig fromEnvironment() {
        String text = System.getenv(ENV_VAR);
        if (text == null) {
            return null;
        }
        try {
            return of(MAPPER.readTree(text));
        } catch (IOException e) {
            throw new IllegalArgumentException(ENV_VAR + " is not a member config: " + e.getMessage(), e);
        }
    }

    /** The topics it subscribes to: its own (a member spec's) or all of the run's. */
    public List<String> subscription() {
        return subscribedTopics != null ? subscribedTopics : topics;
    }

    /** The assignor as the `started` facts name it: the client-side one, else (KIP-848) the remote one. */
    public String assignorFact() {
        return assignor != null ? assignor : remoteAssignor;
    }

    public static String text(JsonNode n, String field) {
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
    public static Map<String, Object> map(JsonNode n) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (n == null || !n.isObject()) {
            return out;
        }
        for (Map.Entry<String, JsonNode> e : n.properties()) {
            out.put(e.getKey(), plain(e.getValue()));
        }
        return out;
    }

    public static Object plain(JsonNode v) {
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
