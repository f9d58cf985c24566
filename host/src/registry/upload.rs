//! Uploads: the checks a module passes before it can serve a group, in order, each refusal a
//! typed [`UploadError`] a person can act on:
//!
//! 1. the name is a valid module name and not a client alias,
//! 2. size cap,
//! 3. the expected sha256, when the uploader gave one,
//! 4. compiles, imports only `assignor.log`, exports the ABI with the right types, and
//!    `assignor_abi_version()` is 1 or 2 ([`crate::sandbox::Sandbox::prepare`]),
//! 5. a smoke call on a synthetic group whose output passes the output checks.
//!
//! All of it runs off the writer lock; only the commit (persist, then swap the catalog) takes
//! it. A refused upload changes nothing. Uploading bytes identical to an existing version of
//! the name creates no new version: it (re)activates that one, so retrying a push is harmless.
//!
//! Steps 4 and 5 run on baseline (Winch) code, which is what makes a 1 MiB module active in
//! about a tenth of a second instead of two-thirds of one; the version serves it until the
//! optimiser (`optimizer`) swaps in Cranelift's code. The verdict stays Cranelift's: a module
//! Winch cannot compile, or whose smoke call fails on baseline code, is compiled and
//! smoke-called again with Cranelift, and that decides.

use std::sync::Arc;
use std::time::{Duration, Instant};

use assignor_sdk::{AssignRequest, AssignorInfo, Member, RebalanceProtocol, Topic};

use super::catalog::{ModuleVersion, NameEntry, VersionMeta};
use super::{Registry, aliases, info_or_default, sha256_hex};
use crate::sandbox::{CallError, CallStats, CallTag, LoadError, Tier};
use crate::store::StoreError;
use crate::store::modules::StoredVersion;
use assignor_wire::consumer_protocol::{self, Subscription};

/// Longest module name accepted (Kafka's limit for topic names, a comparable identifier).
const MAX_NAME_LEN: usize = 249;

/// How to upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadOptions {
    /// Refuse the upload unless the bytes have this sha256 (hex, any case).
    pub expected_sha256: Option<String>,
    /// Make the new version active (default). Otherwise it is stored, ready to activate.
    pub activate: bool,
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions {
            expected_sha256: None,
            activate: true,
        }
    }
}

/// An accepted upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadOutcome {
    pub name: String,
    pub version: u32,
    pub sha256: String,
    /// False when identical bytes were already a version of this name.
    pub created: bool,
    /// Whether the version is active now.
    pub active: bool,
    pub info: AssignorInfo,
    /// The smoke call's statistics (none when an existing version was reused).
    pub smoke: Option<CallStats>,
    /// Upload to active: checks, compile, smoke call, persist and swap.
    pub duration: Duration,
}

/// What [`Registry::prepare`] found.
pub enum Checked {
    /// The bytes already are this uploaded version of the name.
    Existing(Arc<ModuleVersion>),
    /// New bytes that passed every check.
    New(Box<Prepared>),
}

/// A module that passed an upload's checks, compiled, not yet a version of anything.
pub struct Prepared {
    pub sha256: String,
    pub(super) compiled: crate::sandbox::CompiledModule,
    pub(super) precompiled: bool,
    pub info: AssignorInfo,
    /// The smoke call's statistics.
    pub smoke: CallStats,
}

