package io.assignorhost.agent;

/**
 * The client's logging: SLF4J's simple binding on stderr (which the harness keeps and prints
 * for a failing test) at WARN; {@code AGENT_DEBUG=name,...} (logger names, e.g.
 * {@code org.apache.kafka.clients.consumer.internals}) adds those at DEBUG, as for the Python
 * agents. Set before the client creates its first logger.
 */
final class Logging {
    private static final String PREFIX = "org.slf4j.simpleLogger.";

    private Logging() {}

    static void configure() {
        System.setProperty(PREFIX + "logFile", "System.err");
        System.setProperty(PREFIX + "defaultLogLevel", "warn");
        System.setProperty(PREFIX + "showDateTime", "true");
        System.setProperty(PREFIX + "dateTimeFormat", "HH:mm:ss.SSS");
        String debug = System.getenv().getOrDefault("AGENT_DEBUG", "");
        for (String name : debug.split(",")) {
            if (!name.isBlank()) {
                System.setProperty(PREFIX + "log." + name.trim(), "debug");
            }
        }
    }
}
