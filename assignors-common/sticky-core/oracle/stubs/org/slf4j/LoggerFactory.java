package org.slf4j;
public class LoggerFactory {
    public static Logger getLogger(Class<?> c) { return new Logger() {}; }
    public static Logger getLogger(String c) { return new Logger() {}; }
}
