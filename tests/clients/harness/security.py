"""How a proxy-mode host reaches the upstream Kafka: `UPSTREAM_SECURITY` chooses, for every
proxy-mode and cluster-of-hosts test of the run.

- `plaintext` (the default): Kafka's PLAINTEXT listener, whose principal is a super user.
- `sasl_ssl`: Kafka's SASL_SSL listener, the host logged in as `assignor-host` by
  SCRAM-SHA-512 (the password in its environment, `ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD`),
  trusting the test CA. Every client then logs in through the host
  (`kafka.authentication = "upstream"`, the default in front of a SASL upstream): its
  SaslHandshake and SaslAuthenticate go up its own link, so the consumers log in as `admin`
  with SCRAM-SHA-512, kcat and the Go agents with PLAIN (the two mechanisms Kafka's listener
  enables; the host relays both). kcat because its librdkafka (Debian's 2.0.2) cannot log in
  to Kafka 4 by SCRAM at all, directly or through the host: it repeats the client nonce in
  its final message, which Kafka 4 checks strictly (fixed in librdkafka 2.6.1,
  confluentinc/librdkafka#4895); the Go agents to keep their module graph as it is.
- `mtls`: Kafka's SSL listener, the host presenting its own client certificate
  (`User:CN=assignor-host,O=assignor-host tests`). The clients' links go up over TLS without
  it (the host never lends a client its certificate), where Kafka's `ssl.client.auth=requested`
  makes them ANONYMOUS, a super user of the test cluster.

In both secured modes the host's own principal holds only the ACLs docs/operating.md lists for
the host's user (`HOST_ACLS`), granted on the worker's Kafka when it starts, so a call the host
makes without the right ACL fails the test instead of passing on a super user's rights.
"""

import os

from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, ResourcePatternType,
                                   ResourceType)

MODES = ("plaintext", "sasl_ssl", "mtls")
HOST_USER = "assignor-host"
HOST_CERT_PRINCIPAL = "User:CN=assignor-host,O=assignor-host tests"
# What a consumer sends the host in the secured mode (`(mechanism, user, password)`).
CLIENT_LOGIN = ("SCRAM-SHA-512", "admin", "admin-secret")
PLAIN_LOGIN = ("PLAIN", "admin", "admin-secret")


def mode():
    value = os.environ.get("UPSTREAM_SECURITY", "plaintext")
    if value not in MODES:
        raise AssertionError(f"UPSTREAM_SECURITY={value}: one of {', '.join(MODES)}")
    return value


# The hosts of this run that want their clients to log in: {"127.0.0.1:port": True}.
_LOGIN_AT = set()


def logs_in(host_bootstrap):
    """Marks a host's address as one whose clients log in (a proxy in a `sasl_ssl` run)."""
    _LOGIN_AT.add(host_bootstrap)


def login_for(bootstrap, client="confluent-kafka"):
    """The `(mechanism, user, password)` a client of `client` sends when it bootstraps from
    `bootstrap` (`host:port,...`, judged by its first address), or None: so every consumer,
    producer and admin client a test starts against a proxy host logs in without each test
    saying so, and one against the upstream directly (its PLAINTEXT listener) does not."""
    if bootstrap.split(",")[0] not in _LOGIN_AT:
        return None
    from .go_agents import GO_AGENTS
    return PLAIN_LOGIN if client in GO_AGENTS or client == "kcat" else CLIENT_LOGIN


def librdkafka_login(bootstrap):
    """confluent-kafka settings that log in at `bootstrap` when its host wants it, else {}."""
    login = login_for(bootstrap)
    if login is None:
        return {}
    mechanism, user, password = login
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


def kafka_python_login(bootstrap):
    """kafka-python settings that log in at `bootstrap` when its host wants it, else {}."""
    login = login_for(bootstrap)
    if login is None:
        return {}
    mechanism, user, password = login
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
            "sasl_plain_username": user, "sasl_plain_password": password}


def host_upstream(kafka):
    """`(bootstrap, [upstream] settings, environment)` for a host in front of `kafka`."""
    secured = mode()
    if secured == "plaintext":
        return kafka.bootstrap, {}, {}
    ca = kafka.state["tls"]["ca"]
    if secured == "sasl_ssl":
        settings = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                    "sasl_username": HOST_USER, "ssl_ca_location": ca}
        env = {"ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD": kafka.user(HOST_USER)["password"]}
        return kafka.sasl_ssl_bootstrap, settings, env
    settings = {"security_protocol": "SSL", "ssl_ca_location": ca,
                "ssl_certificate_location": kafka.state["tls"]["host_cert"],
                "ssl_key_location": kafka.state["tls"]["host_key"]}
    return kafka.ssl_bootstrap, settings, {}


def host_acls(principal):
    """docs/operating.md's ACL set for the host's user, on every topic and group: READ and
    ALTER on topics, READ and DELETE on groups, CREATE on the cluster, WRITE on transactional
    ids; and for a cluster of hosts, its own topics and node group (`__assignor_host.`)."""
    def allow(kind, name, operation, pattern=ResourcePatternType.LITERAL):
        return AclBinding(kind, name, pattern, principal, "*", operation,
                          AclPermissionType.ALLOW)
    own = "__assignor_host."
    return [
        allow(ResourceType.TOPIC, "*", AclOperation.READ),
        allow(ResourceType.TOPIC, "*", AclOperation.ALTER),
        allow(ResourceType.GROUP, "*", AclOperation.READ),
        allow(ResourceType.GROUP, "*", AclOperation.DELETE),
        allow(ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE),
        allow(ResourceType.TRANSACTIONAL_ID, "*", AclOperation.WRITE),
        allow(ResourceType.TOPIC, own, AclOperation.WRITE, ResourcePatternType.PREFIXED),
    ]


def grant_host_acls(kafka):
    """Grants the host's principals their ACL set on `kafka` (a secured run only)."""
    if mode() == "plaintext":
        return
    bindings = host_acls(f"User:{HOST_USER}") + host_acls(HOST_CERT_PRINCIPAL)
    for binding, future in kafka.admin.create_acls(bindings, request_timeout=30).items():
        future.result(timeout=30)
