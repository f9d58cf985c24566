package io.assignorhost.agent;

import java.util.ArrayList;
import java.util.List;

/**
 * The agent's flags, the same as the Python agents' (tests/clients/agents/common.py,
 * {@code parse_args}): {@code --bootstrap --group --topics} (comma-separated) are required;
 * {@code --strategy} repeats; {@code --report-records} and {@code --commit-on-revoke} are
 * switches; the rest take one value. One more, the Java client's own: {@code --topic-pattern
 * REGEX} subscribes by regular expression instead of {@code --topics} (then empty).
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
}
