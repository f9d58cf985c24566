//! Member ids: `<client.id>-<uuid>` for dynamic members and `<group.instance.id>-<uuid>` for
//! static ones, as Kafka forms them. The uuid comes from a seeded PRNG (SplitMix64) so the core
//! stays deterministic under test; the driver seeds it randomly.

/// A seeded generator of uuid-shaped strings.
#[derive(Debug, Clone)]
pub struct IdGen {
    state: u64,
}

impl IdGen {
    pub fn new(seed: u64) -> IdGen {
        IdGen { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A member id for `prefix` (the client id, or the instance id of a static member).
    pub fn member_id(&mut self, prefix: &str) -> String {
        format!("{prefix}-{}", self.uuid())
    }

    /// A bare uuid: the member id the coordinator gives a consumer-protocol member that
    /// sent none (ConsumerGroupHeartbeat v0), as Kafka's `Uuid.randomUuid()`.
    pub fn uuid(&mut self) -> String {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        bytes[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string()
    }
}
