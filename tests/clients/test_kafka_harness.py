"""The Kafka the suite runs against is a secured Kafka (tests/kafka, harness/kafka.py): its
SASL_SSL listener takes the test users' PLAIN and SCRAM-SHA-512 credentials over TLS signed
by the test CA, refuses a wrong password, and its authorizer holds a user without ACLs to
Kafka's rules while the super user may do anything. Later work (TLS, SASL and ACLs through
the host) is shown against exactly this."""

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import unique
from harness.wait import wait_until


def admin(config):
    return AdminClient(config)


def create(client, topic):
    """CreateTopics of `topic` (1 partition); the KafkaError it failed with, or None."""
    future = client.create_topics([NewTopic(topic, 1)], operation_timeout=30)[topic]
    try:
        future.result(timeout=30)
        return None
    except KafkaException as e:
        return e.args[0]


def test_the_plaintext_listener_lists_the_node_with_its_rack(kafka):
    metadata = admin({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=30)
    assert sorted(metadata.brokers) == [1]
    # librdkafka keeps no rack in its Metadata view; the harness's own probe checks racks
    # (tests/kafka/tests/cluster.rs). Here: the node's address is the one the harness gave.
    broker = metadata.brokers[1]
    assert f"{broker.host}:{broker.port}" == kafka.node(1)["plaintext"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_the_super_user_creates_a_topic_over_sasl_ssl(kafka, mechanism):
    topic = unique(f"by-admin-{mechanism.lower()}")
    assert create(admin(kafka.sasl_ssl_config("admin", mechanism)), topic) is None
    # CreateTopics answers once the controller has the topic; the broker's Metadata has it a
    # moment later.
    wait_until(lambda: (topic in kafka.partition_counts(), kafka.partition_counts()),
               f"{topic} in Metadata", timeout_s=30)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_user_without_acls_is_denied_by_the_authorizer(kafka, mechanism):
    topic = unique(f"by-alice-{mechanism.lower()}")
    error = create(admin(kafka.sasl_ssl_config("alice", mechanism)), topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
    assert topic not in kafka.partition_counts()


def test_a_wrong_password_fails_authentication(kafka):
    errors = []
    config = kafka.sasl_ssl_config("alice", "SCRAM-SHA-512", password="not-hers")
    client = admin({**config, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        client.list_topics(timeout=5)
    # librdkafka reports the broker's SaslAuthenticate refusal on the error callback, which
    # runs from poll().
    wait_until(lambda: (client.poll(0.1) is not None
                        and any(e.code() == KafkaError._AUTHENTICATION for e in errors),
                        errors),
               "the authentication failure on the error callback", timeout_s=30)
    assert "invalid credentials" in next(
        e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION)
