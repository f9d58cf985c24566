//! A small, fast, deterministic hasher for the SDK's id lookups (member ids, topic names).
//!
//! std's default `RandomState` wants randomness the sandbox does not have, and SipHash is
//! several times slower than needed for short keys hashed hundreds of thousands of times per
//! rebalance. This is the Fx hash of rustc/Firefox: a rotate-xor-multiply per 8 bytes. It is
//! not collision-resistant against chosen keys; the keys here are member ids the coordinator
//! makes unique with a random suffix, and topic names the host validated, and a module runs
//! under a fuel budget anyway.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FxHasher`].
pub(crate) type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// Rotate-xor-multiply hashing, 8 bytes at a time.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, BuildHasherDefault};

    fn hash(s: &str) -> u64 {
        BuildHasherDefault::<FxHasher>::default().hash_one(s)
    }

    #[test]
    fn equal_keys_hash_equal_and_near_keys_differ() {
        assert_eq!(hash("consumer-1-abc"), hash("consumer-1-abc"));
        assert_ne!(hash("consumer-1-abc"), hash("consumer-2-abc"));
        assert_ne!(hash("abcdefgh"), hash("abcdefgh\0"));
        assert_ne!(hash(""), hash("a"));
    }

    #[test]
    fn maps_find_what_was_inserted() {
        let mut map: FxHashMap<String, usize> = FxHashMap::default();
        for i in 0..1000 {
            map.insert(format!("member-{i}"), i);
        }
        assert!((0..1000).all(|i| map.get(format!("member-{i}").as_str()) == Some(&i)));
        assert_eq!(map.get("member-1000"), None);
    }
}
