"""The clusters: Kafka in containers (brokers, lanes, engine), Kafka someone else runs, Spark for the analysis."""