/// Why an upload was refused. The registry is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("`{name}` is not a valid module name: {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("`{name}` is a client spelling of `{canonical}`; upload the module as `{canonical}`")]
    AliasName {
        name: String,
        canonical: &'static str,
    },
    #[error("the module is {bytes} bytes, over the upload cap of {cap} bytes")]
    TooLarge { bytes: u64, cap: u64 },
    #[error("sha256 mismatch: expected {expected}, the uploaded bytes have {actual}")]
    Sha256Mismatch { expected: String, actual: String },
    #[error("{0}")]
    Load(#[from] LoadError),
    #[error(
        "the smoke call on a synthetic group failed: {0} (a module must answer any valid group, \
         with no parameters set)"
    )]
    Smoke(CallError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Registry {
    /// Checks `wasm` and adds it as the next version of `name`; see the module docs.
    pub fn upload(
        &self,
        name: &str,
        wasm: &[u8],
        options: UploadOptions,
    ) -> Result<UploadOutcome, UploadError> {
        let started = Instant::now();
        let prepared = match self.prepare(name, wasm, options.expected_sha256.as_deref())? {
            Checked::Existing(existing) => {
                return self.reuse(existing, options.activate, started);
            }
            Checked::New(prepared) => prepared,
        };
        let writer = self.writer.lock();
        if let Some(existing) = self.same_bytes(name, &prepared.sha256) {
            // The same bytes were committed by a concurrent upload while this one compiled.
            drop(writer);
            return self.reuse(existing, options.activate, started);
        }
        let version = self.catalog.load().next_version(name);
        let smoke = prepared.smoke;
        let sha256 = prepared.sha256.clone();
        let info = prepared.info.clone();
        let uploaded_ms = self.config.clock.now_ms();
        let active = self.commit(
            name,
            version,
            *prepared,
            wasm,
            uploaded_ms,
            options.activate,
        )?;
        Ok(UploadOutcome {
            name: name.to_owned(),
            version,
            sha256,
            created: true,
            active,
            info,
            smoke: Some(smoke),
            duration: started.elapsed(),
        })
    }

    /// Every check of an upload but the commit: name, size, sha256, compile (or the precompiled
    /// cache), smoke call. `Existing` when the bytes already are an uploaded version of `name`.
    /// A compiled module is put in the precompiled cache, so whoever commits it (this node, or
    /// in a cluster every node applying the module log) finds it there.
    pub fn prepare(
        &self,
        name: &str,
        wasm: &[u8],
        expected_sha256: Option<&str>,
    ) -> Result<Checked, UploadError> {
        check_name(name)?;
        let cap = self.config.settings.max_module_bytes;
        if wasm.len() as u64 > cap {
            return Err(UploadError::TooLarge {
                bytes: wasm.len() as u64,
                cap,
            });
        }
        let sha256 = sha256_hex(wasm);
        if let Some(expected) = expected_sha256
            && !expected.eq_ignore_ascii_case(&sha256)
        {
            return Err(UploadError::Sha256Mismatch {
                expected: expected.to_owned(),
                actual: sha256,
            });
        }
        if let Some(existing) = self.same_bytes(name, &sha256) {
            return Ok(Checked::Existing(existing));
        }
        let (compiled, precompiled) = self.compile_for_upload(wasm, &sha256)?;
        let info = info_or_default(&compiled, name);
        let cooperative = info.rebalance_protocol == RebalanceProtocol::Cooperative;
        let tag = CallTag {
            module: name,
            version: self.catalog.load().next_version(name),
        };
        // On baseline code, a failed smoke call is run again on Cranelift's, which decides
        // (`Sandbox::assign`); the module then already runs optimised code.
        let smoke = self
            .sandbox
            .assign(&compiled, tag, &smoke_request(name), cooperative)
            .map_err(|failure| UploadError::Smoke(failure.error))?
            .stats;
        // Baseline code is never cached; the optimiser caches its replacement.
        if !precompiled
            && let Some(cache) = &self.cache
            && let Some(optimized) = compiled.optimized_module()
        {
            cache.put(optimized, &sha256);
        }
        Ok(Checked::New(Box::new(Prepared {
            sha256,
            compiled,
            precompiled,
            info,
            smoke,
        })))
    }

    /// Persists (with a store) and publishes `prepared` as `version` of `name`. Callers hold
    /// the writer lock. Returns whether the version is active.
    pub(super) fn commit(
        &self,
        name: &str,
        version: u32,
        prepared: Prepared,
        wasm: &[u8],
        uploaded_ms: u64,
        activate: bool,
    ) -> Result<bool, UploadError> {
        let Prepared {
            sha256,
            compiled,
            precompiled,
            info,
            ..
        } = prepared;
        let mut catalog = (**self.catalog.load()).clone();
        if let Some(store) = &self.store {
            let stored = StoredVersion {
                sha256: sha256.clone(),
                size: wasm.len() as u64,
                uploaded_ms,
            };
            store.put_module_version(name, version, &stored, wasm, activate)?;
        }
        let module = Arc::new(ModuleVersion {
            name: name.to_owned(),
            version,
            meta: VersionMeta {
                sha256: sha256.clone(),
                size: wasm.len() as u64,
                uploaded_ms,
                info,
                builtin: false,
                precompiled,
                abi_version: compiled.abi_version(),
            },
            compiled,
            health: Default::default(),
        });
        let tier = module.compiled.tier();
        let optimize = module.clone();
        let next = catalog.next_version(name).max(version + 1);
        catalog.next.insert(name.to_owned(), next);
        let entry = catalog
            .names
            .entry(name.to_owned())
            .or_insert_with(|| NameEntry {
                versions: Default::default(),
                active: version,
            });
        entry.versions.insert(version, module);
        if activate {
            entry.active = version;
        }
        let active = entry.active == version;
        self.publish(catalog);
        tracing::info!(module = name, version, sha256 = %sha256, active, ?tier, "module uploaded");
        self.optimize_later(&optimize, wasm);
        Ok(active)
    }

    /// Queues `version`'s optimised code (`optimizer`) when it serves baseline code.
    fn optimize_later(&self, version: &Arc<ModuleVersion>, wasm: &[u8]) {
        if version.compiled.tier() == Tier::Baseline {
            self.optimizer.submit(version.clone(), wasm);
        }
    }

    /// An uploaded version of `name` built from the same bytes.
    fn same_bytes(&self, name: &str, sha256: &str) -> Option<Arc<ModuleVersion>> {
        let catalog = self.catalog.load();
        let entry = catalog.names.get(name)?;
        entry
            .versions
            .values()
            .find(|v| !v.meta.builtin && v.meta.sha256 == sha256)
            .cloned()
    }

    fn reuse(
        &self,
        existing: Arc<ModuleVersion>,
        activate: bool,
        started: Instant,
    ) -> Result<UploadOutcome, UploadError> {
        let active = if activate {
            match self.activate(&existing.name, existing.version) {
                Ok(()) => true,
                Err(super::RegistryError::Store(e)) => return Err(e.into()),
                // Deleted meanwhile: the caller may simply retry.
                Err(_) => false,
            }
        } else {
            self.catalog
                .load()
                .names
                .get(&existing.name)
                .map(|e| e.active)
                == Some(existing.version)
        };
        Ok(UploadOutcome {
            name: existing.name.clone(),
            version: existing.version,
            sha256: existing.meta.sha256.clone(),
            created: false,
            active,
            info: existing.meta.info.clone(),
            smoke: None,
            duration: started.elapsed(),
        })
    }
}

/// Module names are protocol names, used in URLs and CLI arguments: 1 to 249 ASCII letters,
/// digits, `.`, `_` or `-`, and not `.` or `..` (Kafka's rule for topic names, for the same
/// reason: a URL path normalises those segments away, so such a module could never be
/// addressed, shown or deleted again). Every client's strategy names fit.
fn check_name(name: &str) -> Result<(), UploadError> {
    let invalid = |reason| UploadError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("it is empty"));
    }
    if name == "." || name == ".." {
        return Err(invalid(
            "'.' and '..' name no module: a URL path would resolve them away",
        ));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid("it is longer than 249 bytes"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(invalid(
            "only ASCII letters, digits, '.', '_' and '-' are allowed",
        ));
    }
    if let Some(canonical) = aliases::canonical(name) {
        return Err(UploadError::AliasName {
            name: name.to_owned(),
            canonical,
        });
    }
    Ok(())
}

