package org.apache.kafka.common.utils;
public final class Utils {
    public static <T> Class<? extends T> loadClass(String klass, Class<T> base) throws ClassNotFoundException { throw new ClassNotFoundException(klass); }
    public static <T> T newInstance(Class<T> c) { throw new UnsupportedOperationException(); }
}
