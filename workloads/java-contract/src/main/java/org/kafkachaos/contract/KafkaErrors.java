package org.kafkachaos.contract;

import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.GroupMaxSizeReachedException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.errors.UnreleasedInstanceIdException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.protocol.Errors;

/** How the Java client's exceptions appear in the events contract: the Kafka error name and whether it is fatal. */
public final class KafkaErrors {
    private KafkaErrors() {
    }

    /**
     * The Kafka error name of an exception (FencedInstanceIdException: FENCED_INSTANCE_ID); an exception no error
     * code maps to keeps its class's name in the same form (CommitFailedException: COMMIT_FAILED), as
     * workloads/verifiable.py kafka_error_name names VerifiableConsumer's.
     */
    public static String name(Throwable e) {
        Errors error = Errors.forException(e);
        if (error != Errors.UNKNOWN_SERVER_ERROR || e instanceof UnknownServerException) {
            return error.name();
        }
        String simple = e.getClass().getSimpleName();
        if (simple.endsWith("Exception")) {
            simple = simple.substring(0, simple.length() - "Exception".length());
        }
        return simple.replaceAll("(?<=[a-z0-9])(?=[A-Z])", "_").toUpperCase(java.util.Locale.ROOT);
    }

    /** "<ERROR>: <message>", the form of every event's detail about an error. */
    public static String detail(Throwable e) {
        return name(e) + ": " + e.getMessage();
    }

    /**
     * Errors the member cannot go on after: the group refused its instance id, or the client cannot be used with
     * this cluster at all. A failed commit, a rebalance in progress or a time-out are not.
     */
    public static boolean fatal(Throwable e) {
        return e instanceof FencedInstanceIdException || e instanceof UnreleasedInstanceIdException
                || e instanceof AuthenticationException || e instanceof AuthorizationException
                || e instanceof UnsupportedVersionException || e instanceof GroupMaxSizeReachedException
                || e instanceof InvalidConfigurationException;
    }
}
