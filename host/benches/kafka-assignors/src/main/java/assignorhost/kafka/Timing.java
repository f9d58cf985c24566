package assignorhost.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;

/**
 * Times one of Apache Kafka's assignors on one cell of Kafka's own assignor benchmarks and
 * prints one JSON line: the median, min and p90 of the timed calls in ms, and the Kafka
 * version.
 *
 * <pre>
 * java -cp classes:$(cat classpath.txt) assignorhost.kafka.Timing --side server \
 *     --assignor uniform --members 10000 --topics 10 --partitions-per-member 10 \
 *     --subscription homogeneous --type full
 * </pre>
 *
 * <p>The inputs are built as {@code ServerSideAssignorBenchmark} and
 * {@code ClientSideAssignorBenchmark} build them ({@link ServerSide}, {@link ClientSide}),
 * racks off. What is timed is what their {@code doAssignment()} runs, the assignor call alone.
 * Timing follows JMH's shape without JMH: calls untimed until at least {@code --warmup-calls}
 * (20) calls and {@code --warmup-ms} (3,000) ms have passed, so the JIT has compiled the
 * assignor's hot paths, then at least {@code --calls} (30) timed calls and {@code --measure-ms}
 * (1,000) ms; each call timed on its own with {@link System#nanoTime()}. {@code --budget-ms}
 * (off unless given) bounds a slow cell instead: warm-up ends once half the budget is spent
 * (after at least one call) and timing once all of it is (after at least three calls), and the
 * JSON's {@code calls} and {@code warmup_calls} say how many there were. One cell per JVM, as
 * JMH forks one JVM per parameter set: a JVM that had run another assignor or shape first
 * would carry its type profiles and compiled code into this one.
 */
public final class Timing {
    /** Written with each result so the JIT cannot drop a call whose answer is unused. */
    private static volatile int sink;

    private Timing() {
    }

    public static void main(String[] argv) {
        Map<String, String> args = parse(argv);
        String side = required(args, "side");
        String assignor = required(args, "assignor");
        int members = Integer.parseInt(required(args, "members"));
        int topics = Integer.parseInt(required(args, "topics"));
        int perMember = Integer.parseInt(required(args, "partitions-per-member"));
        boolean heterogeneous = switch (required(args, "subscription")) {
            case "homogeneous" -> false;
            case "heterogeneous" -> true;
            default -> throw usage("--subscription homogeneous|heterogeneous");
        };
        boolean incremental = switch (required(args, "type")) {
            case "full" -> false;
            case "incremental" -> true;
            default -> throw usage("--type full|incremental");
        };
        int warmupCalls = Integer.parseInt(args.getOrDefault("warmup-calls", "20"));
        long warmupMs = Long.parseLong(args.getOrDefault("warmup-ms", "3000"));
        int calls = Integer.parseInt(args.getOrDefault("calls", "30"));
        long measureMs = Long.parseLong(args.getOrDefault("measure-ms", "1000"));
        long budgetNs = Long.parseLong(args.getOrDefault("budget-ms", "0")) * 1_000_000;
        long started = System.nanoTime();

        long setupStart = System.nanoTime();
        Cell cell = switch (side) {
            case "server" -> ServerSide.prepare(assignor, members, topics, perMember, heterogeneous, incremental);
            case "client" -> ClientSide.prepare(assignor, members, topics, perMember, heterogeneous, incremental);
            default -> throw usage("--side server|client");
        };
        double setupMs = (System.nanoTime() - setupStart) / 1e6;

        long warmupStart = System.nanoTime();
        int warmedUp = 0;
        while (warmedUp < warmupCalls || System.nanoTime() - warmupStart < warmupMs * 1_000_000) {
            if (budgetNs > 0 && warmedUp >= 1 && System.nanoTime() - started >= budgetNs / 2) {
                break;
            }
            sink += System.identityHashCode(cell.call().get());
            warmedUp++;
        }
        double warmupTookMs = (System.nanoTime() - warmupStart) / 1e6;

        List<Long> times = new ArrayList<>();
        long measureStart = System.nanoTime();
        while (times.size() < calls || System.nanoTime() - measureStart < measureMs * 1_000_000) {
            if (budgetNs > 0 && times.size() >= 3 && System.nanoTime() - started >= budgetNs) {
                break;
            }
            long t = System.nanoTime();
            Object answer = cell.call().get();
            times.add(System.nanoTime() - t);
            sink += System.identityHashCode(answer);
        }
        long[] sorted = times.stream().mapToLong(Long::longValue).sorted().toArray();
        Properties kafka = kafkaVersion();

        System.out.println(json(new Object[] {
            "kafka_version", kafka.getProperty("version", "unknown"),
            "kafka_commit", kafka.getProperty("commitId", "unknown"),
            "side", side,
            "assignor", assignor,
            "class", cell.assignorClass(),
            "members", members,
            "topics", topics,
            "partitions_per_member", perMember,
            "partitions_per_topic", members * perMember / topics,
            "subscription", heterogeneous ? "heterogeneous" : "homogeneous",
            "type", incremental ? "incremental" : "full",
            "median_ms", ms(sorted[sorted.length / 2]),
            "min_ms", ms(sorted[0]),
            "p90_ms", ms(sorted[(int) Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.9) - 1)]),
            "calls", sorted.length,
            "warmup_calls", warmedUp,
            "warmup_ms", round(warmupTookMs),
            "setup_ms", round(setupMs),
            "java", System.getProperty("java.version"),
            "max_heap_mb", Runtime.getRuntime().maxMemory() >> 20,
        }));
    }

    /** One prepared cell: what one timed call runs, and the assignor's class name. */
    record Cell(Supplier<Object> call, String assignorClass) {
    }

    /** The {@code version} and {@code commitId} kafka-clients' jar carries (what its AppInfoParser reads). */
    private static Properties kafkaVersion() {
        Properties properties = new Properties();
        try (InputStream in = Timing.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                properties.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return properties;
    }

    private static double ms(long nanos) {
        return round(nanos / 1e6);
    }

    /** Microsecond resolution, so the JSON holds 3.641 rather than 3.6410000000000005. */
    private static double round(double ms) {
        return Math.round(ms * 1e3) / 1e3;
    }

    private static Map<String, String> parse(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw usage("arguments come as --name value pairs, got " + Arrays.toString(argv));
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        return args;
    }

    private static String required(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null) {
            throw usage("--" + name + " is required");
        }
        return value;
    }

    static IllegalArgumentException usage(String message) {
        return new IllegalArgumentException(message + "\nusage: Timing --side server|client"
            + " --assignor uniform|range|roundrobin|sticky|cooperative-sticky --members N --topics N"
            + " --partitions-per-member N --subscription homogeneous|heterogeneous --type full|incremental"
            + " [--warmup-calls 20] [--warmup-ms 3000] [--calls 30] [--measure-ms 1000] [--budget-ms N]");
    }

    /** A flat JSON object from alternating keys and values (strings, numbers). */
    private static String json(Object[] pairs) {
        StringBuilder out = new StringBuilder("{");
        for (int i = 0; i < pairs.length; i += 2) {
            if (i > 0) {
                out.append(',');
            }
            out.append('"').append(pairs[i]).append("\":");
            Object value = pairs[i + 1];
            if (value instanceof String s) {
                out.append('"').append(s.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            } else {
                out.append(value);
            }
        }
        return out.append('}').toString();
    }
}