/// The synthetic group of the smoke call: four members (two static, one with a rack) with
/// different subscriptions over three topics (one with replica racks), so a module meets
/// heterogeneous subscriptions, static members and racks before it meets a real group.
/// Members carry real consumer-protocol Subscription (v1) bytes as `metadata`.
pub fn smoke_request(protocol_name: &str) -> AssignRequest {
    let member = |id: &str, instance: Option<&str>, rack: Option<&str>, topics: &[&str]| Member {
        member_id: id.to_owned(),
        group_instance_id: instance.map(str::to_owned),
        client_id: "assignor-host-smoke".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        rack_id: rack.map(str::to_owned),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_partitions: Vec::new(),
        owned_generation: -1,
        previous_assignment: Vec::new(),
        user_data: None,
        metadata: subscription_bytes(topics),
        weight: None,
    };
    let racks = |n: usize| (0..n).map(|p| vec![format!("rack-{}", p % 2)]).collect();
    AssignRequest {
        abi_version: assignor_sdk::ABI_VERSION,
        lag: Vec::new(),
        // The smoke group has no history: a module keeping state sees its first round.
        state: None,
        index: Default::default(),
        group_id: "assignor-host-smoke".to_owned(),
        generation_id: 1,
        protocol_type: "consumer".to_owned(),
        protocol_name: protocol_name.to_owned(),
        now_ms: 0,
        params: Default::default(),
        members: vec![
            member(
                "consumer-1-0f3c",
                None,
                Some("rack-0"),
                &["orders", "payments"],
            ),
            member("consumer-2-6a1d", None, None, &["orders"]),
            member(
                "consumer-3-9b7e",
                Some("instance-a"),
                None,
                &["audit", "orders", "payments"],
            ),
            member(
                "consumer-4-c2d4",
                Some("instance-b"),
                Some("rack-1"),
                &["payments"],
            ),
        ],
        topics: vec![
            Topic {
                name: "audit".to_owned(),
                partition_count: 1,
                partition_racks: Vec::new(),
            },
            Topic {
                name: "orders".to_owned(),
                partition_count: 6,
                partition_racks: racks(6),
            },
            Topic {
                name: "payments".to_owned(),
                partition_count: 4,
                partition_racks: Vec::new(),
            },
        ],
    }
}

/// A version-1 Subscription, as a Java consumer would send it.
fn subscription_bytes(topics: &[&str]) -> Vec<u8> {
    consumer_protocol::encode_subscription(&Subscription {
        version: 1,
        topics: topics.iter().map(|t| t.to_string()).collect(),
        ..Subscription::default()
    })
    .to_vec()
}
