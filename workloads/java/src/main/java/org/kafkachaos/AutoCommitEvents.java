package org.kafkachaos;

import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

import java.util.Map;

/**
 * The answers of the Java client's own auto-commits, which no public callback reports: a consumer interceptor sees
 * each successful commit (a failed auto-commit is only the client's log line). Installed for commit=auto only, so
 * a member's own commits are never reported twice. librdkafka's member logs these as `committed` without a
 * commit window (its on_commit), and so does this one.
 *
 * <p>The consumer creates the interceptor itself, in the member's thread, inside its constructor: the member
 * being constructed on this thread is the one it reports to.
 */
public final class AutoCommitEvents implements ConsumerInterceptor<byte[], byte[]> {
    static final ThreadLocal<Member> CONSTRUCTING = new ThreadLocal<>();

    private Member member;

    @Override
    public void configure(Map<String, ?> configs) {
        member = CONSTRUCTING.get();
    }

    @Override
    public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
        return records;
    }

    /** May run on the client's heartbeat thread (classic), where the consumer must not be touched. */
    @Override
    public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (member != null) {
            member.autoCommitted(offsets);
        }
    }

    @Override
    public void close() {
    }
}
