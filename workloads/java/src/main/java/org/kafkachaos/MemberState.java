package org.kafkachaos;

import org.kafkachaos.contract.ConsumerSettings;
import org.kafkachaos.contract.Json;
import org.kafkachaos.contract.JsonlLog;
import org.kafkachaos.contract.MemberConfig;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;

/**
 * A stateful member's state (workloads/state.py, the reference, mirrored row for row): per (partition, key) a count, a
 * sum of seq and the last input offset, in memory, written through to the changelog topic and restored from it.
 *
 * <p>Per batch: apply; the consumed rows and one state/&lt;member&gt;.jsonl row a change, flushed; one changelog record
 * a change. The changelog producer is flushed before every commit and in the revoke callback; lost partitions are
 * dropped unwritten. A new partition is paused in the assignment callback ({@code restore_start}); a second consumer
 * (no group, assign()) reads the changelog to its end then, in the poll loop, while the member consumes what it has;
 * then {@code restore_end} and resume. The producer and the restore consumer take the member's bootstrap servers (its
 * lane) and its client.id.
 */
final class MemberState {
    static final Duration END_OFFSET_TIMEOUT = Duration.ofSeconds(5);
    static final Duration RESTORE_POLL = Duration.ofMillis(50);
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** One partition's restore: the changelog from {@code start} up to {@code end} (exclusive; null: not known yet). */
    static final class Restore {
        final int partition;
        final long start;
        final long beganNanos = System.nanoTime();
        Long end;
        long records;
        long position;

        Restore(int partition, long start) {
            this.partition = partition;
            this.start = start;
            this.position = start;
        }

        boolean done() {
            return end != null && position >= end;
        }
    }

    private final MemberConfig.State spec;
    private final String name;
    private final String topic;
    private final JsonlLog log;
    private final Map<Integer, Map<String, long[]>> tables = new HashMap<>();  // partition -> key -> count, sum, last
    private final Map<Integer, Long> kept = new HashMap<>();  // keep_on_revoke: partition -> its changelog position
    // partition -> the changelog position its table reflects (restored, written: the producer's thread adds to it)
    private final Map<Integer, Long> positions = new ConcurrentHashMap<>();
    private final Map<Integer, Restore> restores = new LinkedHashMap<>();
    private final KafkaProducer<byte[], byte[]> producer;
    private final KafkaConsumer<byte[], byte[]> restorer;
    private volatile boolean dead;  // crashed: nothing more is applied, logged or sent

    MemberState(MemberConfig cfg) {
        this.spec = cfg.state();
        this.name = cfg.member();
        this.topic = cfg.topics().get(0);
        this.log = new JsonlLog(Path.of(cfg.runDir(), "state", name + ".jsonl"));
        Properties common = ConsumerSettings.security(System.getenv());
        common.put("bootstrap.servers", cfg.bootstrapServers());
        common.put("client.id", name);
        this.producer = new KafkaProducer<>(with(common, Map.of("acks", "all", "enable.idempotence", "true",
                "linger.ms", "5")), new ByteArraySerializer(), new ByteArraySerializer());
        this.restorer = new KafkaConsumer<>(with(common, Map.of("enable.auto.commit", "false",
                "auto.offset.reset", "earliest")), new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** The member's common client settings (its lane, its client.id, the run's credentials) with a client's own. */
    private static Properties with(Properties common, Map<String, String> own) {
        Properties out = new Properties();
        out.putAll(common);
        out.putAll(own);
        return out;
    }

    /** A changelog value (workloads/state.py encode_value): the key's value, and who wrote it when. */
    static byte[] encode(long[] value, String member, long atMs) {
        return ("{\"count\":" + value[0] + ",\"sum\":" + value[1] + ",\"last_offset\":" + value[2]
                + ",\"member\":\"" + member + "\",\"ts_ms\":" + atMs + "}").getBytes(StandardCharsets.UTF_8);
    }

    static long[] decode(byte[] value) {
        try {
            JsonNode v = MAPPER.readTree(value);
            return new long[]{v.path("count").asLong(), v.path("sum").asLong(), v.path("last_offset").asLong()};
        } catch (IOException e) {
            throw new IllegalArgumentException("a changelog value that is not the state's JSON: " + e.getMessage(), e);
        }
    }

    /** The seq a record's value carries ("producer_id:seq", workloads/producer.py record_value). */
    static long seqOf(byte[] value) {
        String text = new String(value, StandardCharsets.UTF_8);
        return Long.parseLong(text.substring(text.lastIndexOf(':') + 1));
    }

    // the assignment callbacks (inside poll())
    void assigned(KafkaConsumer<byte[], byte[]> consumer, Collection<TopicPartition> partitions,
                  BiConsumer<String, Map<String, Object>> event) {
        if (partitions.isEmpty()) {
            return;
        }
        consumer.pause(partitions);
        List<Restore> begun = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            Long start = kept.remove(tp.partition());
            if (start == null) {
                start = 0L;
                tables.put(tp.partition(), new HashMap<>());
            }
            Restore restore = new Restore(tp.partition(), start);
            restores.put(tp.partition(), restore);
            begun.add(restore);
        }
        findEnds(begun, event, END_OFFSET_TIMEOUT);
    }

