package org.slf4j;
public interface Logger {
    default boolean isDebugEnabled() { return false; }
    default boolean isTraceEnabled() { return false; }
    default void debug(String m, Object... a) {}
    default void info(String m, Object... a) {}
    default void warn(String m, Object... a) {}
    default void error(String m, Object... a) {}
    default void trace(String m, Object... a) {}
}
