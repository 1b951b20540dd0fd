package org.kafkachaos;

import org.kafkachaos.contract.ConsumerSettings;
import org.kafkachaos.contract.ContractLog;
import org.kafkachaos.contract.Json;
import org.kafkachaos.contract.KafkaErrors;
import org.kafkachaos.contract.MemberConfig;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.utils.AppInfoParser;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.zip.CRC32;

/**
 * One consumer-group member: one KafkaConsumer and its poll loop, in a thread of its own (workloads/member.py, the
 * reference, mirrored row for row). One object is one life of the member: a member restarted after a crash is a
 * new Member under the same name, appending to the same logs.
 *
 * <p>The contract: consumed records go to consumed/&lt;member&gt;.jsonl and group events to
 * events/&lt;member&gt;.jsonl. A batch is appended and flushed to the log BEFORE its offsets are committed, and a
 * commit's {@code commit_sent} is flushed before the commit leaves, so a killed member never looks like a Kafka loss.
 */
final class Member implements ConsumerRebalanceListener {
    static final String CLIENT = "java-member";
    static final Duration POLL = Duration.ofMillis(500);  // workloads/config.py BATCH_WAIT_MS
    static final Duration RESTORING_POLL = Duration.ofMillis(50);  // member.py RESTORING_WAIT_MS
    static final Duration STATEFUL_POLL = Duration.ofMillis(100);  // member.py STATEFUL_WAIT_MS: a restore starts late by at most it
    static final long ERROR_PAUSE_MS = 100;
    /** How the group refuses a duplicated group.instance.id (workloads/history.py FENCING): a `fenced` end. */
    static final Set<String> FENCING = Set.of("FENCED_INSTANCE_ID", "UNRELEASED_INSTANCE_ID");

    private final MemberConfig cfg;
    private final String name;
    private final ContractLog log;  // consumed/ and events/, the sequence n, the commit windows
    private final long seed;
    private final Processing processing;
    private final ControlFile control;
    private final CountDownLatch woken = new CountDownLatch(1);  // a crash cuts the processing delay short
    // the next offset of each partition after the last record a poll handed over (librdkafka's position), for the
    // commit of positions when idle; a partition newly assigned has none until a record of it is handed over
    private final Map<TopicPartition, Long> positions = new HashMap<>();
    private volatile KafkaConsumer<byte[], byte[]> consumer;
    private volatile boolean stopping;
    private volatile boolean crashed;
    // A failed commit is retried when the member is idle: otherwise a group whose last commit failed (e.g. in a
    // rebalance) would never show its real progress to Kafka.
    private volatile boolean uncommitted;
    private JsonNode override;
    private Processing slow;
    private volatile MemberState state;  // a stateful member's (MemberState); null: it keeps none
    private volatile Transactions transactions;  // commit: transaction's (Transactions); null: it commits otherwise

    Member(MemberConfig cfg) {
        this.cfg = cfg;
        this.name = cfg.member();
        this.log = new ContractLog(cfg, CLIENT);  // a restarted member goes on from its log's last row
        this.seed = memberSeed(name);
        this.processing = new Processing(cfg.processing(), seed);
        this.control = new ControlFile(ControlFile.path(cfg.runDir(), name));
    }

    String name() {
        return name;
    }

    /** zlib.crc32(name): the seed of the member's own processing delays, the same in every life. */
    static long memberSeed(String name) {
        CRC32 crc = new CRC32();
        crc.update(name.getBytes(StandardCharsets.UTF_8));
        return crc.getValue();
    }

    /** Asks for a clean stop: the batch in hand is finished and committed, then the consumer closes (a leave). */
    void stop() {
        stopping = true;
    }

    /**
     * From the host's control thread: the member is dead from now on, as a killed process is. Its logs take nothing
     * more (what was not flushed is lost), so no commit can leave whose {@code commit_sent} is not in the log; its
     * thread is woken from poll() or its processing delay and brings the consumer down without a leave
     * ({@link Crash}).
     */
    void crash() {
        crashed = true;
        log.kill();
        MemberState s = state;
        if (s != null) {
            s.kill();
        }
        Transactions t = transactions;
        if (t != null) {
            t.kill();
        }
        woken.countDown();
        KafkaConsumer<byte[], byte[]> c = consumer;
        if (c != null) {
            try {
                c.wakeup();
            } catch (RuntimeException e) {
                // a consumer an error has already closed: nothing to wake
            }
        }
    }

