"""Issue 29, item 2: real clients log in through the host with their own credentials.

The host runs in proxy mode in front of Apache Kafka's SASL_SSL listener, logged in as
`admin` for its own calls; `kafka.authentication` is left at its default there, `upstream`.
Consumers and a producer connect to the host with SASL_PLAINTEXT as `alice`, whose ACLs
(granted on Kafka, for this test's topic and group prefix only) are all they have: their SASL exchange
goes up their own connections, Kafka checks it, and their Fetch and Produce are Kafka's to
authorize. confluent-kafka (librdkafka) logs in with SCRAM-SHA-512, kafka-python with PLAIN;
a consumer with a wrong password hears Kafka's refusal and is never assigned anything.
"""

import urllib.error

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)

from conftest import Consumers, unique, upstream_kind
from harness.host import start_host
from harness.records import check_records, keys, produce, wait_all_read
from harness.wait import wait_until

pytestmark = pytest.mark.skipif(upstream_kind() != "kafka",
                                reason="SASL_SSL needs Apache Kafka as the upstream")

PREFIX = "sasl-"


def start_secured(kafka, workdir, precompiled_cache, kafka_settings=None):
    password = workdir / "admin-password"
    password.write_text(kafka.user("admin")["password"] + "\n")
    return start_host(workdir / "host", shared_cache=precompiled_cache,
                      upstream=kafka.sasl_ssl_bootstrap, kafka_settings=kafka_settings,
                      upstream_settings={"metadata_refresh": "1s",
                                         "security_protocol": "SASL_SSL",
                                         "sasl_mechanism": "SCRAM-SHA-512",
                                         "sasl_username": "admin",
                                         "sasl_password_file": str(password),
                                         "ssl_ca_location": kafka.state["tls"]["ca"]})


