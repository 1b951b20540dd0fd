package org.kafkachaos.contract;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * One member's side of the run-directory contract (docs/DESIGN.md; workloads/app.py ContractLog, its Python twin):
 * consumed/&lt;member&gt;.jsonl and events/&lt;member&gt;.jsonl, the consumption sequence {@code n} (a restarted member
 * goes on from its log's last row), and each commit's window.
 *
 * <p>A commit's window: the broker applies a commit somewhere between its sending and its answer, and a member frozen
 * mid-commit learns the answer long after, so both ends are logged. Every consumed row is flushed before
 * {@code commit_sent}, and {@code commit_sent} is flushed before the commit leaves ({@link #sending} returns null
 * when the log is dead: a killed member sends nothing more); {@code commit_id} pairs the sending with its answer
 * ({@code requested_at_ms}: the sending).
 */
public final class ContractLog {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** A commit logged as sent: what {@link #answered} pairs its answer with. */
    public record Sent(Map<String, Object> offsets, long commitId, long requestedAt) {
    }

    private final String member;
    private final String client;
    private final String instanceId;
    private final JsonlLog consumed;
    private final JsonlLog events;
    private long nextN;
    private long nextCommitId;  // per life: the analysis pairs commit_sent with its answer until the next `started`
    private volatile int generation = -1;  // the last one seen; kept for events after close()

    public ContractLog(MemberConfig cfg, String client) {
        this.member = cfg.member();
        this.client = client;
        this.instanceId = cfg.instanceId();
        Path consumedPath = Path.of(cfg.runDir(), "consumed", member + ".jsonl");
        this.consumed = new JsonlLog(consumedPath);
        this.nextN = nextSequence(consumedPath);
        this.events = new JsonlLog(Path.of(cfg.runDir(), "events", member + ".jsonl"));
    }

    public int generation() {
        return generation;
    }

    public void generation(int generation) {
        this.generation = generation;
    }

    /** Appends and flushes one event; false when the log is dead (killed) and nothing was written. */
    public boolean event(String kind, Map<String, Object> fields) {
        Map<String, Object> row = Json.obj("ts_ms", System.currentTimeMillis(), "member", member, "kind", kind,
                "generation", generation);
        row.putAll(fields);
        return events.write(row);
    }

    /** The next number of the consumption sequence. */
    public long takeN() {
        return nextN++;
    }

    /** The consumed row of a record the member is done with: `n` the next of the sequence. */
    public Map<String, Object> row(ConsumerRecord<byte[], byte[]> m, long consumedAt, int generation) {
        return row(m, consumedAt, generation, takeN());
    }

    /** The consumed row of a record the member is done with, `n` taken when a poll handed it over. */
    public Map<String, Object> row(ConsumerRecord<byte[], byte[]> m, long consumedAt, int generation, long n) {
        String value = m.value() == null ? "" : new String(m.value(), StandardCharsets.UTF_8);
        int colon = value.indexOf(':');
        String producerId = colon < 0 ? value : value.substring(0, colon);
        String seq = colon < 0 ? "" : value.substring(colon + 1);
        return Json.obj("topic", m.topic(), "partition", m.partition(), "offset", m.offset(), "member", member,
                "consumed_at_ms", consumedAt,
                "key", m.key() == null || m.key().length == 0 ? null : new String(m.key(), StandardCharsets.UTF_8),
                "producer_id", producerId.isEmpty() ? null : producerId, "seq", sequence(seq),
                "instance_id", instanceId, "generation", generation, "client", client, "n", n);
    }

    /** Consumed rows; unflushed ({@code flush} false) they reach the file before the next commit is logged as sent. */
    public boolean rows(List<Map<String, Object>> rows, boolean flush) {
        return consumed.extend(rows) && (!flush || consumed.flush());
    }

    /** The consumed rows written so far, to the OS. */
    public boolean flushRows() {
        return consumed.flush();
    }

    /** The first end of a commit's window: the rows before it flushed, then {@code commit_sent}; null: do not send. */
    public Sent sending(Map<TopicPartition, OffsetAndMetadata> offsets) {
        consumed.flush();
        Map<String, Object> committed = offsetsField(offsets);
        long commitId = nextCommitId++;
        long requestedAt = System.currentTimeMillis();
        if (!event("commit_sent", Json.obj("offsets", committed, "commit_id", commitId))) {
            return null;
        }
        return new Sent(committed, commitId, requestedAt);
    }

    /** The other end: {@code committed}, or {@code commit_failed} with the error's detail. */
    public void answered(Sent sent, Throwable error) {
        Map<String, Object> window = Json.obj("offsets", sent.offsets(), "commit_id", sent.commitId(),
                "requested_at_ms", sent.requestedAt());
        if (error == null) {
            event("committed", window);
        } else {
            window.put("detail", KafkaErrors.detail(error));
            event("commit_failed", window);
        }
    }

    /** A commit whose sending the member did not see (the client's auto-commit): {@code committed}, no window. */
    public void committedWithoutWindow(Map<TopicPartition, OffsetAndMetadata> offsets) {
        event("committed", Json.obj("offsets", offsetsField(offsets)));
    }

    public static Map<String, Object> offsetsField(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Map<String, Object> out = new LinkedHashMap<>();
        offsets.forEach((tp, o) -> out.put(tp.topic() + ":" + tp.partition(), o == null ? null : o.offset()));
        return out;
    }

    public static List<String> names(Collection<TopicPartition> partitions) {
        List<String> out = new ArrayList<>();
        partitions.forEach(tp -> out.add(tp.topic() + ":" + tp.partition()));
        return out;
    }

    /** What a killed process does to its logs: the rows not yet flushed are gone, nothing more is written. */
    public void kill() {
        consumed.kill();
        events.kill();
    }

    public void closeConsumed() {
        consumed.close();
    }

    public void closeEvents() {
        events.close();
    }

    public void killEvents() {
        events.kill();
    }

    /** Python's int(seq) if seq.isdigit() else None. */
    public static Long sequence(String seq) {
        if (seq.isEmpty() || !seq.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return null;
        }
        try {
            return Long.parseLong(seq);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /**
     * The consumption sequence number after the last row of a consumed log (0 for a new log): its last line's n plus
     * one (app.py next_sequence), read from the tail only.
     */
    public static long nextSequence(Path log) {
        if (!Files.exists(log)) {
            return 0;
        }
        try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "r")) {
            long end = file.length();
            long start = Math.max(0, end - 4096);
            byte[] tail = new byte[(int) (end - start)];
            file.seek(start);
            file.readFully(tail);
            String[] lines = new String(tail, StandardCharsets.UTF_8).split("\n");
            for (int i = lines.length - 1; i >= 0; i--) {
                JsonNode row;
                try {
                    row = MAPPER.readTree(lines[i]);
                } catch (IOException e) {
                    continue;
                }
                if (row == null || !row.isObject()) {
                    continue;
                }
                JsonNode n = row.get("n");
                return n != null && n.isIntegralNumber() ? n.asLong() + 1 : 0;
            }
        } catch (IOException e) {
            return 0;
        }
        return 0;
    }
}