    /** The member's thread: returns its exit code (0, or 3 when an error ended it, as member.py's process). */
    int run() {
        try {
            consumer = newConsumer();
            state = cfg.state() == null ? null : new MemberState(cfg);
            transactions = "transaction".equals(cfg.commit()) ? new Transactions(cfg, log) : null;
        } catch (KafkaException e) {
            end(e, null);
            log.closeEvents();
            log.closeConsumed();
            return 3;
        }
        try {
            subscribe();
            // typed facts of the client contract; the analysis reads these fields, detail is for people
            Map<String, Object> started = startedFacts(cfg);
            started.put("detail", "commit=" + cfg.commit());
            event("started", started);
            while (!stopping && !crashed) {
                try {
                    boolean restoring = state != null && state.restoring();
                    if (restoring) {
                        state.step(consumer, this::event);
                    }
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(restoring ? RESTORING_POLL : state != null ? STATEFUL_POLL : POLL);
                    if (!records.isEmpty()) {
                        handle(records);
                    } else if (uncommitted) {
                        commitPositions();
                    } else if (transactions != null && transactions.due()) {
                        commitTransaction();
                    }
                } catch (WakeupException e) {
                    // only a crash wakes a member: the loop's condition ends it
                } catch (KafkaException e) {
                    if (crashed) {
                        break;
                    }
                    if (KafkaErrors.fatal(e)) {
                        throw new Fatal(e, null);
                    }
                    // As an application does: log it and poll on. The client rejoins by itself after, e.g., an
                    // UNKNOWN_MEMBER_ID that its OffsetFetch drew when the group removed it during a slow join.
                    event("error", Json.obj("detail", KafkaErrors.detail(e)));
                    if (!(e instanceof RetriableException)) {
                        sleep(ERROR_PAUSE_MS);  // an error poll() throws at once, again and again, must not spin
                    }
                }
            }
        } catch (Fatal e) {
            if (!crashed) {
                end(e.getCause(), e.request);
                bringDown("it ended on " + KafkaErrors.name(e.getCause()));
                return 3;
            }
        } catch (RuntimeException e) {  // not the client's: e.g. a log that cannot be written
            if (!crashed) {
                e.printStackTrace();
                try {
                    end(e, null);
                } catch (RuntimeException again) {
                    System.err.println(name + ": cannot log its end: " + again);
                }
                bringDown("it failed");
                return 1;
            }
        } finally {
            log.closeConsumed();
        }
        if (crashed) {
            bringDown("crashed");
            return 0;
        }
        try {
            if (transactions != null) {
                commitTransaction();
                transactions.close();
            }
            consumer.close();  // leaves the group: the rebalance this triggers is the leave trigger
            if (state != null) {
                state.close();
            }
        } catch (KafkaException e) {
            System.err.println(name + ": close failed: " + e);
        }
        event("stopped", Json.obj());
        log.closeEvents();
        return 0;
    }

    /** The consumer closed as a dead process leaves it: no leave, no commit ({@link Crash}). */
    private void bringDown(String why) {
        log.killEvents();
        if (state != null) {
            state.abandon();
        }
        try {
            String how = Crash.down(consumer, "auto".equals(cfg.commit()));
            System.err.println(name + ": " + why + ": " + how);
        } catch (RuntimeException e) {
            System.err.println(name + ": " + why + ": the close failed: " + e);
        }
    }

    private KafkaConsumer<byte[], byte[]> newConsumer() {
        Properties settings = ConsumerSettings.of(cfg, System.getenv());
        if ("auto".equals(cfg.commit())) {
            settings.put("interceptor.classes", AutoCommitEvents.class.getName());
        }
        AutoCommitEvents.CONSTRUCTING.set(this);
        try {
            return new KafkaConsumer<>(settings);
        } finally {
            AutoCommitEvents.CONSTRUCTING.remove();
        }
    }

    /**
     * The run's topics by name (or only the member's own), or the pattern, matched against whole topic names: by
     * the client under the classic protocol, by the broker under KIP-848 (as librdkafka's member does).
     */
    private void subscribe() {
        if (cfg.pattern() == null) {
            consumer.subscribe(cfg.subscription(), this);
        } else if ("consumer".equals(cfg.protocol())) {
            consumer.subscribe(new SubscriptionPattern(cfg.pattern()), this);
        } else {
            consumer.subscribe(Pattern.compile(cfg.pattern()), this);
        }
    }

