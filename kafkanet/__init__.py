"""The floor the harness, the faults and the workloads stand on: Kafka's wire protocol (raw requests, quorum and
metadata probes), the request-aware proxy engine, the Toxiproxy client, and firewall rules inside a network
namespace. It imports nothing of this project."""
