"""Standalone's own users with real clients: `kafka.authentication = "local"`.

No upstream: the host checks the logins itself, against the SCRAM credentials of the users a
test creates through the admin API (`PUT /v1/users/{name}`) before any client starts.
confluent-kafka (librdkafka) and kafka-python log in by SCRAM-SHA-512 over SASL_PLAINTEXT
(confluent-kafka by SCRAM-SHA-256 too); every other client of the suite logs in over SASL_SSL
to a host whose Kafka ports speak TLS: aiokafka, Java and franz-go by SCRAM-SHA-512, kafkajs,
kcat, sarama and kafka-go by PLAIN (checked against the user's SCRAM credential). Standalone
stores no records (Fetch answers empty), so each group is judged by what its members report
as assigned, and by the host's own view of the group. A wrong password, and PLAIN on a port
without TLS, are refused with Kafka's errors and join nothing. With
`kafka.connections_max_reauth = "2s"` librdkafka, kafka-python and Java re-authenticate on
their open connections (KIP-368) and stay in their groups across several session lifetimes.

The TLS host uses the suite's test certificates, which the `kafka` fixture makes (the CA and
the broker's keystore, valid for 127.0.0.1): that fixture is used for nothing else here.

Its first run found d4a4886, the commit that made `authentication = "local"`, refusing every
group request of a logged-in local user (GROUP_AUTHORIZATION_FAILED on FindCoordinator: the
SASL session made the connection ask the upstream for the rights a request needs, and with no
upstream every right was refused); since 75a293f standalone asks its own ACLs, and with none
set an authenticated user may do everything, which `Served` below fails at once without.
"""

import json
import time
import urllib.error
import urllib.request

import pytest

from conftest import Consumers, unique
from harness.host import start_host
from harness.wait import wait_until
from test_proxy_sasl import metric

USER, PASSWORD = "alice", "alice-secret"
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
# The session lifetime of the re-authentication host, Kafka's connections.max.reauth.ms: short,
# so a few seconds hold several of them (clients re-authenticate at 85-95 % of it).
REAUTH_S = 2


