package org.kafkachaos;

import org.kafkachaos.contract.Json;
import org.kafkachaos.contract.MemberConfig;
import com.fasterxml.jackson.databind.JsonNode;
import sun.misc.Signal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The Java member program's main: many consumer-group members in one JVM, each a thread with its own KafkaConsumer
 * ({@link Member}), as an application that runs a consumer per thread does (issue 39). Its config is a HostConfig
 * (workloads/config.py) in the environment; workloads/java_host.py starts it.
 *
 * <p>The harness brings members down and up through control/&lt;host&gt;.host.json ({"crashed": [...], "stopped":
 * [...]}: crashed as if its process was killed, {@link Crash}; stopped by a clean close, a leave; a name taken off
 * both lists starts again under the same name), polled every 100 ms, and this host answers in
 * control/&lt;host&gt;.ack.json ({"crashed", "down_at_ms", "stopped", "running"}: down_at_ms, when each crashed
 * member's consumer was brought down) once it has done so, as workloads/member_host.py does. SIGTERM (or SIGINT, or the harness's death) stops every member cleanly; the exit code is 0, or the highest
 * a member ended with (3: an error ended it).
 */
public final class MemberHost {
    static final long CONTROL_EVERY_MS = 100;
    static final long GRACE_MS = 15_000;  // after the harness is gone: a clean stop may wait on a frozen broker

    private final Config.Host cfg;
    private final Map<String, MemberConfig> configs = new LinkedHashMap<>();
    private final Map<String, Slot> members = new LinkedHashMap<>();
    private final ControlFile control;
    private Map<String, String> down = new TreeMap<>();  // member -> crashed or stopped, as the harness asked
    private final Map<String, Long> downAtMs = new TreeMap<>();  // a crashed member -> when its consumer went down
    private Map<String, Object> acked;
    private volatile boolean stopping;

    MemberHost(Config.Host cfg) {
        this.cfg = cfg;
        cfg.members().forEach(m -> configs.put(m.member(), m));
        this.control = new ControlFile(ControlFile.path(cfg.runDir(), cfg.host() + ".host"));
    }

    public static void main(String[] args) {
        Config.Host cfg = Config.fromEnvironment();
        MemberHost host = new MemberHost(cfg);
        Signal.handle(new Signal("TERM"), signal -> host.stop());
        Signal.handle(new Signal("INT"), signal -> host.stop());
        watchParent(host);
        int code = host.run();
        System.out.flush();
        System.err.flush();
        System.exit(code);
    }

    void stop() {
        stopping = true;
    }

    /** Each member in turn, start_spacing_s apart from start_after_s on (workloads.config.HostConfig). */
    void startMembers() {
        long first = System.nanoTime() + (long) (cfg.startAfterS() * 1e9);
        int i = 0;
        for (MemberConfig m : configs.values()) {
            long at = first + (long) (i++ * cfg.startSpacingS() * 1e9);
            while (!stopping && System.nanoTime() < at) {
                sleep(Math.max(1, Math.min(CONTROL_EVERY_MS, (at - System.nanoTime()) / 1_000_000)));
            }
            if (stopping) {
                return;
            }
            members.put(m.member(), new Slot(m).start());
        }
    }

    int run() {
        System.out.println(cfg.host() + ": " + configs.size() + " members, open-file limit " + openFileLimit()
                + ", max heap " + (Runtime.getRuntime().maxMemory() >> 20) + " MB");
        System.out.flush();
        startMembers();
        while (!stopping && (!down.isEmpty() || members.values().stream().anyMatch(Slot::running))) {
            JsonNode wanted = control.read();
            apply(names(wanted, "crashed"), names(wanted, "stopped"));
            ack();
            sleep(CONTROL_EVERY_MS);
        }
        members.values().forEach(Slot::stop);
        members.values().forEach(Slot::join);
        return members.values().stream().mapToInt(s -> s.exitCode).max().orElse(0);
    }

    private static List<String> names(JsonNode wanted, String field) {
        List<String> out = new ArrayList<>();
        if (wanted != null) {
            wanted.path(field).forEach(n -> out.add(n.asText()));
        }
        return out;
    }