    void revoked(Collection<TopicPartition> partitions, BiConsumer<String, Map<String, Object>> event) {
        flush();
        for (TopicPartition tp : partitions) {
            boolean restored = abortRestore(tp.partition(), event);
            if (spec.keepOnRevoke() && restored && tables.containsKey(tp.partition())) {
                kept.put(tp.partition(), positions.getOrDefault(tp.partition(), 0L));
            } else {
                drop(tp.partition());
            }
        }
    }

    void lost(Collection<TopicPartition> partitions, BiConsumer<String, Map<String, Object>> event) {
        for (TopicPartition tp : partitions) {
            abortRestore(tp.partition(), event);
            drop(tp.partition());
        }
    }

    private void drop(int partition) {
        tables.remove(partition);
        kept.remove(partition);
        positions.remove(partition);
    }

    /** The changelog partitions' end offsets, asked together; each restore then logs restore_start and is read. */
    private void findEnds(List<Restore> wanted, BiConsumer<String, Map<String, Object>> event, Duration timeout) {
        if (wanted.isEmpty()) {
            return;
        }
        List<TopicPartition> asked = new ArrayList<>();
        wanted.forEach(r -> asked.add(new TopicPartition(spec.changelog(), r.partition)));
        Map<TopicPartition, Long> ends;
        try {
            ends = restorer.endOffsets(asked, timeout);
        } catch (KafkaException e) {
            return;  // asked again in the loop
        }
        for (Restore restore : wanted) {
            restore.end = ends.get(new TopicPartition(spec.changelog(), restore.partition));
            if (restore.end != null) {
                event.accept("restore_start", Json.obj("partitions", List.of(topic + ":" + restore.partition),
                        "from_offset", restore.start, "to_offset", restore.end));
            }
        }
        reassign();
    }

    /** The restore consumer's assignment: every restore whose end is known and not reached. */
    private void reassign() {
        List<TopicPartition> wanted = new ArrayList<>();
        restores.values().forEach(r -> {
            if (r.end != null) {
                wanted.add(new TopicPartition(spec.changelog(), r.partition));
            }
        });
        Set<TopicPartition> before = new HashSet<>(restorer.assignment());
        restorer.assign(wanted);
        for (TopicPartition tp : wanted) {
            if (!before.contains(tp)) {
                restorer.seek(tp, restores.get(tp.partition()).position);
            }
        }
    }

    /** False when a restore was under way (the partition's table is partial). */
    private boolean abortRestore(int partition, BiConsumer<String, Map<String, Object>> event) {
        Restore restore = restores.remove(partition);
        if (restore == null) {
            return true;
        }
        reassign();
        endRestore(restore, event, true);
        return false;
    }

    private void endRestore(Restore restore, BiConsumer<String, Map<String, Object>> event, boolean aborted) {
        event.accept("restore_end", Json.obj("partitions", List.of(topic + ":" + restore.partition),
                "records", restore.records, "elapsed_ms", (System.nanoTime() - restore.beganNanos) / 1_000_000,
                "aborted", aborted));
    }

    // the poll loop
    boolean restoring() {
        return !restores.isEmpty();
    }

