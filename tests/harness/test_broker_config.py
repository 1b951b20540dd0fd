from harness.cluster import broker_config
from harness.cluster.broker_config import Lanes

LANES = Lanes("127.0.0.1:40001", "127.0.0.1:40101", "toxiproxy:10201", "toxiproxy:10301")


def parse(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_clients_are_advertised_the_proxy_address():
    props = parse(broker_config.render(1, LANES, "1@toxiproxy:10301"))
    assert "CLIENT://127.0.0.1:40001" in props["advertised.listeners"]
    assert "INTERNAL://toxiproxy:10201" in props["advertised.listeners"]
    assert props["controller.quorum.voters"] == "1@toxiproxy:10301"
    assert props["inter.broker.listener.name"] == "INTERNAL"


def test_every_listener_has_a_security_protocol():
    props = parse(broker_config.render(2, LANES, "v"))
    names = {entry.split("://")[0] for entry in props["listeners"].split(",")}
    mapped = {entry.split(":")[0] for entry in props["listener.security.protocol.map"].split(",")}
    assert names == mapped


def test_each_client_lane_is_a_listener_advertised_as_that_lanes_proxy():
    lanes = Lanes("127.0.0.1:40001", "127.0.0.1:40101", "toxiproxy:10201", "toxiproxy:10301",
                  ("127.0.0.1:41001", "127.0.0.1:41002"))
    props = parse(broker_config.render(1, lanes, "v"))
    listeners = props["listeners"].split(",")
    advertised = props["advertised.listeners"].split(",")
    assert "LANE_0://0.0.0.0:9100" in listeners and "LANE_1://0.0.0.0:9101" in listeners
    assert "LANE_0://127.0.0.1:41001" in advertised and "LANE_1://127.0.0.1:41002" in advertised
    assert {"LANE_0:PLAINTEXT", "LANE_1:PLAINTEXT"} <= set(props["listener.security.protocol.map"].split(","))


def test_overrides_win_and_booleans_are_lowercase():
    props = parse(broker_config.render(1, LANES, "v", {"min.insync.replicas": 1, "auto.create.topics.enable": True}))
    assert props["min.insync.replicas"] == "1"
    assert props["auto.create.topics.enable"] == "true"


def test_cluster_ids_never_start_with_a_dash(monkeypatch):
    import uuid

    from harness.cluster.kafka import new_cluster_id
    ids = iter([uuid.UUID(bytes=b"\xf8" + b"\x00" * 15), uuid.UUID(int=1)])  # the first encodes to "-AAA..."
    monkeypatch.setattr(uuid, "uuid4", lambda: next(ids))
    assert new_cluster_id() == "AAAAAAAAAAAAAAAAAAAAAQ"
