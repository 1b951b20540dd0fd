package org.kafkachaos;

import org.kafkachaos.contract.ContractLog;
import org.kafkachaos.contract.Json;
import org.kafkachaos.contract.JsonlLog;
import org.kafkachaos.contract.KafkaErrors;
import org.kafkachaos.contract.MemberConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

/**
 * One transactional.id's producer and its open transaction (workloads/transactions.py TransactionalProducer,
 * mirrored): begin on the first record after a commit, one output record an input record, commit on time, before a
 * revocation and at the stop; see {@link Transactions} for the commit's window and the documented handling.
 */
final class TransactionalProducer {
    static final int RETRIES = 20;

    private final Transactions owner;
    private final MemberConfig cfg;
    private final MemberConfig.Transaction spec;
    private final ContractLog log;
    private final JsonlLog rows;
    private final String transactionalId;
    private KafkaProducer<byte[], byte[]> producer;
    private int number;  // its open transaction's number (an init row: the process's last so far)
    private long openedAt = -1;  // nanoTime; -1: no transaction open
    private boolean failed;      // a record of the open transaction was refused: it ends at once
    private final Map<TopicPartition, Long> next = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));

    TransactionalProducer(Transactions owner, String transactionalId) {
        this.owner = owner;
        this.cfg = owner.cfg;
        this.spec = cfg.transaction();
        this.log = owner.log;
        this.rows = owner.rows;
        this.transactionalId = transactionalId;
        this.number = owner.lastNumber();
        this.producer = newProducer();
    }

    private KafkaProducer<byte[], byte[]> newProducer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", cfg.bootstrapServers());
        p.put("client.id", cfg.member());  // rpc rules aimed at the member match its transactional requests
        p.put("transactional.id", transactionalId);
        p.put("transaction.timeout.ms", spec.timeoutMs());
        p.put("enable.idempotence", true);
        p.put("linger.ms", 5);
        p.put("max.block.ms", spec.callTimeoutMs());  // each transactional call's time-out (transaction.call_timeout_ms)
        if (spec.requestTimeoutMs() > 0) {
            p.put("request.timeout.ms", spec.requestTimeoutMs());
        }
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        KafkaProducer<byte[], byte[]> made = new KafkaProducer<>(p);
        retrying("init", made::initTransactions, Json.obj());
        return made;
    }

    boolean open() {
        return openedAt >= 0;
    }

    boolean due() {
        return open() && (failed || (System.nanoTime() - openedAt) / 1_000_000 >= spec.intervalMs());
    }

    void process(List<ConsumerRecord<byte[], byte[]>> records) {
        if (!open()) {
            producer.beginTransaction();
            number = owner.nextNumber();
            openedAt = System.nanoTime();
            row("begin", Json.obj(), true);
        }
        int txn = number;
        for (ConsumerRecord<byte[], byte[]> m : records) {
            String input = m.topic() + ":" + m.partition() + ":" + m.offset();
            try {
                producer.send(new ProducerRecord<>(cfg.outputTopic(), null, m.key(), m.value(), headers(m, txn)),
                        (metadata, error) -> row("ack", ackFields(txn, input, metadata == null ? -1 : metadata.partition(),
                                error == null ? metadata.offset() : null, error), false));
            } catch (KafkaException e) {
                // the transaction failed (a record refused: send() throws its error from then on): the rest of the
                // batch is not sent, and the commit that follows at once meets the error, aborts (or replaces the
                // producer, when fatal) and rewinds
                Map<String, Object> fields = Json.obj("input", input);
                fields.putAll(errorFields(e));
                row("send", fields, true);
                failed = true;
                break;
            }
            row("send", Json.obj("input", input), false);
            next.merge(new TopicPartition(m.topic(), m.partition()), m.offset() + 1, Math::max);
        }
    }

    private Map<String, Object> ackFields(int txn, String input, int partition, Long offset, Exception error) {
        Map<String, Object> fields = Json.obj("txn", txn, "input", input, "partition", partition, "offset", offset);
        if (error != null) {
            fields.putAll(errorFields(error));
        }
        return fields;
    }

    private RecordHeaders headers(ConsumerRecord<byte[], byte[]> m, int txn) {
        RecordHeaders h = new RecordHeaders();
        String value = m.value() == null ? "" : new String(m.value(), StandardCharsets.UTF_8);
        int colon = value.lastIndexOf(':');
        h.add("in-topic", utf8(m.topic()));
        h.add("in-partition", utf8(Integer.toString(m.partition())));
        h.add("in-offset", utf8(Long.toString(m.offset())));
        h.add("in-member", utf8(cfg.member()));
        h.add("in-processed-at", utf8(Long.toString(System.currentTimeMillis())));
        h.add("in-producer-id", utf8(colon > 0 ? value.substring(0, colon) : ""));
        h.add("in-seq", utf8(colon >= 0 ? value.substring(colon + 1) : ""));
        h.add("txn", utf8(Integer.toString(txn)));
        return h;
    }

    /** Commit the open transaction with its offsets, or abort it (on purpose, or on an error): Rewind then. */
    void commit(KafkaConsumer<byte[], byte[]> consumer) {
        if (!open()) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
        next.forEach((tp, offset) -> offsets.put(tp, new OffsetAndMetadata(offset)));
        Set<TopicPartition> consumed = new HashSet<>(next.keySet());
        ContractLog.Sent sent = log.sending(offsets);
        if (sent == null) {
            return;  // crashed: nothing more leaves
        }
        if (spec.abortEvery() > 0 && number % spec.abortEvery() == 0) {
            abort(sent, "aborted on purpose (transaction.abort_every)");
            throw new Transactions.Rewind(consumed);
        }
        try {
            retrying("send_offsets", () -> producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata()),
                    Json.obj("offsets", sent.offsets()));
            retrying("commit", producer::commitTransaction, Json.obj());
        } catch (KafkaException e) {
            if (fatal(e)) {
                log.answered(sent, e);  // the outcome unknown: the producer is replaced
                replace(e);
            } else {
                abort(sent, KafkaErrors.detail(e));
            }
            throw new Transactions.Rewind(consumed);
        }
        log.answered(sent, null);
        closed();
    }

    /** The partitions were lost: the open transaction cannot commit their offsets any more. */
    void abortLost() {
        if (!open()) {
            return;
        }
        try {
            retrying("abort", producer::abortTransaction, Json.obj("why", "partitions lost"));
        } catch (KafkaException e) {
            replace(e);
        }
        closed();
    }

    private void abort(ContractLog.Sent sent, String why) {
        try {
            retrying("abort", producer::abortTransaction, Json.obj("why", why));
            Map<String, Object> window = Json.obj("offsets", sent.offsets(), "commit_id", sent.commitId(),
                    "requested_at_ms", sent.requestedAt(), "aborted", true, "detail", why);
            log.event("commit_failed", window);
        } catch (KafkaException e) {
            log.answered(sent, e);
            replace(e);
        }
        closed();
    }

    private void replace(KafkaException e) {
        log.event("error", Json.obj("detail", "transactional producer replaced: " + KafkaErrors.detail(e)));
        try {
            producer.close(Duration.ZERO);
        } catch (RuntimeException ignored) {
            // a producer in a fatal state may refuse even its close
        }
        producer = newProducer();
        closed();
    }

    private void closed() {
        openedAt = -1;
        failed = false;
        next.clear();
    }

    static boolean fatal(KafkaException e) {
        return e instanceof ProducerFencedException || e instanceof OutOfOrderSequenceException
                || e instanceof InvalidProducerEpochException || e instanceof AuthorizationException
                || e instanceof UnsupportedVersionException;
    }

    static String errorClass(Throwable e) {
        return e instanceof KafkaException k && fatal(k) ? "fatal" : e instanceof TimeoutException ? "retriable"
                : e instanceof KafkaException ? "abortable" : "other";
    }

    private static Map<String, Object> errorFields(Throwable e) {
        return Json.obj("error", KafkaErrors.name(e), "error_class", errorClass(e), "detail", KafkaErrors.detail(e));
    }

    /** The call, again after a time-out (at most RETRIES times); one row of transactions/ for it. */
    private void retrying(String op, Runnable call, Map<String, Object> fields) {
        long started = System.nanoTime();
        for (int attempt = 0; ; attempt++) {
            try {
                call.run();
                fields.put("retries", attempt);
                row(op, elapsed(fields, started), true);
                return;
            } catch (TimeoutException e) {
                if (attempt == RETRIES - 1) {
                    fail(op, fields, started, attempt, e);
                    throw e;
                }
            } catch (KafkaException e) {
                fail(op, fields, started, attempt, e);
                throw e;
            }
        }
    }

    private void fail(String op, Map<String, Object> fields, long started, int attempt, KafkaException e) {
        fields.put("retries", attempt);
        fields.putAll(errorFields(e));
        row(op, elapsed(fields, started), true);
    }

    private static Map<String, Object> elapsed(Map<String, Object> fields, long started) {
        fields.put("elapsed_ms", (System.nanoTime() - started) / 1_000_000);
        return fields;
    }

    private void row(String op, Map<String, Object> fields, boolean flush) {
        Map<String, Object> row = Json.obj("ts_ms", System.currentTimeMillis(), "member", cfg.member(),
                "transactional_id", transactionalId, "timeout_ms", spec.timeoutMs(), "op", op, "txn", number);
        row.putAll(fields);
        if (flush) {
            rows.write(row);
        } else {
            rows.append(row);
        }
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** At the stop, or its partition revoked: what is buffered sent, the producer closed. */
    void close() {
        producer.close(Transactions.CALL_TIMEOUT);
    }

    /** As a killed process leaves it: the producer dropped without a flush. */
    void kill() {
        try {
            producer.close(Duration.ZERO);
        } catch (RuntimeException ignored) {
            // already closing
        }
    }
}
