//! The records of the module log, and how they are keyed so that compaction keeps what the
//! registry needs and drops what it no longer does.
//!
//! | record | key | value |
//! |---|---|---|
//! | an uploaded version | `version:<version>:<sha256>:<name>` | `Version { wasm, uploaded_ms }` |
//! | its bytes dropped | the same key | null (a tombstone) |
//! | a version deleted | `deleted:<version>:<name>` | `Deleted` |
//! | the version to run | `active:<name>` | `Active { version }`, or null: none chosen |
//! | a group's operator settings | `group:<group id>` | `Group { config }`, or null: none |
//!
//! Values are MessagePack (rmp-serde, named fields). The name is the key's last part, so a
//! name may hold `:`. A version's key holds its sha256: two nodes uploading different bytes
//! as the same number write two keys, both survive compaction, and every node (also one
//! replaying the log later) keeps the first in the log. A deleted version keeps a small
//! `deleted` record forever, so its number is never given again.

use serde::{Deserialize, Serialize};

use crate::coordinator::GroupConfig;

/// One record of the log, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// Uploaded `version` of `name`, inactive until an `Active` record names it.
    Version {
        name: String,
        version: u32,
        sha256: String,
        wasm: Vec<u8>,
        uploaded_ms: u64,
    },
    /// The tombstone of a `Version` key, written after a `Deleted` (or by the loser of a
    /// number): it lets compaction drop the bytes, and changes nothing when applied.
    VersionGone {
        name: String,
        version: u32,
        sha256: String,
    },
    /// `version` of `name` is deleted.
    Deleted { name: String, version: u32 },
    /// The version of `name` to run; `None`: the lowest present (the built-in, if any).
    Active { name: String, version: Option<u32> },
    /// What an operator set for a group (strategy override, pin, parameters, stabilisation);
    /// `None`: nothing.
    Group {
        group: String,
        config: Option<GroupConfig>,
    },
}

/// The MessagePack value of a record that has one.
#[derive(Serialize, Deserialize)]
enum Value {
    Version {
        #[serde(with = "serde_bytes")]
        wasm: Vec<u8>,
        uploaded_ms: u64,
    },
    Deleted,
    Active {
        version: u32,
    },
    Group {
        config: GroupConfig,
    },
}

impl Record {
    /// The record's key and value (`None`: a tombstone).
    pub fn encode(&self) -> (String, Option<Vec<u8>>) {
        let value = |v: Value| Some(rmp_serde::to_vec_named(&v).expect("a value always encodes"));
        match self {
            Record::Version {
                name,
                version,
                sha256,
                wasm,
                uploaded_ms,
            } => (
                version_key(name, *version, sha256),
                value(Value::Version {
                    wasm: wasm.clone(),
                    uploaded_ms: *uploaded_ms,
                }),
            ),
            Record::VersionGone {
                name,
                version,
                sha256,
            } => (version_key(name, *version, sha256), None),
            Record::Deleted { name, version } => {
                (format!("deleted:{version}:{name}"), value(Value::Deleted))
            }
            Record::Active { name, version } => (
                format!("active:{name}"),
                version.and_then(|version| value(Value::Active { version })),
            ),
            Record::Group { group, config } => (
                format!("group:{group}"),
                config
                    .clone()
                    .and_then(|config| value(Value::Group { config })),
            ),
        }
    }

