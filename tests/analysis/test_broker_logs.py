"""The brokers' slow controller events (analysis/rundir/broker_logs.py): what a starved machine leaves in the brokers' own
logs. The lines are Kafka 4.3.1's, copied from a 500-member sweep cell's broker log (2026-11-28)."""
from analysis.rundir import broker_logs

SLOW = ("[2026-11-28 16:35:22,{ms:03d}] ERROR [QuorumController id=1] Exceptionally slow controller event {event} "
        "took {took} ms. (org.apache.kafka.controller.EventPerformanceMonitor)")
OTHER = "[2026-11-28 16:35:22,500] INFO [QuorumController id=1] Something else took 9000 ms. (org.apache.kafka.controller.X)"


def test_each_slow_controller_event_is_read_with_its_broker_time_and_duration(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "kafka-1.log").write_text("\n".join([
        SLOW.format(ms=388, event="writeNoOpRecord(1277580235)", took=2803), OTHER,
        SLOW.format(ms=396, event="processBrokerHeartbeat(1890723428)", took=2790)]) + "\n")
    (tmp_path / "logs" / "kafka-2.log").write_text(SLOW.format(ms=390, event="maybeFenceStaleBroker(1)", took=2581) + "\n")
    (tmp_path / "logs" / "member-1.log").write_text(SLOW.format(ms=1, event="x", took=1) + "\n")  # not a broker's
    events = broker_logs.slow_controller_events(tmp_path)
    assert [(e["broker"], e["took_ms"]) for e in events] == [("kafka-1", 2803), ("kafka-2", 2581), ("kafka-1", 2790)]
    assert events[0]["event"] == "writeNoOpRecord(1277580235)" and events[1]["at_ms"] - events[0]["at_ms"] == 2
    t0 = events[0]["at_ms"]
    assert broker_logs.stalls_in(events, t0, t0 + 3) == {"broker_stalls": 2, "broker_stall_max_ms": 2803}
    assert broker_logs.stalls_in(events, t0 + 100, t0 + 200) == {"broker_stalls": 0, "broker_stall_max_ms": None}


def test_a_run_without_broker_logs_has_no_events(tmp_path):
    assert broker_logs.slow_controller_events(tmp_path) == []