@pytest.fixture(scope="module")
def secured(kafka, tmp_path_factory, precompiled_cache):
    """A host in front of Kafka's SASL_SSL listener, and alice's ACLs on `sasl-*` topics."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})  # PLAINTEXT: a super user
    bindings = [AclBinding(ResourceType.TOPIC, PREFIX, ResourcePatternType.PREFIXED,
                           "User:alice", "*", operation, AclPermissionType.ALLOW)
                for operation in (AclOperation.READ, AclOperation.WRITE)]
    # READ on her groups: the host asks Kafka before it serves a group request of hers.
    bindings.append(AclBinding(ResourceType.GROUP, PREFIX, ResourcePatternType.PREFIXED,
                               "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW))
    for future in admin.create_acls(bindings).values():
        future.result(timeout=30)
    host = start_secured(kafka, tmp_path_factory.mktemp("sasl-host"), precompiled_cache)
    # The harness's own admin client of the host logs in too (as `admin`, who may create).
    host._confluent = AdminClient({"bootstrap.servers": host.bootstrap,
                                   "security.protocol": "SASL_PLAINTEXT",
                                   "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
                                   "sasl.password": kafka.user("admin")["password"]})
    yield host
    host.stop()


def alice(mechanism):
    return (mechanism, "alice", "alice-secret")


@pytest.mark.parametrize("client,mechanism", [("confluent-kafka", "SCRAM-SHA-512"),
                                              ("kafka-python", "PLAIN")])
def test_consumers_logged_in_as_themselves_read_every_record(secured, kafka, request, client,
                                                             mechanism):
    group = unique(f"{PREFIX}{client}")
    topic = f"{group}-t"
    secured.create_topics({topic: 4})
    consumers = Consumers(secured)
    try:
        members = [consumers.start(client, group, [topic], ["range"], records=True,
                                   sasl=alice(mechanism))
                   for _ in range(2)]
        # The members' own reports (the harness's describe of the host would not log in).
        def assigned():
            held = sorted(p for m in members for t, p in (m.current or []) if t == topic)
            return held == [0, 1, 2, 3], f"assigned: {[m.current for m in members]}"

        wait_until(assigned, f"{group}: partitions 0-3 assigned across the members")
        login = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                 "sasl.username": "alice", "sasl.password": "alice-secret"}
        records = produce(secured.bootstrap, topic, keys(group, 200), partitions=4,
                          config=login)
        wait_all_read(members, records, f"{group}: every record read")
        check_records(records, members)
    except BaseException:
        print("\n--- consumers ---\n" + consumers.report())
        print("--- host log (tail) ---\n" + secured.log_tail(60))
        raise
    finally:
        for agent in consumers.started:
            agent.kill()


def test_a_group_outside_her_acls_is_refused_as_kafka_refuses_it(secured):
    """The host asks Kafka before it serves alice's JoinGroup; for a group outside her ACLs
    librdkafka hears GROUP_AUTHORIZATION_FAILED, as from Kafka itself, and no group forms."""
    group = unique("outside")
    topic = f"{PREFIX}{group}-t"
    secured.create_topics({topic: 1})
    consumers = Consumers(secured)
    try:
        agent = consumers.start("confluent-kafka", group, [topic], ["range"],
                                sasl=alice("SCRAM-SHA-512"))
        wait_until(lambda: any("Group authorization failed" in m or "GROUP_AUTHORIZATION"
                               in m for m in agent.errors()),
                   f"{agent.name}: the refusal reported")
        try:
            detail = secured.group_detail(group)
        except urllib.error.HTTPError as e:
            assert e.code == 404, e
        else:
            raise AssertionError(f"a group formed for a refused client: {detail}")
    finally:
        for agent in consumers.started:
            agent.kill()


def test_a_wrong_password_is_refused_by_kafka_and_joins_nothing(secured):
    group = unique(f"{PREFIX}wrong")
    topic = f"{group}-t"
    secured.create_topics({topic: 1})
    consumers = Consumers(secured)
    try:
        agent = consumers.start("confluent-kafka", group, [topic], ["range"],
                                sasl=("SCRAM-SHA-512", "alice", "not-alices"))
        wait_until(lambda: any("Authentication failed" in m for m in agent.errors()),
                   f"{agent.name}: Kafka's refusal reported")
        try:
            detail = secured.group_detail(group)
        except urllib.error.HTTPError as e:
            assert e.code == 404, e
        else:
            raise AssertionError(f"a group formed for a client Kafka refused: {detail}")
    finally:
        for agent in consumers.started:
            agent.kill()


def test_sasl_ssl_from_the_client_to_the_host_and_from_the_host_to_kafka(secured, kafka,
                                                                         tmp_path,
                                                                         precompiled_cache):
    """The host's Kafka ports speak TLS (`kafka.tls_certificate_location`; here Kafka's own
    test certificate, valid for 127.0.0.1): confluent-kafka and kafka-python consume over
    SASL_SSL through it, with their own SCRAM-SHA-512 and PLAIN logins."""
    tls = kafka.state["tls"]
    host = start_secured(kafka, tmp_path, precompiled_cache,
                         kafka_settings={"tls_certificate_location": tls["broker_keystore"],
                                         "tls_key_location": tls["broker_keystore"]})
    ca = tls["ca"]
    login = {"security.protocol": "SASL_SSL", "ssl.ca.location": ca,
             "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
             "sasl.password": kafka.user("admin")["password"]}
    host._confluent = AdminClient({"bootstrap.servers": host.bootstrap, **login})
    group = unique(f"{PREFIX}tls")
    topic = f"{group}-t"
    consumers = Consumers(host)
    try:
        host.create_topics({topic: 2})
        members = [consumers.start("confluent-kafka", group, [topic], ["range"], records=True,
                                   sasl=alice("SCRAM-SHA-512"), ssl_ca=ca),
                   consumers.start("kafka-python", group, [topic], ["range"], records=True,
                                   sasl=alice("PLAIN"), ssl_ca=ca)]

        def assigned():
            held = sorted(p for m in members for t, p in (m.current or []) if t == topic)
            return held == [0, 1], f"assigned: {[m.current for m in members]}"

        wait_until(assigned, f"{group}: partitions 0-1 assigned across the members")
        records = produce(host.bootstrap, topic, keys(group, 100), partitions=2,
                          config={**login, "sasl.username": "alice",
                                  "sasl.password": "alice-secret"})
        wait_all_read(members, records, f"{group}: every record read over TLS")
        check_records(records, members)
    except BaseException:
        print("\n--- consumers ---\n" + consumers.report())
        print("--- host log (tail) ---\n" + host.log_tail(60))
        raise
    finally:
        for agent in consumers.started:
            agent.kill()
        host.stop()
