//! Seeded mutations of valid inputs, for the tests of decoders that the coverage-guided fuzz
//! targets (`fuzz/`) cannot reach without building the whole host instrumented: the admin
//! API's JSON bodies (`admin/tests/bodies.rs`) and the store's rows
//! (`store/corrupt_rows.rs`).

/// A seeded xorshift64* stream of edits: the same mutations on every run, so a failure
/// reproduces (its case number and input are in the message).
pub(crate) struct Mutator(pub(crate) u64);

impl Mutator {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One to four edits of `body`.
    pub(crate) fn mutate(&mut self, body: &[u8]) -> Vec<u8> {
        const SPLICES: &[&[u8]] = &[
            b"9223372036854775807",
            b"-2147483649",
            b"1e308",
            b"-1",
            b"null",
            b"[]",
            b"{}",
            b"\"\\u0000\"",
            b"\"\\ud800\"",
            b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
            b"\"..\"",
        ];
        let mut out = body.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(out.len() + 1);
            match self.below(6) {
                0 if !out.is_empty() => {
                    let i = at.min(out.len() - 1);
                    out[i] ^= 1 << self.below(8);
                }
                1 => out.truncate(at),
                2 => {
                    let splice = SPLICES[self.below(SPLICES.len())];
                    out.splice(at..at, splice.iter().copied());
                }
                3 if !out.is_empty() => {
                    let end = (at + 1 + self.below(16)).min(out.len());
                    let start = at.min(end);
                    let chunk = out[start..end].to_vec();
                    out.splice(end..end, chunk);
                }
                4 => {
                    let long = format!("\"{}\"", "x".repeat(1 + self.below(70_000)));
                    out.splice(at..at, long.into_bytes());
                }
                _ => {
                    let b = self.next() as u8;
                    out.insert(at, b);
                }
            }
        }
        out
    }
}
