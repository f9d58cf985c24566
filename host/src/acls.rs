//! Standalone's ACLs: who may do what to which group, topic or the cluster, by Kafka's own rules
//! (`StandardAuthorizer`), so an operator's `kafka-acls` habits hold here unchanged.
//!
//! An ACL binds a principal (`User:alice`, or `User:*` for every one), a client host (an
//! address, or `*`), a resource pattern (a type, a name, `literal` or `prefixed`; the literal
//! name `*` matches every name), an operation and a permission (allow or deny). A request is
//! decided as Kafka's `StandardAuthorizerData.findAclRule` decides it:
//!
//! 1. a super user (`kafka.super_users`) may do everything;
//! 2. a matching DENY wins over any ALLOW; a DENY matches its own operation or `ALL` only;
//! 3. a matching ALLOW allows; an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE,
//!    and one of ALTER_CONFIGS also DESCRIBE_CONFIGS (the implied operations);
//! 4. with no matching ACL: denied if the resource has any ACL at all (for anyone), else as
//!    `kafka.allow_everyone_if_no_acl_found` says.
//!
//! Its own part, below `kafka` (which asks it) and `admin` (which changes it), above `store`,
//! which keeps the bindings as bytes.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError};

/// Kafka's resource types the host answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
}

/// How a pattern's name matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternType {
    Literal,
    Prefixed,
}

/// Kafka's `AclOperation`s (those an ACL can name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AclOperation {
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    Allow,
    Deny,
}

/// The only name of the cluster resource, as in Kafka.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// One ACL.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclBinding {
    pub resource_type: ResourceType,
    pub resource_name: String,
    pub pattern_type: PatternType,
    pub principal: String,
    #[serde(default = "wildcard")]
    pub host: String,
    pub operation: AclOperation,
    pub permission: Permission,
}

fn wildcard() -> String {
    "*".to_owned()
}

/// An ACL the host cannot take, or a store failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Store(String),
}

impl From<StoreError> for AclError {
    fn from(e: StoreError) -> AclError {
        AclError::Store(e.to_string())
    }
}

impl AclOperation {
    /// Parses Kafka's spellings: `Read`, `READ`, `DescribeConfigs`, `describe_configs`, ...
    pub fn parse(text: &str) -> Option<AclOperation> {
        use AclOperation::*;
        let key: String = text
            .chars()
            .filter(|c| *c != '_' && *c != '-')
            .collect::<String>()
            .to_ascii_lowercase();
        Some(match key.as_str() {
            "all" => All,
            "read" => Read,
            "write" => Write,
            "create" => Create,
            "delete" => Delete,
            "alter" => Alter,
            "describe" => Describe,
            "clusteraction" => ClusterAction,
            "describeconfigs" => DescribeConfigs,
            "alterconfigs" => AlterConfigs,
            "idempotentwrite" => IdempotentWrite,
            _ => return None,
        })
    }

    /// Kafka's code of the operation (`AclOperation.code()`): the bit it takes in an
    /// `authorized_operations` field.
    pub fn code(self) -> u8 {
        use AclOperation::*;
        match self {
            All => 2,
            Read => 3,
            Write => 4,
            Create => 5,
            Delete => 6,
            Alter => 7,
            Describe => 8,
            ClusterAction => 9,
            DescribeConfigs => 10,
            AlterConfigs => 11,
            IdempotentWrite => 12,
        }
    }

    /// Whether an ALLOW of `self` allows `wanted` (its own operation, ALL, or implied).
    fn allows(self, wanted: AclOperation) -> bool {
        use AclOperation::*;
        self == All
            || self == wanted
            || (wanted == Describe && matches!(self, Read | Write | Delete | Alter))
            || (wanted == DescribeConfigs && self == AlterConfigs)
    }
}

impl ResourceType {
    /// The operations an ACL on this type may name (`kafka-acls`' own check).
    pub fn operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                All,
                Read,
                Write,
                Create,
                Delete,
                Alter,
                Describe,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[All, Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                All,
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[All, Describe, Write],
        }
    }
}

impl AclBinding {
    /// Refuses what Kafka's `kafka-acls` refuses, naming the field.
    pub fn check(&self) -> Result<(), AclError> {
        let invalid = |why: String| Err(AclError::Invalid(why));
        let Some((kind, name)) = self.principal.split_once(':') else {
            return invalid(format!(
                "principal {:?} must be TYPE:NAME, e.g. User:alice or User:*",
                self.principal
            ));
        };
        if kind.is_empty() || name.is_empty() {
            return invalid(format!("principal {:?} has an empty part", self.principal));
        }
        if self.host != "*" && self.host.parse::<std::net::IpAddr>().is_err() {
            return invalid(format!(
                "host {:?} must be an IP address or * (Kafka matches the client's address)",
                self.host
            ));
        }
        if self.resource_name.is_empty() {
            return invalid("resource_name is empty".into());
        }
        if self.resource_type == ResourceType::Cluster
            && (self.resource_name != CLUSTER_NAME || self.pattern_type != PatternType::Literal)
        {
            return invalid(format!(
                "the cluster resource is the literal name {CLUSTER_NAME:?}"
            ));
        }
        if !self.resource_type.operations().contains(&self.operation) {
            return invalid(format!(
                "{:?} is not an operation on a {:?} (allowed: {:?})",
                self.operation,
                self.resource_type,
                self.resource_type.operations()
            ));
        }
        Ok(())
    }

