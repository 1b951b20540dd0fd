package org.kafkachaos;

import org.kafkachaos.contract.ConsumerSettings;
import org.kafkachaos.contract.ContractLog;
import org.kafkachaos.contract.Json;
import org.kafkachaos.contract.JsonlLog;
import org.kafkachaos.contract.MemberConfig;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * The program's pure parts answered without a cluster, for tests/workloads/test_java_host_unit.py: {@code settings}
 * (each member of the host config in the environment: its client settings and `started` facts), {@code json} (each
 * JSON line of stdin written again by {@link Json}), {@code sequence FILE} (the next consumption sequence after a
 * consumed log, its cut-short tail dropped first), {@code delays SPEC NAME COUNT} (a member's processing delays).
 */
public final class Check {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Check() {
    }

    public static void main(String[] args) throws IOException {
        switch (args.length == 0 ? "" : args[0]) {
            case "settings":
                for (MemberConfig m : Config.fromEnvironment().members()) {
                    Properties p = ConsumerSettings.of(m, System.getenv());
                    Map<String, Object> settings = new TreeMap<>();
                    p.stringPropertyNames().forEach(k -> settings.put(k, p.getProperty(k)));
                    System.out.println(Json.write(Json.obj("member", m.member(), "settings", settings,
                            "started", Member.startedFacts(m))));
                }
                break;
            case "json":
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    System.out.println(Json.write(MemberConfig.plain(MAPPER.readTree(line))));
                }
                break;
            case "sequence":
                JsonlLog.dropUnterminatedTail(Path.of(args[1]));
                System.out.println(ContractLog.nextSequence(Path.of(args[1])));
                break;
            case "delays":
                Processing processing = new Processing(MemberConfig.Processing.of(MAPPER.readTree(args[1])),
                        Member.memberSeed(args[2]));
                List<Long> delays = new ArrayList<>();
                for (int i = 0; i < Integer.parseInt(args[3]); i++) {
                    delays.add(processing.delayMs(10));
                }
                System.out.println(Json.write(delays));
                break;
            default:
                System.err.println("usage: Check settings | json | sequence FILE | delays SPEC NAME COUNT");
                System.exit(2);
        }
    }
}
