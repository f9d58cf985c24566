//! Kafka's member order and Java's string order, which it is made of: the order every
//! strategy that follows Kafka sorts members in, and the one the [`super::Index`] of a v2
//! request is built in.

use std::cmp::Ordering;

use super::Member;

/// Kafka's member order (`AbstractPartitionAssignor.MemberInfo.compareTo`): static members
/// first, ordered by `group_instance_id`; then dynamic members, ordered by `member_id`.
///
/// Strings compare as Java's `String.compareTo` does (by UTF-16 code unit), so the order is
/// Kafka's for every string, not just ASCII ones.
pub fn kafka_member_order(a: &Member, b: &Member) -> Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => java_string_order(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_string_order(&a.member_id, &b.member_id),
    }
}

/// Java's `String.compareTo`: lexicographic by UTF-16 code unit. It differs from Rust's `str`
/// order only between characters above U+FFFF and those in U+E000..=U+FFFF.
pub fn java_string_order(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_order_compares_like_java_strings() {
        // U+FF5E sorts before U+1F600 in Rust (code points) but after it in Java (UTF-16).
        let (bmp, astral) = ("\u{FF5E}", "\u{1F600}");
        assert_eq!(bmp.cmp(astral), Ordering::Less);
        assert_eq!(java_string_order(bmp, astral), Ordering::Greater);
        assert_eq!(
            java_string_order("consumer-a", "consumer-b"),
            Ordering::Less
        );
    }
}
