package org.kafkachaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.kafkachaos.contract.MemberConfig;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * workloads.config.HostConfig, as the harness hands it over: one JSON document in the environment variable
 * KAFKA_CHAOS_WORKLOAD_CONFIG, never on the command line; its members are the contract library's MemberConfig.
 */
final class Config {
    static final String ENV_VAR = MemberConfig.ENV_VAR;
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Config() {
    }

    /** workloads.config.HostConfig: one process, many members. */
    record Host(String host, String runDir, List<MemberConfig> members, double startAfterS, double startSpacingS) {
        static Host of(JsonNode n) {
            List<MemberConfig> members = new ArrayList<>();
            for (JsonNode m : n.path("members")) {
                members.add(MemberConfig.of(m));
            }
            return new Host(MemberConfig.text(n, "host"), MemberConfig.text(n, "run_dir"), members,
                    n.path("start_after_s").asDouble(0), n.path("start_spacing_s").asDouble(0));
        }
    }

    static Host fromEnvironment() {
        String text = System.getenv(ENV_VAR);
        if (text == null) {
            throw new IllegalStateException(ENV_VAR + " is not set: workload processes are started by the kafka-chaos harness");
        }
        return parse(text);
    }

    static Host parse(String text) {
        try {
            return Host.of(MAPPER.readTree(text));
        } catch (IOException e) {
            throw new IllegalArgumentException(ENV_VAR + " is not a host config: " + e.getMessage(), e);
        }
    }
}
