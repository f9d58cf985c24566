package io.assignorhost.agent;

import java.util.ArrayList;
import java.util.List;

/**
 * The agent's flags, the same as the Python agents' (tests/clients/agents/common.py,
 * {@code parse_args}): {@code --bootstrap --group --topics} (comma-separated) are required;
 * {@code --strategy} repeats; {@code --report-records} and {@code --commit-on-revoke} are
 * switches; the rest take one value. One more, the Java client's own: {@code --topic-pattern
 * REGEX} subscribes by regular expression instead of {@code --topics} (then empty).
 * {@code --sasl MECHANISM:USER} logs in (the password in {@code AGENT_SASL_PASSWORD});
 * {@code --ssl-ca FILE} speaks TLS, and {@code --ssl-cert}, {@code --ssl-key} present a client
 * certificate (PEM files).
 */
final class Args {
    String bootstrap;
    String group;
    List<String> topics = List.of();
    String topicPattern;
    final List<String> strategies = new ArrayList<>();
    String clientId;
    /** {@code classic} or {@code consumer} (KIP-848). */
    String groupProtocol = "classic";
    String remoteAssignor;
    String instanceId;
    Integer rebalanceTimeoutMs;
    String rack;
    boolean reportRecords;
    boolean commitOnRevoke;
    /** {@code MECHANISM:USER}, or null: no login. */
    String sasl;
    /** TLS: the CA to trust, and for mutual TLS the client's certificate and key (PEM files). */
    String sslCa;
    String sslCert;
    String sslKey;

    boolean consumerProtocol() {
        return groupProtocol.equals("consumer");
    }

    static Args parse(String[] argv) {
        Args args = new Args();
        for (int i = 0; i < argv.length; i++) {
            String flag = argv[i];
            switch (flag) {
                case "--report-records" -> args.reportRecords = true;
                case "--commit-on-revoke" -> args.commitOnRevoke = true;
                default -> {
                    if (i + 1 >= argv.length) {
                        throw new IllegalArgumentException(flag + " needs a value");
                    }
                    String value = argv[++i];
                    switch (flag) {
                        case "--bootstrap" -> args.bootstrap = value;
                        case "--group" -> args.group = value;
                        case "--topics" ->
                                args.topics = value.isEmpty() ? List.of() : List.of(value.split(","));
                        case "--topic-pattern" -> args.topicPattern = value;
                        case "--strategy" -> args.strategies.add(value);
                        case "--client-id" -> args.clientId = value;
                        case "--group-protocol" -> {
                            if (!value.equals("classic") && !value.equals("consumer")) {
                                throw new IllegalArgumentException(
                                        "--group-protocol: classic or consumer, not " + value);
                            }
                            args.groupProtocol = value;
                        }
                        case "--remote-assignor" -> args.remoteAssignor = value;
                        case "--instance-id" -> args.instanceId = value;
                        case "--rebalance-timeout-ms" ->
                                args.rebalanceTimeoutMs = Integer.valueOf(value);
                        case "--rack" -> args.rack = value;
                        case "--sasl" -> args.sasl = value;
                        case "--ssl-ca" -> args.sslCa = value;
                        case "--ssl-cert" -> args.sslCert = value;
                        case "--ssl-key" -> args.sslKey = value;
                        default -> throw new IllegalArgumentException("unknown flag " + flag);
                    }
                }
            }
        }
        if (args.bootstrap == null || args.group == null
                || args.topics.isEmpty() == (args.topicPattern == null)) {
            throw new IllegalArgumentException(
                    "--bootstrap, --group and either --topics or --topic-pattern are required");
        }
        return args;
    }

    /**
     * Settings that log in with SASL over SASL_PLAINTEXT: {@code spec} is {@code --sasl}'s
     * {@code MECHANISM:USER}, the password comes from the environment's
     * {@code AGENT_SASL_PASSWORD} (never the command line, which {@code ps} shows).
     */
    static void login(java.util.Properties conf, String spec) {
        int colon = spec.indexOf(':');
        String password = System.getenv("AGENT_SASL_PASSWORD");
        if (colon < 0 || password == null) {
            throw new IllegalArgumentException(
                    "--sasl is MECHANISM:USER, with the password in AGENT_SASL_PASSWORD");
        }
        String mechanism = spec.substring(0, colon);
        String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        conf.put("security.protocol", "SASL_PLAINTEXT");
        conf.put("sasl.mechanism", mechanism);
        conf.put("sasl.jaas.config", module + " required username=\"" + spec.substring(colon + 1)
                + "\" password=\"" + password + "\";");
    }

    /**
     * Settings that speak TLS trusting the PEM CA {@code ca} (SASL_SSL when {@link #login}
     * ran first), presenting the PEM certificate {@code cert} and key {@code key} when given.
     */
    static void tls(java.util.Properties conf, String ca, String cert, String key) {
        boolean sasl = "SASL_PLAINTEXT".equals(conf.get("security.protocol"));
        conf.put("security.protocol", sasl ? "SASL_SSL" : "SSL");
        conf.put("ssl.truststore.type", "PEM");
        conf.put("ssl.truststore.location", ca);
        if (cert != null) {
            try {
                conf.put("ssl.keystore.type", "PEM");
                conf.put("ssl.keystore.certificate.chain",
                        java.nio.file.Files.readString(java.nio.file.Path.of(cert)));
                conf.put("ssl.keystore.key",
                        java.nio.file.Files.readString(java.nio.file.Path.of(key)));
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("--ssl-cert/--ssl-key: " + e, e);
            }
        }
    }
}
