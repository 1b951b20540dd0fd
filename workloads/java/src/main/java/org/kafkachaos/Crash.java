package org.kafkachaos;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Brings one consumer down as if its process had been killed: no LeaveGroup (classic), no ConsumerGroupHeartbeat
 * with epoch -1 or -2 (KIP-848), no commit, no heartbeat after it. The Java client cannot kill a thread, and its
 * close(REMAIN_IN_GROUP) (KIP-1092) is not enough. Measured on Kafka 4.3.1 through the request-aware proxy, a close
 * with REMAIN_IN_GROUP and a zero time-out alone:
 * <ul>
 * <li>classic: sends no LeaveGroup, static or dynamic, but with enable.auto.commit it first commits every position
 * (an OffsetCommit 41 ms after the crash was asked);</li>
 * <li>consumer protocol: a dynamic member still sends a heartbeat with epoch -1 (the group let it go 1.0-1.2 s after
 * the crash instead of after its 10 s session), a static one a heartbeat with epoch -2, an auto-committing one its
 * final OffsetCommit.</li>
 * </ul>
 * So, before that close:
 * <ul>
 * <li>classic, with auto-commit: the positions are made invalid ({@code seekToBeginning}, a lazy reset that sends
 * nothing), so the close has nothing to commit;</li>
 * <li>consumer protocol: the consumer's one network thread, which owns every connection of the member, is stopped
 * first (it sends what was already queued, and its fetch sessions' close, then closes its connections), so nothing
 * the close asks for afterwards leaves.</li>
 * </ul>
 * With these, no group request of the member reached the broker after the crash, and the group let it go when its
 * session expired (9.8-10.9 s after, session 10 s), in every combination of protocol, static or dynamic membership
 * and commit mode measured. A request already on its way when the crash came still arrives, as from a killed process.
 */
final class Crash {
    /**
     * For measurements only (-Dkafka.chaos.crash=...): {@code sever} (the default, above), {@code close} (the public
     * API alone: no network thread stopped), {@code plain} (a REMAIN_IN_GROUP close with a zero time-out, nothing
     * before it), to show what each step prevents.
     */
    static final String MODE = System.getProperty("kafka.chaos.crash", "sever");

    private Crash() {
    }

    /** Returns what was done, for the host's log. */
    static String down(KafkaConsumer<?, ?> consumer, boolean autoCommit) {
        if ("sever".equals(MODE) && stopNetworkThread(consumer)) {
            closeInterrupted(consumer);
            return "network thread stopped, then closed remaining in the group";
        }
        boolean reset = autoCommit && !"plain".equals(MODE);
        if (reset) {
            consumer.seekToBeginning(consumer.assignment());
        }
        consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
                .withTimeout(Duration.ZERO));
        return "closed remaining in the group" + (reset ? ", positions reset first" : "");
    }

    /**
     * The close with a zero time-out, its waits cut short: with the network thread stopped, nothing answers the
     * events the close hands it, and the consumer protocol's close waits for the leave event's answer without a
     * time-out (ApplicationEventHandler.addAndGet); an interrupt ends that wait (every step of the close swallows
     * its own exception and the next goes on). The member's thread is interrupted every 10 ms until the close
     * returns, and its interrupt status cleared after.
     */
    static void closeInterrupted(KafkaConsumer<?, ?> consumer) {
        Thread self = Thread.currentThread();
        AtomicBoolean closing = new AtomicBoolean(true);
        Thread nudge = new Thread(() -> {
            while (closing.get()) {
                self.interrupt();
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, self.getName() + "-crash");
        nudge.setDaemon(true);
        nudge.start();
        try {
            consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
                    .withTimeout(Duration.ZERO));
        } catch (KafkaException e) {
            // an interrupted step of the close: the consumer is closed all the same
        } finally {
            closing.set(false);
            while (nudge.isAlive()) {
                try {
                    nudge.join();
                } catch (InterruptedException e) {
                    // a last nudge: cleared below
                }
            }
            Thread.interrupted();
        }
    }

    /**
     * A consumer on the KIP-848 protocol (AsyncKafkaConsumer) does all its network I/O in one thread; stopping it
     * with a zero time-out sends only what was already queued, then closes its connections. False for a classic
     * consumer (or a client whose internals differ: then the close alone is used).
     */
    static boolean stopNetworkThread(KafkaConsumer<?, ?> consumer) {
        try {
            Object delegate = field(consumer, KafkaConsumer.class, "delegate");
            if (!delegate.getClass().getSimpleName().equals("AsyncKafkaConsumer")) {
                return false;
            }
            Object handler = field(delegate, delegate.getClass(), "applicationEventHandler");
            Object thread = field(handler, handler.getClass(), "networkThread");
            thread.getClass().getMethod("close", Duration.class).invoke(thread, Duration.ZERO);
            return true;
        } catch (ReflectiveOperationException | RuntimeException e) {
            System.err.println("crash: cannot stop the consumer's network thread (" + e + "); closing it remaining in the group");
            return false;
        }
    }

    private static Object field(Object target, Class<?> type, String name) throws ReflectiveOperationException {
        Field f = type.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }
}