    /// Whether the pattern matches the resource `name` of its type.
    fn matches_name(&self, name: &str) -> bool {
        match self.pattern_type {
            PatternType::Literal => self.resource_name == "*" || self.resource_name == name,
            PatternType::Prefixed => name.starts_with(&self.resource_name),
        }
    }
}

/// `[kafka]`'s authorization settings, as Kafka's `allow.everyone.if.no.acl.found` and
/// `super.users`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AclSettings {
    pub allow_everyone_if_no_acl_found: bool,
    pub super_users: Vec<String>,
}

/// The ACLs, shared by every connection (each decision reads them) and the admin API (which
/// changes them, the store first).
pub struct Acls {
    store: Option<Store>,
    settings: AclSettings,
    bindings: parking_lot::RwLock<BTreeSet<AclBinding>>,
}

impl Acls {
    /// The ACLs kept in `store` (`None`: in memory only, for tests).
    pub fn open(store: Option<Store>, settings: AclSettings) -> Result<Arc<Acls>, AclError> {
        let mut bindings = BTreeSet::new();
        if let Some(store) = &store {
            for row in store.load_acls()? {
                let binding: AclBinding = serde_json::from_slice(&row).map_err(|e| {
                    AclError::Store(format!(
                        "ACL row {:?} is corrupt: {e}",
                        String::from_utf8_lossy(&row)
                    ))
                })?;
                bindings.insert(binding);
            }
        }
        Ok(Arc::new(Acls {
            store,
            settings,
            bindings: parking_lot::RwLock::new(bindings),
        }))
    }

    /// Adds `bindings` (each checked first; none is added if one is refused). Returns how
    /// many were new.
    pub fn add(&self, bindings: &[AclBinding]) -> Result<usize, AclError> {
        for binding in bindings {
            binding.check()?;
        }
        let new: Vec<&AclBinding> = {
            let held = self.bindings.read();
            bindings.iter().filter(|b| !held.contains(b)).collect()
        };
        if let Some(store) = &self.store {
            let rows = rows(&new)?;
            store.put_acls(&rows)?;
        }
        let mut held = self.bindings.write();
        Ok(new
            .into_iter()
            .filter(|b| held.insert((*b).clone()))
            .count())
    }

    /// Removes exactly `bindings`. Returns those that were there.
    pub fn remove(&self, bindings: &[AclBinding]) -> Result<Vec<AclBinding>, AclError> {
        let gone: Vec<&AclBinding> = {
            let held = self.bindings.read();
            bindings.iter().filter(|b| held.contains(b)).collect()
        };
        if let Some(store) = &self.store {
            store.delete_acls(&rows(&gone)?)?;
        }
        let mut held = self.bindings.write();
        for binding in &gone {
            held.remove(binding);
        }
        Ok(gone.into_iter().cloned().collect())
    }

    /// Every ACL, in a stable order (resource, then principal).
    pub fn list(&self) -> Vec<AclBinding> {
        self.bindings.read().iter().cloned().collect()
    }

    /// Whether `principal` from `host` may do `operation` on the resource `(kind, name)`.
    pub fn authorize(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        kind: ResourceType,
        name: &str,
    ) -> bool {
        if self.settings.super_users.iter().any(|s| s == principal) {
            return true;
        }
        let bindings = self.bindings.read();
        let mut resource_has_acls = false;
        let mut allowed = false;
        for acl in bindings
            .iter()
            .filter(|acl| acl.resource_type == kind && acl.matches_name(name))
        {
            resource_has_acls = true;
            let principal_matches = acl.principal == principal || acl.principal == "User:*";
            let host_matches = acl.host == "*" || acl.host == host;
            if !(principal_matches && host_matches) {
                continue;
            }
            match acl.permission {
                Permission::Deny
                    if acl.operation == AclOperation::All || acl.operation == operation =>
                {
                    return false;
                }
                Permission::Allow if acl.operation.allows(operation) => allowed = true,
                _ => {}
            }
        }
        allowed || (!resource_has_acls && self.settings.allow_everyone_if_no_acl_found)
    }
}

impl std::fmt::Debug for Acls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acls")
            .field("settings", &self.settings)
            .field("bindings", &self.bindings.read().len())
            .finish_non_exhaustive()
    }
}

/// The bindings of an ACL file (`kafka.acl_file`): `{"acls": [binding, ...]}`.
pub fn read_file(path: &std::path::Path) -> Result<Vec<AclBinding>, AclError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        acls: Vec<AclBinding>,
    }
    let failed = |why: String| AclError::Invalid(format!("{}: {why}", path.display()));
    let text = std::fs::read(path).map_err(|e| failed(e.to_string()))?;
    let file: File = serde_json::from_slice(&text).map_err(|e| failed(e.to_string()))?;
    for binding in &file.acls {
        binding.check().map_err(|e| failed(e.to_string()))?;
    }
    Ok(file.acls)
}

fn rows(bindings: &[&AclBinding]) -> Result<Vec<Vec<u8>>, AclError> {
    bindings
        .iter()
        .map(|b| serde_json::to_vec(b).map_err(|e| AclError::Store(e.to_string())))
        .collect()
}

#[cfg(test)]
mod tests;
