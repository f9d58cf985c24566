//! The module log's records, authenticated: every node of a cluster is given one secret
//! (`cluster.secret_file`), each record it writes carries an HMAC-SHA256 of its key and value
//! under that secret in a record header ([`HEADER`]), and a node applies only the records
//! whose MAC verifies. A record written to the log by anyone else (a client with WRITE on the
//! topic, straight to the cluster or through any proxy) is skipped, logged and counted: it
//! cannot put a module under a built-in's name on every node, whatever the cluster's ACLs.
//!
//! The MAC covers the key's length, the key, and the value or the fact that there is none (a
//! tombstone), so no record can be turned into another by moving bytes between key and value
//! or by dropping the value. HMAC and SHA-256 are RustCrypto's; the comparison is theirs
//! (constant time).

use std::path::Path;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The record header that carries the MAC.
pub const HEADER: &str = "assignor-host-mac";

/// The shortest secret taken: 16 bytes (128 bits).
const MIN_SECRET_BYTES: usize = 16;

/// A cluster's secret.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    /// Never the secret itself.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// The secret in `path` (its bytes, a trailing newline dropped); an error names the
    /// setting.
    pub fn read(path: &Path) -> Result<Secret, String> {
        let mut bytes = std::fs::read(path)
            .map_err(|e| format!("cluster.secret_file {}: {e}", path.display()))?;
        while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            bytes.pop();
        }
        if bytes.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "cluster.secret_file {}: {} bytes; at least {MIN_SECRET_BYTES} (for example \
                 `openssl rand -hex 32 > {}`), the same on every node",
                path.display(),
                bytes.len(),
                path.display()
            ));
        }
        Ok(Secret(bytes))
    }

    #[cfg(test)]
    pub fn from_bytes(bytes: &[u8]) -> Secret {
        Secret(bytes.to_vec())
    }

    fn mac(&self, key: &[u8], value: Option<&[u8]>) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(&(key.len() as u64).to_be_bytes());
        mac.update(key);
        match value {
            Some(value) => {
                mac.update(&[1]);
                mac.update(value);
            }
            None => mac.update(&[0]),
        }
        mac
    }

    /// The MAC of a record with `key` and `value` (`None`: a tombstone).
    pub fn sign(&self, key: &[u8], value: Option<&[u8]>) -> Vec<u8> {
        self.mac(key, value).finalize().into_bytes().to_vec()
    }

    /// Whether `tag` is the MAC of the record.
    pub fn verify(&self, key: &[u8], value: Option<&[u8]>, tag: &[u8]) -> bool {
        self.mac(key, value).verify_slice(tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_verifies_under_its_secret_only_and_only_as_written() {
        let secret = Secret::from_bytes(b"0123456789abcdef-cluster");
        let tag = secret.sign(b"active:range", Some(b"\x81\x01"));
        assert!(secret.verify(b"active:range", Some(b"\x81\x01"), &tag));
        let other = Secret::from_bytes(b"another-secret-of-16+");
        assert!(!other.verify(b"active:range", Some(b"\x81\x01"), &tag));
        assert!(
            !secret.verify(b"active:range", Some(b"\x81\x02"), &tag),
            "value changed"
        );
        assert!(!secret.verify(b"active:range", None, &tag), "value dropped");
        assert!(
            !secret.verify(b"active:rang", Some(b"e\x81\x01"), &tag),
            "bytes moved"
        );
        assert!(!secret.verify(b"active:range", Some(b"\x81\x01"), &tag[..31]));
        assert_eq!(format!("{secret:?}"), "Secret(..)");
    }

    #[test]
    fn a_short_or_missing_secret_file_is_refused_naming_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("short");
        std::fs::write(&short, "tooshort\n").unwrap();
        let error = Secret::read(&short).unwrap_err();
        assert!(
            error.starts_with("cluster.secret_file") && error.contains("at least 16"),
            "{error}"
        );
        assert!(Secret::read(&dir.path().join("missing")).is_err());
        let good = dir.path().join("good");
        std::fs::write(&good, "0123456789abcdef0123\n").unwrap();
        let read = Secret::read(&good).unwrap();
        assert!(read.verify(
            b"k",
            None,
            &Secret::from_bytes(b"0123456789abcdef0123").sign(b"k", None)
        ));
    }
}
