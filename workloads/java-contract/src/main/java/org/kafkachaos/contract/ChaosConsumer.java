package org.kafkachaos.contract;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.AppInfoParser;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * Library mode for a Java program of yours (workloads/app.py is the Python one): make the consumer through this class
 * and say when the work on a record is done.
 *
 * <pre>{@code
 * try (ChaosConsumer consumer = ChaosConsumer.create(ownSettings)) {
 *     consumer.subscribe(ChaosConsumer.topics(List.of("orders")), listener);
 *     while (running) {
 *         for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
 *             work(r);
 *             consumer.processed(r);          // one row of consumed/<member>.jsonl
 *         }
 *         consumer.commitSync();              // logged as a commit window
 *     }
 * }
 * }</pre>
 *
 * Inside a run (the harness set KAFKA_CHAOS_WORKLOAD_CONFIG) the consumer gets the run's bootstrap servers, group,
 * client.id (the member's name), group.instance.id, protocol, assignor, time-outs and credentials over yours; your
 * enable.auto.commit, auto.offset.reset and max.poll.interval.ms stay yours. It logs `started` (client "app"),
 * assigned/revoked/lost (revoked after your listener returns), a row a processed record, each commit's window, and
 * `stopped` at close; it logs what you commit and never corrects it. Outside a run it is a plain KafkaConsumer; in
 * output-topic mode it adds the run's settings and logs nothing. {@link #kafka()} is the KafkaConsumer itself.
 */
public final class ChaosConsumer implements AutoCloseable {
    public static final String CLIENT = "app";
    /** Settings a program keeps when it sets them (app.py PROGRAM_CHOOSES). */
    public static final Set<String> PROGRAM_CHOOSES = Set.of("enable.auto.commit", "auto.commit.interval.ms",
            "auto.offset.reset", "max.poll.interval.ms");

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final MemberConfig cfg;
    private final ContractLog log;  // null: outside a run, or output-topic mode
    private final Map<TopicPartition, Map<Long, long[]>> polled = new HashMap<>();  // -> offset -> {n, at, generation}

    private ChaosConsumer(KafkaConsumer<byte[], byte[]> consumer, MemberConfig cfg, ContractLog log) {
        this.consumer = consumer;
        this.cfg = cfg;
        this.log = log;
    }

    /** A consumer of byte arrays with your settings, the run's added inside a run. */
    public static ChaosConsumer create(Properties own) {
        MemberConfig cfg = MemberConfig.fromEnvironment();
        if (cfg == null) {
            Properties plain = new Properties();
            plain.putAll(own);
            plain.putIfAbsent("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            plain.putIfAbsent("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            return new ChaosConsumer(new KafkaConsumer<>(plain), null, null);
        }
        Properties settings = programSettings(cfg, own, System.getenv());
        ContractLog log = cfg.outputTopic() == null ? new ContractLog(cfg, CLIENT) : null;
        return new ChaosConsumer(new KafkaConsumer<>(settings), cfg, log);
    }

    /** Your settings with the run's: the run's identity, protocol and time-outs win; your PROGRAM_CHOOSES stay. */
    public static Properties programSettings(MemberConfig cfg, Properties own, Map<String, String> environment) {
        Properties out = new Properties();
        out.putAll(own);
        out.putAll(ConsumerSettings.of(cfg, environment));
        for (String key : PROGRAM_CHOOSES) {
            if (own.containsKey(key)) {
                out.put(key, own.get(key));
            }
        }
        return out;
    }

    /** The topics to subscribe to: the run's inside a run, else {@code fallback}. */
    public static List<String> topics(List<String> fallback) {
        MemberConfig cfg = MemberConfig.fromEnvironment();
        return cfg == null ? fallback : cfg.subscription();
    }

    /** This member's name inside a run (its client.id), else {@code fallback}. */
    public static String member(String fallback) {
        MemberConfig cfg = MemberConfig.fromEnvironment();
        return cfg == null ? fallback : cfg.member();
    }

    /** Producer settings with the run's bootstrap servers, credentials and the member's name as client.id. */
    public static Properties producerSettings(Properties own) {
        MemberConfig cfg = MemberConfig.fromEnvironment();
        Properties out = new Properties();
        out.putAll(own);
        if (cfg != null) {
            out.putAll(ConsumerSettings.security(System.getenv()));
            out.put("bootstrap.servers", cfg.bootstrapServers());
            out.put("client.id", cfg.member());
        }
        return out;
    }

    public KafkaConsumer<byte[], byte[]> kafka() {
        return consumer;
    }

    public void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
        if (log == null) {
            consumer.subscribe(topics, listener);
            return;
        }
        consumer.subscribe(topics, new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                log.generation(consumer.groupMetadata().generationId());
                log.event("assigned", Json.obj("partitions", ContractLog.names(partitions),
                        "member_id", consumer.groupMetadata().memberId()));
                listener.onPartitionsAssigned(partitions);
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                listener.onPartitionsRevoked(partitions);
                partitions.forEach(polled::remove);
                log.event("revoked", Json.obj("partitions", ContractLog.names(partitions)));
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                partitions.forEach(polled::remove);
                log.event("lost", Json.obj("partitions", ContractLog.names(partitions)));
                listener.onPartitionsLost(partitions);
            }
        });
        Map<String, Object> started = Json.obj("client", CLIENT, "protocol", cfg.protocol(), "assignor",
                cfg.assignorFact(), "instance_id", cfg.instanceId(), "commit", cfg.commit(),
                "heartbeat_interval_ms", cfg.heartbeatIntervalMs(), "client_version", AppInfoParser.getVersion());
        started.put("detail", "commit=" + cfg.commit());
        log.event("started", started);
    }

    public ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
        ConsumerRecords<byte[], byte[]> records = consumer.poll(timeout);
        if (log != null && !records.isEmpty()) {
            log.flushRows();  // the rows of the polls before: an auto-commit may commit them at any time
            long at = System.currentTimeMillis();
            int generation = consumer.groupMetadata().generationId();
            log.generation(generation);
            for (ConsumerRecord<byte[], byte[]> r : records) {
                polled.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), tp -> new HashMap<>())
                        .put(r.offset(), new long[]{log.takeN(), at, generation});
            }
        }
        return records;
    }

    /** Your work on {@code record} is done: its row (flushed before the next commit is logged as sent). */
    public void processed(ConsumerRecord<byte[], byte[]> record) {
        if (log == null) {
            return;
        }
        Map<Long, long[]> offsets = polled.get(new TopicPartition(record.topic(), record.partition()));
        long[] seen = offsets == null ? null : offsets.remove(record.offset());
        if (seen == null) {
            throw new IllegalArgumentException("processed(" + record.topic() + ":" + record.partition() + "@"
                    + record.offset() + "): not a record this consumer handed over (or processed twice)");
        }
        log.rows(List.of(log.row(record, seen[1], (int) seen[2], seen[0])), false);
    }

    /** Commits the positions of the assignment (what commitSync() commits), its window logged. */
    public void commitSync() {
        Map<TopicPartition, OffsetAndMetadata> positions = new LinkedHashMap<>();
        for (TopicPartition tp : consumer.assignment()) {
            positions.put(tp, new OffsetAndMetadata(consumer.position(tp)));
        }
        commitSync(positions);
    }

    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (log == null) {
            consumer.commitSync(offsets);
            return;
        }
        ContractLog.Sent sent = log.sending(offsets);
        if (sent == null) {  // the events log cannot be written: the program's commit is still the program's
            consumer.commitSync(offsets);
            return;
        }
        try {
            consumer.commitSync(offsets);
        } catch (KafkaException e) {
            log.answered(sent, e);
            throw e;
        }
        log.answered(sent, null);
    }

    @Override
    public void close() {
        consumer.close();
        if (log != null) {
            log.event("stopped", Json.obj());
            log.closeConsumed();
            log.closeEvents();
        }
    }
}