    /** The `started` facts (workloads/history.py started_facts), in its order. */
    static Map<String, Object> startedFacts(MemberConfig cfg) {
        Map<String, Object> facts = Json.obj("client", CLIENT, "protocol", cfg.protocol(), "assignor", cfg.assignorFact(),
                "instance_id", cfg.instanceId(), "commit", cfg.commit(), "heartbeat_interval_ms", cfg.heartbeatIntervalMs());
        if (cfg.host() != null) {  // a hosted member: its host, and the client settings hosting changed
            facts.put("host", cfg.host());
            facts.put("hosted_settings", cfg.hostedSettings());
        }
        facts.put("client_version", AppInfoParser.getVersion());
        return facts;
    }

    /** Appends and flushes one event; false when the member is dead (crashed) and nothing was written. */
    private boolean event(String kind, Map<String, Object> fields) {
        return log.event(kind, fields);
    }

    private int refreshGeneration() {
        int generation = consumer.groupMetadata().generationId();
        log.generation(generation);
        return generation;
    }

    // Rebalance callbacks run inside poll(), between batches: the previous batch is already committed.
    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        refreshGeneration();
        partitions.forEach(positions::remove);
        event("assigned", Json.obj("partitions", ContractLog.names(partitions), "member_id", consumer.groupMetadata().memberId()));
        if (state != null) {  // pauses what it restores
            state.assigned(consumer, partitions, this::event);
        }
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        partitions.forEach(positions::remove);
        if (transactions != null) {  // the open transaction committed (or aborted) before the partitions go
            try {
                transactions.commit(consumer);
            } catch (Transactions.Rewind e) {
                // what it consumed goes to the next owner, from the committed offsets
            }
            transactions.revoked(partitions);
        }
        if (state != null) {  // the changelog flushed before the partitions go
            state.revoked(partitions, this::event);
        }
        event("revoked", Json.obj("partitions", ContractLog.names(partitions)));
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        partitions.forEach(positions::remove);
        if (transactions != null) {
            transactions.abortLost();
            transactions.revoked(partitions);
        }
        if (state != null) {
            state.lost(partitions, this::event);
        }
        event("lost", Json.obj("partitions", ContractLog.names(partitions)));
    }

    /**
     * Process (the configured delay), log, commit, in the order the commit mode says: sync/async: log, then commit
     * (at least once); before_process: commit, then process and log (at most once, on purpose); auto: log, and the
     * client's auto-commit (in a later poll) commits the positions of what polls handed over.
     */
    private void handle(ConsumerRecords<byte[], byte[]> batch) {
        long receivedAt = System.currentTimeMillis();  // consumed: when poll() handed the batch over
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>(batch.count());
        batch.forEach(records::add);
        if (state != null) {
            records = state.heldBack(records, consumer);
            if (records.isEmpty()) {
                return;
            }
        }
        for (ConsumerRecord<byte[], byte[]> r : records) {
            positions.merge(new TopicPartition(r.topic(), r.partition()), r.offset() + 1, Math::max);
        }
        String commit = cfg.commit();
        if ("transaction".equals(commit)) {  // the harness reads what it consumed back from the output topic
            sleep(processing().delayMs(records.size()));
            transactions.process(records);
            if (transactions.due()) {
                commitTransaction();
            }
            return;
        }
        if ("before_process".equals(commit)) {
            commit(records);
        }
        sleep(processing().delayMs(records.size()));
        logBatch(records, receivedAt);
        if ("sync".equals(commit) || "async".equals(commit)) {
            commit(records);
        }
    }

    /** The scenario's processing, or a slow_processing trigger's while it lasts (the member's control file). */
    private Processing processing() {
        JsonNode file = control.read();
        JsonNode wanted = file == null ? null : file.get("processing");
        if (wanted != null && wanted.isNull()) {
            wanted = null;
        }
        if (wanted == null ? override != null : !wanted.equals(override)) {
            override = wanted;
            slow = wanted == null ? null : new Processing(MemberConfig.Processing.of(wanted), seed);
        }
        return slow != null ? slow : processing;
    }

    private void sleep(long ms) {
        if (ms <= 0) {
            return;
        }
        try {
            woken.await(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void logBatch(List<ConsumerRecord<byte[], byte[]>> records, long at) {
        int gen = refreshGeneration();
        List<Map<String, Object>> rows = new ArrayList<>(records.size());
        for (ConsumerRecord<byte[], byte[]> m : records) {
            rows.add(log.row(m, at, gen));
        }
        log.rows(rows, true);
        if (state != null) {
            state.apply(records, gen);
        }
    }

    private void commit(List<ConsumerRecord<byte[], byte[]>> records) {
        Map<TopicPartition, OffsetAndMetadata> next = new LinkedHashMap<>();
        for (ConsumerRecord<byte[], byte[]> m : records) {
            TopicPartition tp = new TopicPartition(m.topic(), m.partition());
            OffsetAndMetadata seen = next.get(tp);
            if (seen == null || seen.offset() < m.offset() + 1) {
                next.put(tp, new OffsetAndMetadata(m.offset() + 1));
            }
        }
        commitOffsets(next);
    }

    /** The open transactions committed; after an abort, its partitions (every assigned one with one transactional id
     * a member) back to their committed offsets. */
    private void commitTransaction() {
        try {
            transactions.commit(consumer);
        } catch (Transactions.Rewind e) {
            Set<TopicPartition> assignment = new LinkedHashSet<>(consumer.assignment());
            if (e.partitions != null) {
                assignment.retainAll(e.partitions);
            }
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assignment, Transactions.CALL_TIMEOUT);
            Map<String, Object> offsets = new LinkedHashMap<>();
            for (TopicPartition tp : assignment) {
                OffsetAndMetadata at = committed.get(tp);
                if (at == null) {
                    consumer.seekToBeginning(List.of(tp));
                } else {
                    consumer.seek(tp, at);
                }
                offsets.put(tp.topic() + ":" + tp.partition(), at == null ? 0 : at.offset());
            }
            event("rewound", Json.obj("offsets", offsets));
        }
    }

    /** Commit where the member is: every record before its position is already in the log. */
    private void commitPositions() {
        if ("auto".equals(cfg.commit())) {
            return;
        }
        Set<TopicPartition> assignment = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
        positions.forEach((tp, offset) -> {
            if (assignment.contains(tp)) {
                offsets.put(tp, new OffsetAndMetadata(offset));
            }
        });
        if (offsets.isEmpty()) {
            uncommitted = false;
        } else {
            commitOffsets(offsets);
        }
    }

    /**
     * Commit through the contract's window (ContractLog: rows flushed, then {@code commit_sent}, then the commit, then
     * its answer); a dead member's {@code commit_sent} is refused and its commit never leaves.
     */
    private void commitOffsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (state != null) {
            state.flush();  // the changelog before the offsets: a commit never runs ahead of the state
        }
        ContractLog.Sent sent = log.sending(offsets);
        if (sent == null) {
            return;  // crashed: a killed process sends nothing more
        }
        if ("async".equals(cfg.commit())) {
            try {
                consumer.commitAsync(offsets, (answered, error) -> {
                    uncommitted = error != null;
                    log.answered(sent, error);
                });
            } catch (WakeupException e) {
                throw e;
            } catch (KafkaException e) {  // a fencing recorded by an earlier asynchronous commit
                throw new Fatal(e, "OffsetCommit");
            }
            return;
        }
        try {
            consumer.commitSync(offsets);
            uncommitted = false;
            log.answered(sent, null);
        } catch (WakeupException e) {
            throw e;
        } catch (KafkaException e) {
            uncommitted = true;
            log.answered(sent, e);
            if (KafkaErrors.fatal(e)) {
                throw new Fatal(e, "OffsetCommit");
            }
        }
    }

    /**
     * An auto-commit's answer (AutoCommitEvents; perhaps on the client's heartbeat thread): `committed`, with no
     * commit window, as member.py logs librdkafka's.
     */
    void autoCommitted(Map<TopicPartition, OffsetAndMetadata> offsets) {
        uncommitted = false;
        if (!offsets.isEmpty()) {  // the classic client "commits" nothing (sends nothing) before it has positions
            log.committedWithoutWindow(offsets);
        }
    }

    /**
     * The member's last event: the error it ends on, that it cannot go on (fatal), and the group request that drew
     * it when the member knows it (its own commit), as history.py end_event writes it.
     */
    private void end(Throwable error, String request) {
        String errorName = KafkaErrors.name(error);
        event(FENCING.contains(errorName) ? "fenced" : "error", Json.obj("error", errorName, "fatal", true,
                "request", request, "detail", errorName + ": " + error.getMessage()));
    }

    /** An error the member cannot go on after, with the group request that drew it (null: unknown). */
    static final class Fatal extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String request;

        Fatal(Throwable cause, String request) {
            super(cause);
            this.request = request;
        }
    }
}