    void step(KafkaConsumer<byte[], byte[]> consumer, BiConsumer<String, Map<String, Object>> event) {
        List<Restore> unknown = new ArrayList<>();
        restores.values().forEach(r -> {
            if (r.end == null) {
                unknown.add(r);
            }
        });
        findEnds(unknown, event, Duration.ofSeconds(1));
        boolean reading = restores.values().stream().anyMatch(r -> r.end != null && !r.done());
        if (reading) {
            for (ConsumerRecord<byte[], byte[]> m : restorer.poll(RESTORE_POLL)) {
                Restore restore = restores.get(m.partition());
                if (restore == null || m.offset() < restore.position) {
                    continue;
                }
                tables.get(m.partition()).put(new String(m.key(), StandardCharsets.UTF_8), decode(m.value()));
                restore.records++;
                restore.position = m.offset() + 1;
            }
        }
        boolean ended = false;
        for (Restore restore : new ArrayList<>(restores.values())) {
            if (restore.done()) {
                restores.remove(restore.partition);
                positions.merge(restore.partition, restore.position, Math::max);
                endRestore(restore, event, false);
                consumer.resume(List.of(new TopicPartition(topic, restore.partition)));
                ended = true;
            }
        }
        if (ended) {
            reassign();
        }
    }

    /** The records of partitions still restoring are not processed: each such partition goes back to its first. */
    List<ConsumerRecord<byte[], byte[]>> heldBack(List<ConsumerRecord<byte[], byte[]>> records,
                                                  KafkaConsumer<byte[], byte[]> consumer) {
        if (restores.isEmpty()) {
            return records;
        }
        Map<Integer, Long> first = new LinkedHashMap<>();
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> m : records) {
            if (restores.containsKey(m.partition())) {
                first.putIfAbsent(m.partition(), m.offset());
            } else {
                out.add(m);
            }
        }
        first.forEach((partition, offset) -> {
            TopicPartition tp = new TopicPartition(topic, partition);
            consumer.pause(List.of(tp));
            consumer.seek(tp, offset);
        });
        return out;
    }

    void apply(List<ConsumerRecord<byte[], byte[]>> records, int generation) {
        if (dead) {
            return;
        }
        long at = System.currentTimeMillis();
        List<Map<String, Object>> rows = new ArrayList<>(records.size());
        List<Object[]> sends = new ArrayList<>(records.size());
        for (ConsumerRecord<byte[], byte[]> m : records) {
            String key = new String(m.key(), StandardCharsets.UTF_8);
            Map<String, long[]> table = tables.computeIfAbsent(m.partition(), p -> new HashMap<>());
            long[] before = table.getOrDefault(key, new long[]{0, 0, -1});
            long[] value = {before[0] + 1, before[1] + seqOf(m.value()), m.offset()};
            table.put(key, value);
            rows.add(Json.obj("ts_ms", at, "member", name, "topic", m.topic(), "partition", m.partition(), "key", key,
                    "offset", m.offset(), "prev_offset", before[2], "count", value[0], "sum", value[1],
                    "generation", generation));
            sends.add(new Object[]{m.partition(), key, value});
        }
        log.extend(rows);
        log.flush();
        for (Object[] send : sends) {
            int partition = (int) send[0];
            producer.send(new ProducerRecord<>(spec.changelog(), partition,
                    ((String) send[1]).getBytes(StandardCharsets.UTF_8), encode((long[]) send[2], name, at)), (meta, error) -> {
                        if (error == null && meta != null && meta.hasOffset()) {
                            positions.merge(partition, meta.offset() + 1, Math::max);
                        }
                    });
        }
    }

    /** The changelog written through: before a commit, and in the revoke callback. */
    void flush() {
        if (!dead) {
            producer.flush();
        }
    }

    /**
     * From the host's control thread, with {@link Member#crash()}: the state dies with the member, as in a killed
     * process. Its state log takes nothing more, and the changelog producer is closed at once: what it had not sent is
     * dropped, and a send after it fails (the member's thread then ends as crashed).
     */
    void kill() {
        dead = true;
        log.kill();
        try {
            producer.close(Duration.ZERO);
        } catch (RuntimeException e) {
            // closed already
        }
    }

    void close() {
        flush();
        producer.close();
        restorer.close();
        log.close();
    }

    /** A crashed member's: what the changelog producer has not sent dies with it. */
    void abandon() {
        log.kill();
        try {
            producer.close(Duration.ZERO);
            restorer.close(Duration.ZERO);
        } catch (KafkaException e) {
            // a client an error has already closed
        }
    }
}