    /**
     * Crash the members newly on the crashed list, close those newly on the stopped list (a graceful leave), start
     * again those taken off both; the ack follows.
     */
    void apply(List<String> crashed, List<String> stopped) {
        Map<String, String> wanted = new TreeMap<>();
        crashed.stream().filter(configs::containsKey).forEach(n -> wanted.put(n, "crashed"));
        stopped.stream().filter(configs::containsKey).forEach(n -> wanted.putIfAbsent(n, "stopped"));
        if (wanted.equals(down)) {
            return;
        }
        List<String> going = new ArrayList<>();
        wanted.keySet().stream().filter(n -> !down.containsKey(n)).forEach(going::add);
        for (String n : going) {
            Slot slot = members.get(n);
            if ("crashed".equals(wanted.get(n))) {
                slot.crash();
            } else {
                slot.stop();
            }
        }
        for (String n : going) {
            Slot slot = members.get(n);
            slot.join();
            if ("crashed".equals(wanted.get(n))) {
                downAtMs.put(n, slot.endedAtMs);
            }
        }
        for (String n : new TreeSet<>(down.keySet())) {
            if (!wanted.containsKey(n)) {
                members.put(n, new Slot(configs.get(n)).start());
            }
        }
        down = wanted;
    }

    /** What is down as asked, and which members' threads run; written when it changes. */
    private void ack() {
        List<String> running = new ArrayList<>();
        members.forEach((n, slot) -> {
            if (!down.containsKey(n) && slot.running()) {
                running.add(n);
            }
        });
        List<String> crashed = new ArrayList<>();
        List<String> stopped = new ArrayList<>();
        down.forEach((n, how) -> ("crashed".equals(how) ? crashed : stopped).add(n));
        running.sort(null);
        Map<String, Object> crashedAt = new TreeMap<>();
        crashed.forEach(n -> crashedAt.put(n, downAtMs.get(n)));
        Map<String, Object> state = Json.obj("crashed", crashed, "down_at_ms", crashedAt, "stopped", stopped,
                "running", running);
        if (!state.equals(acked)) {
            try {
                ControlFile.writeAtomically(ControlFile.path(cfg.runDir(), cfg.host() + ".ack"), state);
                acked = state;
            } catch (IOException e) {
                System.err.println(cfg.host() + ": cannot write the ack: " + e);
            }
        }
    }

    /**
     * Once the process that started this one is gone (we get re-parented): stop, and end the JVM if a clean stop has
     * not ended it within the grace (workloads/config.py on_harness_exit).
     */
    static void watchParent(MemberHost host) {
        long parent = parentPid();
        Thread watch = new Thread(() -> {
            while (parentPid() == parent) {
                sleep(1000);
            }
            host.stop();
            sleep(GRACE_MS);
            Runtime.getRuntime().halt(1);
        }, "harness-watch");
        watch.setDaemon(true);
        watch.start();
    }

    private static long parentPid() {
        return ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
    }

    /** The soft open-file limit the JVM runs with (HotSpot raises it to the hard limit on Linux: MaxFDLimit). */
    static String openFileLimit() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
                if (line.startsWith("Max open files")) {
                    return line.substring("Max open files".length()).trim().split("\\s+")[0];
                }
            }
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
        return "unknown";
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One member's place in the host: its config, and its current life (a Member) in a thread. */
    static final class Slot {
        private final MemberConfig cfg;
        private volatile Member member;
        private Thread thread;
        volatile int exitCode;
        volatile long endedAtMs;  // when its thread ended: a crashed member's consumer is down by then

        Slot(MemberConfig cfg) {
            this.cfg = cfg;
        }

        Slot start() {
            thread = new Thread(this::live, cfg.member());
            thread.start();
            return this;
        }

        private void live() {
            try {
                member = new Member(cfg);
                exitCode = member.run();
            } catch (Throwable e) {  // its logs could not be opened: the member cannot start
                System.err.println(cfg.member() + ": " + e);
                e.printStackTrace();
                exitCode = 1;
            } finally {
                endedAtMs = System.currentTimeMillis();
            }
        }

        void crash() {
            // a member still opening its logs takes the crash as soon as it exists
            while (member == null && thread.isAlive()) {
                sleep(1);
            }
            if (member != null) {
                member.crash();
            }
        }

        void stop() {
            while (member == null && thread.isAlive()) {
                sleep(1);
            }
            if (member != null) {
                member.stop();
            }
        }

        void join() {
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        boolean running() {
            return thread.isAlive();
        }
    }
}