def put_user(host, name, mechanism, password):
    """`PUT /v1/users/{name}`: returns (HTTP status, answer)."""
    body = json.dumps({"mechanism": mechanism, "password": password}).encode()
    request = urllib.request.Request(f"{host.admin_url}/v1/users/{name}", data=body,
                                     method="PUT",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.status, json.loads(r.read())


def users(host):
    with urllib.request.urlopen(f"{host.admin_url}/v1/users", timeout=30) as r:
        return json.loads(r.read())["users"]


def create_topic(host, name, partitions):
    """`POST /v1/topics`: standalone's catalog is the host's (no client connection of the
    harness's own stays open to re-authenticate and count in the metrics)."""
    body = json.dumps({"name": name, "partitions": partitions}).encode()
    request = urllib.request.Request(f"{host.admin_url}/v1/topics", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        assert r.status == 201, f"create {name}: {r.status}"


def metric_sum(host, name):
    """The sum of the host's metric `name` over all its labels (0 when it has none)."""
    with urllib.request.urlopen(f"{host.admin_url}/metrics", timeout=30) as r:
        text = r.read().decode()
    return sum(float(line.rpartition(" ")[2]) for line in text.splitlines()
               if line.split("{")[0].split(" ")[0] == name)


def start_local(workdir, precompiled_cache, tls=None, **kafka_settings):
    """A standalone host checking its clients' logins itself, `alice` created on it by the
    admin API with a credential for each SCRAM mechanism. `tls`: the harness's TLS material,
    for TLS ports."""
    settings = {"authentication": "local", **kafka_settings}
    if tls is not None:
        settings.update(tls_certificate_location=tls["broker_keystore"],
                        tls_key_location=tls["broker_keystore"])
    host = start_host(workdir, shared_cache=precompiled_cache, kafka_settings=settings)
    try:
        for mechanism in MECHANISMS:
            status, answer = put_user(host, USER, mechanism, PASSWORD)
            assert (status, answer["name"], answer["mechanism"]) == (201, USER, mechanism), \
                (status, answer)
        held = {u["name"]: sorted(c["mechanism"] for c in u["credentials"])
                for u in users(host)}
        assert held == {USER: sorted(MECHANISMS)}, f"GET /v1/users: {held}"
    except BaseException:
        host.stop()
        raise
    return host


@pytest.fixture(scope="module")
def local(tmp_path_factory, precompiled_cache):
    """Standalone with local users, SASL_PLAINTEXT."""
    host = start_local(tmp_path_factory.mktemp("local-sasl"), precompiled_cache)
    yield host
    host.stop()


@pytest.fixture(scope="module")
def local_tls(kafka, tmp_path_factory, precompiled_cache):
    """Standalone with local users on TLS ports (the suite's test certificate), SASL_SSL."""
    tls = kafka.state["tls"]
    host = start_local(tmp_path_factory.mktemp("local-sasl-ssl"), precompiled_cache, tls=tls)
    host.ca = tls["ca"]
    yield host
    host.stop()


@pytest.fixture(scope="module")
def short_sessions(tmp_path_factory, precompiled_cache):
    """Standalone with local users whose SASL sessions last REAUTH_S
    (`connections_max_reauth`, Kafka's connections.max.reauth.ms)."""
    host = start_local(tmp_path_factory.mktemp("local-reauth"), precompiled_cache,
                       connections_max_reauth=f"{REAUTH_S}s")
    yield host
    host.stop()


def host_view(host, group):
    """{member_id: [[topic, partition]...]} of the group as the host's admin API shows it."""
    detail = host.group_detail(group)
    return {m["member_id"]: sorted([t, p] for t, ps in m["assignment"].items() for p in ps)
            for m in detail["members"]}


DENIALS = "assignor_host_client_denials_total"


class Served:
    """A check for wait_until: `members` (of `group`, on `topic` of `partitions`) hold every
    partition, each its even share (`range`), by their own reports, and the host's group has
    exactly those members with exactly those assignments. Fails at once, with what the
    members and the host said, when the host refuses a request it should serve
    (`client_denials` grew: no ACLs are set, so an authenticated user may do everything)."""

    def __init__(self, host, group, topic, members, partitions):
        self.host, self.group, self.topic = host, group, topic
        self.members, self.partitions = members, partitions
        self.denied = metric_sum(host, DENIALS)

    def __call__(self):
        members = self.members
        reported = {m.member_id: m.current for m in members}
        denied = metric_sum(self.host, DENIALS) - self.denied
        if denied:
            refusals = [line for line in self.host.log_tail(200).splitlines()
                        if "refused" in line]
            raise AssertionError(
                f"{self.group}: the host refused {denied:.0f} requests of a logged-in user "
                f"({DENIALS}); members' errors: {[m.errors() for m in members]}; "
                f"host log: {refusals[-2:]}")
        held = sorted(p for m in members for t, p in (m.current or []) if t == self.topic)
        if held != list(range(self.partitions)) or any(
                len(m.current or []) != self.partitions // len(members) for m in members):
            return False, f"reported: {reported}"
        try:
            view = host_view(self.host, self.group)
        except urllib.error.HTTPError as e:
            return False, f"reported: {reported}; GET /v1/groups/{self.group}: {e.code}"
        return view == reported, f"reported: {reported}; the host's view: {view}"


def assigned_through_the_host(host, client, mechanism, partitions, ssl_ca=None):
    """Two members of `client` in a group of their own on a topic of `partitions`, logged in
    as alice by `mechanism`: every partition is assigned between them, as they and the host
    report it, and neither reports an error."""
    group = unique(f"local-{client}-{mechanism.lower()}")
    topic = f"{group}-t"
    create_topic(host, topic, partitions)
    consumers = Consumers(host)
    try:
        members = [consumers.start(client, group, [topic], ["range"],
                                   sasl=(mechanism, USER, PASSWORD), ssl_ca=ssl_ca)
                   for _ in range(2)]
        wait_until(Served(host, group, topic, members, partitions),
                   f"{group}: partitions 0-{partitions - 1} assigned between its 2 members, "
                   "as they and the host report it", timeout_s=90)
        for m in members:
            assert not m.errors(), f"{m.name} reported errors: {m.errors()}"
    except BaseException:
        print("\n--- consumers ---\n" + consumers.report())
        print("--- host log (tail) ---\n" + host.log_tail(60))
        raise
    finally:
        for agent in consumers.started:
            agent.kill()


@pytest.mark.parametrize("client,mechanism", [("confluent-kafka", "SCRAM-SHA-512"),
                                              ("kafka-python", "SCRAM-SHA-512"),
                                              ("confluent-kafka", "SCRAM-SHA-256")])
def test_members_logged_in_as_a_local_user_are_assigned_every_partition(local, client,
                                                                        mechanism):
    """SASL_PLAINTEXT: the host checks the SCRAM exchange against alice's credential and
    then serves the group: two members of one client, four partitions between them."""
    assigned_through_the_host(local, client, mechanism, partitions=4)


@pytest.mark.parametrize("client,mechanism", [
    ("aiokafka", "SCRAM-SHA-512"), ("java", "SCRAM-SHA-512"), ("franz-go", "SCRAM-SHA-512"),
    # PLAIN, checked against alice's SCRAM credential: kcat because its librdkafka 2.0.2
    # repeats the client nonce in its final SCRAM message (harness/security.py), sarama and
    # kafka-go because their agents carry no SCRAM client, kafkajs as test_proxy_sasl.py has it.
    ("kafkajs", "PLAIN"), ("kcat", "PLAIN"), ("sarama", "PLAIN"), ("kafka-go", "PLAIN")])
def test_every_client_of_the_suite_is_assigned_over_sasl_ssl(local_tls, client, mechanism):
    """SASL_SSL to the host's TLS ports, trusting the test CA: two members of each client,
    two partitions between them."""
    assigned_through_the_host(local_tls, client, mechanism, partitions=2, ssl_ca=local_tls.ca)


@pytest.mark.parametrize("mechanism,password,refusal", [
    # Kafka's SaslServerAuthenticator message, which librdkafka reports as it came.
    ("SCRAM-SHA-512", "not-alices",
     "Authentication failed during authentication due to invalid credentials with SASL "
     "mechanism SCRAM-SHA-512"),
    # PLAIN would carry the password in the clear: the port offers only the SCRAM mechanisms.
    ("PLAIN", PASSWORD, "Unsupported SASL mechanism"),
], ids=["wrong-password", "plain-without-tls"])
def test_a_refused_login_is_reported_by_the_client_and_joins_nothing(local, mechanism, password,
                                                                     refusal):
    group = unique("local-refused")
    topic = f"{group}-t"
    create_topic(local, topic, 1)
    consumers = Consumers(local)
    try:
        agent = consumers.start("confluent-kafka", group, [topic], ["range"],
                                sasl=(mechanism, USER, password))
        wait_until(lambda: (any(refusal in e for e in agent.errors()), agent.errors()),
                   f"{agent.name}: the refusal reported ({refusal!r})")
        # librdkafka retries a refused login: give it a few reconnects to join anyway.
        time.sleep(2)
        assert agent.current is None and not agent.assignments(), \
            f"{agent.name} was assigned {agent.assignments()}"
        try:
            detail = local.group_detail(group)
        except urllib.error.HTTPError as e:
            assert e.code == 404, e
        else:
            raise AssertionError(f"a group formed for a refused client: {detail}")
    except BaseException:
        print("\n--- consumers ---\n" + consumers.report())
        print("--- host log (tail) ---\n" + local.log_tail(60))
        raise
    finally:
        for agent in consumers.started:
            agent.kill()


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "java"])
def test_clients_reauthenticate_and_stay_in_their_group_past_several_sessions(short_sessions,
                                                                             client):
    """Each session lasts REAUTH_S: the consumer re-authenticates on its open connections
    (KIP-368) and stays a member: after four lifetimes the same generation, member id and
    assignment, its re-authentications counted by the host (SCRAM-SHA-512), and no
    connection closed for an expired session. The host is this module's and no connection of
    the harness's own stays open to it (topics and users by the admin API), so what the
    counters gained during the test is this consumer's."""
    host = short_sessions
    group = unique(f"local-reauth-{client}")
    topic = f"{group}-t"
    create_topic(host, topic, 2)
    reauth = {"mechanism": "SCRAM-SHA-512"}
    expired = {"reason": "expired"}
    consumers = Consumers(host)
    try:
        member = consumers.start(client, group, [topic], ["range"],
                                 sasl=("SCRAM-SHA-512", USER, PASSWORD))
        wait_until(Served(host, group, topic, [member], 2),
                   f"{member.name}: assigned both partitions", timeout_s=60)
        joined = host.group_detail(group)["generation"]
        renewed_before = metric(host, "assignor_host_client_reauthentications_total", **reauth)
        expired_before = metric(host, "assignor_host_client_connections_closed_total",
                                **expired)
        since = time.monotonic()

        def renewed():
            count = metric(host, "assignor_host_client_reauthentications_total",
                           **reauth) - renewed_before
            lived = time.monotonic() - since
            return (count >= 3 and lived >= 4 * REAUTH_S,
                    f"{count:.0f} re-authentications in {lived:.1f} s")

        seen = wait_until(renewed, f"{member.name}: re-authenticating across four session "
                          "lifetimes", timeout_s=40, interval_s=0.5)
        print(f"{member.name}: {seen[1]}")
        assert not member.errors(), f"{member.name} reported errors: {member.errors()}"
        assert len(member.assignments()) == 1, \
            f"{member.name} was assigned again: {member.assignments()}"
        detail = host.group_detail(group)
        assert detail["generation"] == joined, \
            f"{group} rebalanced: generation {joined} -> {detail['generation']}"
        assert host_view(host, group) == {member.member_id: [[topic, 0], [topic, 1]]}, detail
        closed = metric(host, "assignor_host_client_connections_closed_total",
                        **expired) - expired_before
        assert closed == 0, f"the host closed {closed:.0f} connections for an expired session"
    except BaseException:
        print("\n--- consumers ---\n" + consumers.report())
        print("--- host log (tail) ---\n" + host.log_tail(60))
        raise
    finally:
        for agent in consumers.started:
            agent.kill()
