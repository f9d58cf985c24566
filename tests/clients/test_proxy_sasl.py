"""Issue 29, item 2: real clients log in through the host with their own credentials.

The host runs in proxy mode in front of Apache Kafka's SASL_SSL listener, logged in as
`admin` for its own calls; `kafka.authentication` is left at its default there, `upstream`.
Consumers and a producer connect to the host with SASL_PLAINTEXT as `alice`, whose ACLs
(granted on Kafka, for this test's topic and group prefix only) are all they have: their SASL exchange
goes up their own connections, Kafka checks it, and their Fetch and Produce are Kafka's to
authorize. confluent-kafka (librdkafka) logs in with SCRAM-SHA-512, kafka-python with PLAIN;
a consumer with a wrong password hears Kafka's refusal and is never assigned anything. Every
other client of the suite logs in over SASL_SSL to the host's TLS ports; confluent-kafka and
Java present client certificates to a host that requires them (mutual TLS); and librdkafka,
kafka-python and Java re-authenticate through the host when Kafka's sessions are short.
"""

import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)

from conftest import Consumers, unique, upstream_kind
from harness.host import start_host
from harness.kafka import Kafka
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


def test_every_client_of_the_suite_consumes_over_sasl_ssl_through_the_host(secured, kafka,
                                                                           tmp_path,
                                                                           precompiled_cache):
    """The rest of the suite's clients over SASL_SSL to the host's TLS ports, each logged in
    as alice through the host (Kafka checks the login), in one group under `range`:
    aiokafka, Java and franz-go by SCRAM-SHA-512; kafkajs, kcat, sarama and kafka-go by PLAIN
    (kcat's librdkafka 2.0.2 cannot do SCRAM against Kafka 4; the sarama and kafka-go agents
    carry no SCRAM client). Every record written through the host is read once, by the member
    holding its partition."""
    tls = kafka.state["tls"]
    host = start_secured(kafka, tmp_path, precompiled_cache,
                         kafka_settings={"tls_certificate_location": tls["broker_keystore"],
                                         "tls_key_location": tls["broker_keystore"]})
    ca = tls["ca"]
    group = unique(f"{PREFIX}every")
    topic = f"{group}-t"
    kafka.create_topics({topic: 8})
    plan = [("aiokafka", "SCRAM-SHA-512"), ("java", "SCRAM-SHA-512"),
            ("franz-go", "SCRAM-SHA-512"), ("kafkajs", "PLAIN"), ("kcat", "PLAIN"),
            ("sarama", "PLAIN"), ("kafka-go", "PLAIN")]
    consumers = Consumers(host)
    try:
        members = [consumers.start(client, group, [topic], ["range"], records=True,
                                   sasl=alice(mechanism), ssl_ca=ca)
                   for client, mechanism in plan]

        def assigned():
            # Every member holds a partition (range gives each of the seven at least one of
            # the eight): all are in one generation, so no later join rebalances the group
            # while the records are read (a rebalance before a commit reads some twice).
            held = sorted(p for m in members for t, p in (m.current or []) if t == topic)
            everyone = all(m.current for m in members)
            return everyone and held == list(range(8)), \
                f"assigned: {[m.current for m in members]}"

        wait_until(assigned, f"{group}: partitions 0-7 assigned once, each member holding one",
                   timeout_s=90)
        login = {"security.protocol": "SASL_SSL", "ssl.ca.location": ca,
                 "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                 "sasl.password": "alice-secret"}
        records = produce(host.bootstrap, topic, keys(group, 240), partitions=8, config=login)
        wait_all_read(members, records, f"{group}: every record read over SASL_SSL")
        check_records(records, members)
        for m in members:
            assert not m.errors(), f"{m.name} reported errors: {m.errors()}"
    except BaseException:
        print("\n--- consumers ---\n" + consumers.report())
        print("--- host log (tail) ---\n" + host.log_tail(60))
        raise
    finally:
        for agent in consumers.started:
            agent.kill()
        host.stop()


def test_mutual_tls_to_the_host_with_librdkafka_and_java(kafka, tmp_path, precompiled_cache):
    """The host's Kafka ports require a client certificate signed by the test CA
    (`tls_client_auth = "required"`, Kafka's `ssl.client.auth=required`): confluent-kafka and
    the Java client present alice's and consume every record written through the host; a
    confluent-kafka consumer without a certificate is refused at the handshake and joins
    nothing. (The host here is in front of Kafka's PLAINTEXT listener: the certificate is the
    host's to check, not the cluster's.)"""
    tls = kafka.state["tls"]
    ca = tls["ca"]
    host = start_host(tmp_path / "host", shared_cache=precompiled_cache,
                      upstream=kafka.bootstrap,
                      upstream_settings={"metadata_refresh": "1s"},
                      kafka_settings={"tls_certificate_location": tls["broker_keystore"],
                                      "tls_key_location": tls["broker_keystore"],
                                      "tls_client_auth": "required",
                                      "tls_ca_location": ca})
    cert = (tls["client_cert"], tls["client_key"])
    group = unique("mtls")
    topic = f"{group}-t"
    kafka.create_topics({topic: 2})
    consumers = Consumers(host)
    try:
        members = [consumers.start(client, group, [topic], ["range"], records=True,
                                   ssl_ca=ca, ssl_cert=cert)
                   for client in ("confluent-kafka", "java")]
        stranger = consumers.start("confluent-kafka", unique("mtls-none"), [topic], ["range"],
                                   ssl_ca=ca)

        def assigned():
            held = sorted(p for m in members for t, p in (m.current or []) if t == topic)
            return held == [0, 1], f"assigned: {[m.current for m in members]}"

        wait_until(assigned, f"{group}: partitions 0-1 assigned across the members",
                   timeout_s=90)
        records = produce(host.bootstrap, topic, keys(group, 100), partitions=2,
                          config={"security.protocol": "SSL", "ssl.ca.location": ca,
                                  "ssl.certificate.location": cert[0],
                                  "ssl.key.location": cert[1]})
        wait_all_read(members, records, f"{group}: every record read over mutual TLS")
        check_records(records, members)
        wait_until(lambda: any("SSL" in e or "handshake" in e.lower() or "certificate" in e
                               for e in stranger.errors()),
                   f"{stranger.name}: refused at the handshake")
        assert stranger.current in (None, []), f"{stranger.name} was assigned {stranger.current}"
    except BaseException:
        print("\n--- consumers ---\n" + consumers.report())
        print("--- host log (tail) ---\n" + host.log_tail(60))
        raise
    finally:
        for agent in consumers.started:
            agent.kill()
        host.stop()


# Kafka's session lifetime for the re-authentication test: short, so a few seconds hold
# several of them (Kafka has no lower bound; clients re-authenticate at 85-95 % of it).
REAUTH_MS = 2000


@pytest.fixture(scope="module")
def short_sessions(tmp_path_factory):
    """A Kafka node of this module's own whose SASL sessions last REAUTH_MS
    (`connections.max.reauth.ms`, KIP-368)."""
    cluster = Kafka(tmp_path_factory.mktemp("reauth-kafka"),
                    config={"connections.max.reauth.ms": REAUTH_MS}).start()
    yield cluster
    cluster.stop()


def metric(host, name, **labels):
    """The value of the host's metric `name` with `labels` (0 when it has no such line)."""
    with urllib.request.urlopen(f"{host.admin_url}/metrics", timeout=30) as r:
        text = r.read().decode()
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        head, _, value = line.rpartition(" ")
        if head.split("{")[0] == name and ",".join(
                sorted(head.partition("{")[2].rstrip("}").split(","))) == want:
            return float(value)
    return 0.0


@pytest.mark.parametrize("client,mechanism,producer_mechanism",
                         [("confluent-kafka", "SCRAM-SHA-512", "PLAIN"),
                          ("kafka-python", "PLAIN", "SCRAM-SHA-512"),
                          ("java", "SCRAM-SHA-512", "PLAIN")])
def test_clients_reauthenticate_through_the_host_before_kafka_ends_their_session(
        short_sessions, tmp_path, precompiled_cache, client, mechanism, producer_mechanism):
    """Kafka ends each SASL session after REAUTH_MS; the consumer re-authenticates on its open
    connections through the host (its SaslHandshake and SaslAuthenticate go up its own links
    again, and the host renews the session it tracks) and reads on across several lifetimes:
    every record read, re-authentications counted for its mechanism (the producers, short
    lived, use the other one), and no connection the host had to close for an expired
    session."""
    kafka = short_sessions
    host = start_secured(kafka, tmp_path, precompiled_cache)
    password = kafka.user("admin")["password"]
    group = unique(f"reauth-{client}")
    topic = f"{group}-t"
    kafka.create_topics({topic: 2})
    consumers = Consumers(host)
    try:
        member = consumers.start(client, group, [topic], ["range"], records=True,
                                 sasl=(mechanism, "admin", password))
        wait_until(lambda: sorted(p for _, p in (member.current or [])) == [0, 1],
                   f"{member.name}: assigned both partitions", timeout_s=60)
        login = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": producer_mechanism,
                 "sasl.username": "admin", "sasl.password": password}
        records = []
        for second in range(4 * REAUTH_MS // 1000):
            records += produce(host.bootstrap, topic, keys(f"{group}-{second}", 20),
                               partitions=2, config=login)
            time.sleep(1)
        wait_all_read([member], records, f"{member.name}: every record, across sessions")
        check_records(records, [member])
        assert not member.errors(), f"{member.name} reported errors: {member.errors()}"
        renewed = metric(host, "assignor_host_client_reauthentications_total",
                         mechanism=mechanism)
        assert renewed >= 2, f"{client} re-authenticated {renewed} times through the host"
        expired = metric(host, "assignor_host_client_connections_closed_total",
                         reason="expired")
        assert expired == 0, f"the host closed {expired} connections for an expired session"
    except BaseException:
        print("\n--- consumers ---\n" + consumers.report())
        print("--- host log (tail) ---\n" + host.log_tail(60))
        raise
    finally:
        for agent in consumers.started:
            agent.kill()
        host.stop()