    /// Decodes a record read from the log; `Err` says what is wrong with it.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<Record, String> {
        let key = std::str::from_utf8(key).map_err(|_| "the key is not UTF-8".to_owned())?;
        let (kind, rest) = key
            .split_once(':')
            .ok_or_else(|| format!("key {key:?} has no kind"))?;
        let number = |s: &str| {
            s.parse::<u32>()
                .map_err(|_| format!("key {key:?}: {s:?} is not a version"))
        };
        let value = value
            .map(|v| rmp_serde::from_slice::<Value>(v).map_err(|e| format!("key {key:?}: {e}")))
            .transpose()?;
        match (kind, value) {
            ("version", value) => {
                let mut parts = rest.splitn(3, ':');
                let (Some(version), Some(sha256), Some(name)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    return Err(format!(
                        "key {key:?}: want version:<version>:<sha256>:<name>"
                    ));
                };
                let (name, version, sha256) =
                    (name.to_owned(), number(version)?, sha256.to_owned());
                match value {
                    None => Ok(Record::VersionGone {
                        name,
                        version,
                        sha256,
                    }),
                    Some(Value::Version { wasm, uploaded_ms }) => Ok(Record::Version {
                        name,
                        version,
                        sha256,
                        wasm,
                        uploaded_ms,
                    }),
                    Some(_) => Err(format!("key {key:?}: the value is not a version")),
                }
            }
            ("deleted", Some(Value::Deleted)) => {
                let (version, name) = rest
                    .split_once(':')
                    .ok_or_else(|| format!("key {key:?}: want deleted:<version>:<name>"))?;
                Ok(Record::Deleted {
                    name: name.to_owned(),
                    version: number(version)?,
                })
            }
            ("active", None) => Ok(Record::Active {
                name: rest.to_owned(),
                version: None,
            }),
            ("active", Some(Value::Active { version })) => Ok(Record::Active {
                name: rest.to_owned(),
                version: Some(version),
            }),
            ("group", None) => Ok(Record::Group {
                group: rest.to_owned(),
                config: None,
            }),
            ("group", Some(Value::Group { config })) => Ok(Record::Group {
                group: rest.to_owned(),
                config: Some(config),
            }),
            _ => Err(format!(
                "key {key:?}: unknown kind or a value of another kind"
            )),
        }
    }
}

fn version_key(name: &str, version: u32, sha256: &str) -> String {
    format!("version:{version}:{sha256}:{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_reads_back_as_written() {
        let records = [
            Record::Version {
                name: "my:strategy".into(),
                version: 3,
                sha256: "ab".repeat(32),
                wasm: vec![0, 97, 115, 109, 255],
                uploaded_ms: 1_700_000_000_000,
            },
            Record::VersionGone {
                name: "s".into(),
                version: 3,
                sha256: "cd".repeat(32),
            },
            Record::Deleted {
                name: "s".into(),
                version: 12,
            },
            Record::Active {
                name: "s".into(),
                version: Some(2),
            },
            Record::Active {
                name: "s".into(),
                version: None,
            },
            Record::Group {
                group: "orders:eu".into(),
                config: Some(GroupConfig {
                    strategy: Some("roundrobin".into()),
                    pinned_version: Some(2),
                    params: [("k".to_owned(), "v".to_owned())].into(),
                    stabilize_ms: Some(500),
                    stabilize_max_ms: None,
                }),
            },
            Record::Group {
                group: "orders".into(),
                config: None,
            },
        ];
        for record in records {
            let (key, value) = record.encode();
            assert_eq!(
                Record::decode(key.as_bytes(), value.as_deref()),
                Ok(record.clone()),
                "{key}"
            );
        }
    }

    #[test]
    fn a_version_and_its_tombstone_share_a_key_so_compaction_drops_the_bytes() {
        let (key, value) = Record::Version {
            name: "s".into(),
            version: 1,
            sha256: "00".into(),
            wasm: vec![200; 1000],
            uploaded_ms: 0,
        }
        .encode();
        let (gone, none) = Record::VersionGone {
            name: "s".into(),
            version: 1,
            sha256: "00".into(),
        }
        .encode();
        assert_eq!((key.as_str(), none), ("version:1:00:s", None));
        assert_eq!(gone, key);
        // MessagePack bin (1,000 bytes and the framing), not an array of numbers (2 bytes each).
        let len = value.map(|v| v.len()).unwrap();
        assert!((1000..1100).contains(&len), "{len}");
    }

    #[test]
    fn records_that_are_not_the_logs_are_refused_saying_why() {
        type Case<'a> = (&'a [u8], Option<&'a [u8]>, &'a str);
        let cases: [Case<'_>; 4] = [
            (b"nonsense", None, "has no kind"),
            (b"version:x:00:s", None, "is not a version"),
            (b"deleted:1:s", None, "unknown kind"),
            (b"active:s", Some(b"\xc1"), "key \"active:s\""),
        ];
        for (key, value, expected) in cases {
            let error = Record::decode(key, value).unwrap_err();
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }
}
