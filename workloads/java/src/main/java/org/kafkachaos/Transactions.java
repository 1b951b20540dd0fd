package org.kafkachaos;

import org.kafkachaos.contract.ContractLog;
import org.kafkachaos.contract.JsonlLog;
import org.kafkachaos.contract.MemberConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code commit: transaction} (workloads/transactions.py, the reference, mirrored): consume, transform and produce in
 * transactions that also commit the input offsets (KIP-447: sendOffsetsToTransaction with the consumer's group
 * metadata). One output record an input record, to the group's output topic, its headers naming the input; a
 * transaction every interval_ms, before a revocation and at the stop; every abort_every-th aborted on purpose.
 *
 * <p>The commit's window: {@code commit_sent} before sendOffsetsToTransaction, then {@code committed}, or
 * {@code commit_failed} ({@code aborted: true} after a successful abort; else indeterminate). KafkaProducer's documented
 * handling: a time-out, the same call again (an unknown commit outcome is never aborted); a fatal error (fenced by a
 * newer producer, a broken sequence or epoch, an authorization or version error), a new producer; any other, abort.
 * After an abort or a new producer the partitions go back to their committed offsets ({@code rewound}).
 * transactions/&lt;member&gt;.jsonl keeps one row an operation. One transactional producer a member
 * ({@code <group>-<member>}), or, with transaction.transactional_id: partition (the pattern before KIP-447), one an
 * input partition it owns ({@code <group>-<topic>-<partition>}, closed when the partition is revoked or lost; an abort
 * rewinds only its partition).
 */
final class Transactions implements AutoCloseable {
    static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);

    /** The open transaction is gone: the caller rewinds these partitions (null: every assigned one). */
    static final class Rewind extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final transient Set<TopicPartition> partitions;

        Rewind(Set<TopicPartition> partitions) {
            this.partitions = partitions;
        }
    }

    final MemberConfig cfg;
    final ContractLog log;
    final JsonlLog rows;
    private final boolean perPartition;
    private final Map<TopicPartition, TransactionalProducer> lanes = new LinkedHashMap<>();  // null: the member's one
    private int last;  // the transactions this process began, across its producers

    Transactions(MemberConfig cfg, ContractLog log) {
        this.cfg = cfg;
        this.log = log;
        this.rows = new JsonlLog(Path.of(cfg.runDir(), "transactions", cfg.member() + ".jsonl"));
        this.perPartition = "partition".equals(cfg.transaction().transactionalId());
        if (!perPartition) {
            lanes.put(null, new TransactionalProducer(this, cfg.groupId() + "-" + cfg.member()));
        }
    }

    int lastNumber() {
        return last;
    }

    int nextNumber() {
        return ++last;
    }

    private TransactionalProducer lane(TopicPartition key) {
        // a partition's first record: its producer, its id's init fencing the last owner's
        return lanes.computeIfAbsent(key, k -> new TransactionalProducer(this,
                cfg.groupId() + "-" + k.topic() + "-" + k.partition()));
    }

    boolean due() {
        return lanes.values().stream().anyMatch(TransactionalProducer::due);
    }

    /** Each record's output in its producer's open transaction; a new partition's producer begins before the next. */
    void process(List<ConsumerRecord<byte[], byte[]>> records) {
        Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> byKey = new LinkedHashMap<>();
        for (ConsumerRecord<byte[], byte[]> m : records) {
            TopicPartition key = perPartition ? new TopicPartition(m.topic(), m.partition()) : null;
            byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(m);
        }
        byKey.forEach((key, batch) -> lane(key).process(batch));
    }

    /** Every open transaction committed; one that could not be is Rewind for its partitions, once the rest were. */
    void commit(KafkaConsumer<byte[], byte[]> consumer) {
        Set<TopicPartition> rewound = new HashSet<>();
        for (TransactionalProducer lane : new ArrayList<>(lanes.values())) {
            try {
                lane.commit(consumer);
            } catch (Rewind e) {
                if (!perPartition) {
                    throw new Rewind(null);  // the member's one transaction: every assigned partition goes back
                }
                rewound.addAll(e.partitions);
            }
        }
        if (!rewound.isEmpty()) {
            throw new Rewind(rewound);
        }
    }

    void abortLost() {
        lanes.values().forEach(TransactionalProducer::abortLost);
    }

    /** Once a revocation's commit is done: the revoked partitions' producers closed (their next owner takes the ids). */
    void revoked(Collection<TopicPartition> partitions) {
        if (!perPartition) {
            return;
        }
        for (TopicPartition tp : partitions) {
            TransactionalProducer lane = lanes.remove(tp);
            if (lane != null) {
                lane.close();
            }
        }
    }

    /** At the stop: what is buffered sent, the producers and the log closed. */
    @Override
    public void close() {
        try {
            lanes.values().forEach(TransactionalProducer::close);
        } finally {
            rows.close();
        }
    }

    /** As a killed process leaves it: nothing more written, the producers dropped without a flush. */
    void kill() {
        rows.kill();
        lanes.values().forEach(TransactionalProducer::kill);
    }
}
