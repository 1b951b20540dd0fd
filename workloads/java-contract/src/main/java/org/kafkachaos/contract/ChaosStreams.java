package org.kafkachaos.contract;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.RecordMetadata;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * The Streams part of the contract library: a Kafka Streams program's settings from the run and its events.
 *
 * <p>Streams has no rebalance listener: a processor says when its task opens and closes ({@link #taskOpened},
 * {@link #taskClosed}: `assigned` and `revoked` of the task's input partitions, with the task id). Restores come from a
 * StateRestoreListener (`restore_start`, `restore_end`: records, elapsed_ms, aborted when the restore was suspended),
 * standby updates from a StandbyUpdateListener (`standby_start`, `standby_end`: the changelog offsets, why it ended).
 * A changelog partition is named by the input partition of its task: one sub-topology, as the harness's programs have.
 * What the program processed and the state it built come from its output topic (output-topic mode), never from here:
 * {@link #inputHeaders} names an output record's input record as the harness reads it back.
 *
 * <p>A program of yours: build the topology, then {@code System.exit(chaos.run(new KafkaStreams(topology,
 * chaos.properties())))}; call taskOpened/taskClosed from each processor's init()/close() and give each output record
 * inputHeaders (examples/streams).
 */
public final class ChaosStreams {
    public static final String CLIENT = "streams";
    public static final int COMMIT_INTERVAL_MS = 1000;

    private final MemberConfig cfg;
    private final ContractLog log;
    private final String input;
    private final Map<TopicPartition, Long> restoring = new ConcurrentHashMap<>();

    /** Streams' own defaults, for a program of the user's (a command member: the run gives it no `streams` block). */
    public static final MemberConfig.Streams DEFAULTS = new MemberConfig.Streams("at_least_once", 0, 1, null);

    public ChaosStreams(MemberConfig cfg) {
        this.cfg = cfg;
        this.log = new ContractLog(cfg, CLIENT);
        this.input = cfg.subscription().get(0);
    }

    /** This process's, from KAFKA_CHAOS_WORKLOAD_CONFIG; IllegalStateException outside a run. */
    public static ChaosStreams fromEnvironment() {
        MemberConfig cfg = MemberConfig.fromEnvironment();
        if (cfg == null) {
            throw new IllegalStateException(MemberConfig.ENV_VAR + " is not set: start this program from a kafka-chaos run");
        }
        return new ChaosStreams(cfg);
    }

    public MemberConfig config() {
        return cfg;
    }

    /** The run's Streams settings; Streams' defaults for a program of the user's (which may override them). */
    public MemberConfig.Streams settings() {
        return cfg.streams() != null ? cfg.streams() : DEFAULTS;
    }

    /** The input topic (the run's first). */
    public String input() {
        return input;
    }

    /** The state directory of this member: a folder of its own in the run directory, kept across a restart. */
    public Path stateDir() {
        return Path.of(cfg.runDir(), "streams-state", cfg.member());
    }

    /**
     * The run's settings: application.id the group, client.id the member's name (Streams appends
     * `-StreamThread-N-consumer` and the like), the state directory, the group protocol, the guarantee, the threads,
     * standbys (classic: num.standby.replicas; under `streams` the harness sets the group's config), the warm-up
     * settings, the session time-outs of a classic group; commit.interval.ms 1000 and no record cache, so that every
     * change is written and a double apply can be traced; then the run's own `config`.
     */
    public Properties properties() {
        MemberConfig.Streams s = settings();
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, cfg.groupId());
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.bootstrapServers());
        p.put(StreamsConfig.CLIENT_ID_CONFIG, cfg.member());
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir().toString());
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, cfg.protocol());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, s.guarantee());
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, s.threads());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, COMMIT_INTERVAL_MS);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        if (!"streams".equals(cfg.protocol())) {
            p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, s.standbyReplicas());
            if (s.warmup() != null) {
                p.put(StreamsConfig.MAX_WARMUP_REPLICAS_CONFIG, s.warmup().maxWarmupReplicas());
                p.put(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG, s.warmup().acceptableRecoveryLag());
                p.put(StreamsConfig.PROBING_REBALANCE_INTERVAL_MS_CONFIG, s.warmup().probingRebalanceIntervalMs());
            } else {  // warm-ups cannot be switched off: every instance counts as caught up, tasks move at once
                p.put(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG, Long.MAX_VALUE);
            }
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), cfg.sessionTimeoutMs());
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), cfg.heartbeatIntervalMs());
            if (cfg.instanceId() != null) {
                p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), cfg.instanceId());
            }
        }
        if (cfg.extra() != null) {
            cfg.extra().forEach((k, v) -> p.put(k, String.valueOf(v)));
        }
        return p;
    }

    /** The listeners that write the events; call before start(). */
    public void attach(KafkaStreams streams) {
        streams.setGlobalStateRestoreListener(new RestoreEvents());
        streams.setStandbyUpdateListener(new StandbyEvents());
        streams.setUncaughtExceptionHandler(error -> {
            log.event("error", Json.obj("error", String.valueOf(error), "fatal", true));
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
    }

    /**
     * Run the instance to its end as a member of the run: the listeners attached, `started`, a SIGTERM closing it (a
     * graceful leave, then `stopped`; a kill is a crash). Returns the exit code: 1 when Streams stopped in ERROR.
     */
    public int run(KafkaStreams streams, Properties props) throws InterruptedException {
        attach(streams);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                closed.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            stopped();
        }, "kafka-chaos-streams-close"));
        started(props);
        streams.start();
        closed.await();
        return streams.state() == KafkaStreams.State.ERROR ? 1 : 0;
    }

    /**
     * The headers output-topic mode reads (consumer_group.output, source: headers): the input record's topic,
     * partition and offset, this member, when it was processed (the member's rows are read in that order), and the
     * harness producer's id and seq from the input's value ("producer-id:seq"), so the producer-side checks run too.
     */
    public Headers inputHeaders(RecordMetadata at, String inputValue) {
        RecordHeaders headers = new RecordHeaders();
        headers.add("in-topic", utf8(at.topic()));
        headers.add("in-partition", utf8(Integer.toString(at.partition())));
        headers.add("in-offset", utf8(Long.toString(at.offset())));
        headers.add("in-member", utf8(cfg.member()));
        headers.add("in-processed-at", utf8(Long.toString(System.currentTimeMillis())));
        int colon = inputValue == null ? -1 : inputValue.lastIndexOf(':');
        if (colon > 0 && colon < inputValue.length() - 1 && inputValue.substring(colon + 1).chars().allMatch(Character::isDigit)) {
            headers.add("in-producer-id", utf8(inputValue.substring(0, colon)));
            headers.add("in-seq", utf8(inputValue.substring(colon + 1)));
        }
        return headers;
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** `started`, with every setting the run gave the program. */
    public void started(Properties props) {
        MemberConfig.Streams s = settings();
        Map<String, Object> facts = Json.obj("client", CLIENT, "protocol", cfg.protocol(),
                "assignor", "streams".equals(cfg.protocol()) ? "streams" : "streams-classic",
                "instance_id", cfg.instanceId(), "commit", "interval", "heartbeat_interval_ms", cfg.heartbeatIntervalMs(),
                "client_version", AppInfoParser.getVersion(), "guarantee", s.guarantee(),
                "standby_replicas", s.standbyReplicas(), "threads", s.threads(),
                "commit_interval_ms", COMMIT_INTERVAL_MS, "statestore_cache_max_bytes", 0,
                "acceptable_recovery_lag", props.get(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG));
        if (s.warmup() != null) {
            facts.put("max_warmup_replicas", s.warmup().maxWarmupReplicas());
            facts.put("probing_rebalance_interval_ms", s.warmup().probingRebalanceIntervalMs());
        }
        facts.put("detail", "guarantee=" + s.guarantee() + " standbys=" + s.standbyReplicas() + " threads=" + s.threads());
        log.event("started", facts);
    }

    /** A processor's init(): its task is this member's now. */
    public void taskOpened(TaskId task) {
        log.event("assigned", Json.obj("partitions", List.of(partitionName(task.partition())), "task", task.toString()));
    }

    /** A processor's close(): its task left this member (a rebalance moved it, or the member stops). */
    public void taskClosed(TaskId task) {
        log.event("revoked", Json.obj("partitions", List.of(partitionName(task.partition())), "task", task.toString()));
    }

    public void stopped() {
        log.event("stopped", Json.obj());
        log.closeEvents();
        log.closeConsumed();
    }

    private String partitionName(int partition) {
        return input + ":" + partition;
    }

    private final class RestoreEvents implements StateRestoreListener {
        @Override
        public void onRestoreStart(TopicPartition changelog, String store, long from, long to) {
            restoring.put(changelog, System.currentTimeMillis());
            log.event("restore_start", Json.obj("partitions", List.of(partitionName(changelog.partition())),
                    "store", store, "from_offset", from, "to_offset", to));
        }

        @Override
        public void onBatchRestored(TopicPartition changelog, String store, long batchEnd, long restored) {
        }

        @Override
        public void onRestoreEnd(TopicPartition changelog, String store, long restored) {
            ended(changelog, store, restored, false);
        }

        @Override
        public void onRestoreSuspended(TopicPartition changelog, String store, long restored) {
            ended(changelog, store, restored, true);
        }

        private void ended(TopicPartition changelog, String store, long restored, boolean aborted) {
            Long start = restoring.remove(changelog);
            long elapsed = start == null ? 0 : System.currentTimeMillis() - start;
            log.event("restore_end", Json.obj("partitions", List.of(partitionName(changelog.partition())),
                    "store", store, "records", restored, "elapsed_ms", elapsed, "aborted", aborted));
        }
    }

    private final class StandbyEvents implements StandbyUpdateListener {
        @Override
        public void onUpdateStart(TopicPartition changelog, String store, long from) {
            log.event("standby_start", Json.obj("partitions", List.of(partitionName(changelog.partition())),
                    "store", store, "from_offset", from));
        }

        @Override
        public void onBatchLoaded(TopicPartition changelog, String store, TaskId task, long batchEnd, long size,
                                  long currentEnd) {
        }

        @Override
        public void onUpdateSuspended(TopicPartition changelog, String store, long storeOffset, long currentEnd,
                                      SuspendReason reason) {
            log.event("standby_end", Json.obj("partitions", List.of(partitionName(changelog.partition())),
                    "store", store, "store_offset", storeOffset, "end_offset", currentEnd,
                    "reason", reason.name().toLowerCase()));
        }
    }
}
