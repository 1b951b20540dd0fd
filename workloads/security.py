"""SASL/SSL settings for every client of a cluster that needs them, from the environment only:
`KAFKA_CHAOS_CLIENT_<PROPERTY>` is librdkafka's `<property>` with `_` for `.`, e.g.

    KAFKA_CHAOS_CLIENT_SECURITY_PROTOCOL=SASL_SSL KAFKA_CHAOS_CLIENT_SASL_MECHANISM=SCRAM-SHA-512
    KAFKA_CHAOS_CLIENT_SASL_USERNAME=chaos KAFKA_CHAOS_CLIENT_SASL_PASSWORD=... kafka-chaos run ...

The members and the producer inherit the environment, so a credential is never written into their
configuration (which travels in an environment variable and is logged) nor into a run directory.
"""
from __future__ import annotations

import os

PREFIX = "KAFKA_CHAOS_CLIENT_"


def security_config(environ=os.environ) -> dict[str, str]:
    return {key[len(PREFIX):].lower().replace("_", "."): value for key, value in environ.items() if key.startswith(PREFIX)}
