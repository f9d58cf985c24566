//! Which shard a group belongs to: Kafka's own partitioning of `__consumer_offsets`
//! (`Utils.abs(groupId.hashCode()) % partitions`, in the group coordinator's
//! `GroupCoordinatorShard` and the old `GroupMetadataManager.partitionFor`), so an operator can
//! tell from Kafka's tools alone which shard, and so which host node, a group lands on.

/// Java's `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over the UTF-16 code units, in
/// wrapping 32-bit arithmetic.
pub fn java_hash_code(text: &str) -> i32 {
    text.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Kafka's `Utils.abs`: the absolute value, with `i32::MIN` (which has none) mapped to 0.
fn kafka_abs(n: i32) -> i32 {
    if n == i32::MIN { 0 } else { n.abs() }
}

/// The shard (0..`count`) of `group_id`; `count` is at least 1.
pub fn shard_of(group_id: &str, count: u32) -> u32 {
    let count = count.max(1);
    // kafka_abs is never negative, so the cast keeps the value.
    (kafka_abs(java_hash_code(group_id)) as u32) % count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_codes_are_javas() {
        // Values printed by `"...".hashCode()` in Java (OpenJDK 17).
        assert_eq!(java_hash_code(""), 0);
        assert_eq!(java_hash_code("hello"), 99_162_322);
        assert_eq!(java_hash_code("console-consumer-12345"), 158_455_506);
        assert_eq!(java_hash_code("orders-app"), 772_757_305);
        // Outside the BMP: two UTF-16 units (U+1F600 is D83D DE00).
        assert_eq!(java_hash_code("\u{1F600}"), 1_772_899);
        // The well-known string whose hashCode is Integer.MIN_VALUE.
        assert_eq!(java_hash_code("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn shards_follow_kafkas_partition_for() {
        // `Utils.abs(s.hashCode()) % 50`, printed by Java.
        assert_eq!(shard_of("hello", 50), 22);
        assert_eq!(shard_of("console-consumer-12345", 50), 6);
        assert_eq!(shard_of("orders-app", 50), 5);
        assert_eq!(shard_of("\u{1F600}", 50), 49);
        // Utils.abs(MIN_VALUE) is 0, so the group lands on shard 0 whatever the count.
        assert_eq!(shard_of("polygenelubricants", 50), 0);
        assert_eq!(shard_of("polygenelubricants", 7), 0);
        assert_eq!(shard_of("anything", 1), 0);
    }
}
