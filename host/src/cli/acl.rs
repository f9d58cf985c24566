//! `assignor-host acl ...`: standalone's ACLs, with `kafka-acls`' own flags. As with
//! `kafka-acls`, the principals, operations and resources given are crossed: `acl add
//! --allow-principal User:alice --operation Read --operation Describe --topic t --group g`
//! adds four ACLs.

use reqwest::Method;
use serde_json::{Value, json};

use super::client::Body;
use super::table::Table;
use super::{ApiArgs, CliError, print_json, text};
use crate::acls::{AclOperation, CLUSTER_NAME};

/// Manage the ACLs a standalone host decides by.
#[derive(Debug, clap::Args)]
pub struct AclArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    #[command(subcommand)]
    pub command: AclCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum AclCommand {
    /// List every ACL.
    #[command(alias = "list")]
    Ls,
    /// Add ACLs (every principal x operation x resource given).
    Add(AclFlags),
    /// Remove exactly these ACLs.
    #[command(alias = "remove")]
    Rm(AclFlags),
}

/// `kafka-acls`' flags.
#[derive(Debug, Clone, clap::Args)]
pub struct AclFlags {
    #[arg(long = "allow-principal")]
    pub allow_principal: Vec<String>,
    #[arg(long = "deny-principal")]
    pub deny_principal: Vec<String>,
    /// Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs,
    /// ClusterAction, IdempotentWrite or All.
    #[arg(long = "operation", required = true)]
    pub operation: Vec<String>,
    #[arg(long)]
    pub topic: Vec<String>,
    #[arg(long)]
    pub group: Vec<String>,
    #[arg(long = "transactional-id")]
    pub transactional_id: Vec<String>,
    /// The cluster resource.
    #[arg(long)]
    pub cluster: bool,
    /// literal (the default) or prefixed.
    #[arg(long = "resource-pattern-type", default_value = "literal")]
    pub resource_pattern_type: String,
    /// The client address the ACL is for [default: *].
    #[arg(long = "allow-host")]
    pub allow_host: Option<String>,
    #[arg(long = "deny-host")]
    pub deny_host: Option<String>,
}

impl AclFlags {
    /// The bindings these flags name, as the API takes them.
    fn bindings(&self) -> Result<Vec<Value>, CliError> {
        let pattern = self.resource_pattern_type.to_ascii_lowercase();
        if pattern != "literal" && pattern != "prefixed" {
            return Err(CliError::Usage(format!(
                "--resource-pattern-type {}: use literal or prefixed",
                self.resource_pattern_type
            )));
        }
        let mut resources: Vec<(&str, String)> = Vec::new();
        resources.extend(self.topic.iter().map(|t| ("topic", t.clone())));
        resources.extend(self.group.iter().map(|g| ("group", g.clone())));
        resources.extend(
            self.transactional_id
                .iter()
                .map(|t| ("transactional_id", t.clone())),
        );
        if self.cluster {
            resources.push(("cluster", CLUSTER_NAME.to_owned()));
        }
        if resources.is_empty() {
            return Err(CliError::Usage(
                "name a resource: --topic, --group, --transactional-id or --cluster".into(),
            ));
        }
        let mut principals: Vec<(&str, &String, &Option<String>)> = Vec::new();
        principals.extend(
            self.allow_principal
                .iter()
                .map(|p| ("allow", p, &self.allow_host)),
        );
        principals.extend(
            self.deny_principal
                .iter()
                .map(|p| ("deny", p, &self.deny_host)),
        );
        if principals.is_empty() {
            return Err(CliError::Usage(
                "name a principal: --allow-principal or --deny-principal".into(),
            ));
        }
        let mut operations = Vec::new();
        for text in &self.operation {
            let operation = AclOperation::parse(text).ok_or_else(|| {
                CliError::Usage(format!(
                    "--operation {text}: not one of Read, Write, Create, Delete, Alter, \
                     Describe, DescribeConfigs, AlterConfigs, ClusterAction, IdempotentWrite, All"
                ))
            })?;
            operations.push(operation);
        }
        let mut bindings = Vec::new();
        for (permission, principal, host) in &principals {
            for operation in &operations {
                for (kind, name) in &resources {
                    bindings.push(json!({
                        "resource_type": kind,
                        "resource_name": name,
                        "pattern_type": if *kind == "cluster" { "literal" } else { pattern.as_str() },
                        "principal": principal,
                        "host": host.as_deref().unwrap_or("*"),
                        "operation": operation,
                        "permission": permission,
                    }));
                }
            }
        }
        Ok(bindings)
    }
}

impl AclArgs {
    pub async fn run(self) -> Result<(), CliError> {
        let client = self.api.client()?;
        let (value, render): (Value, fn(&Value) -> String) = match &self.command {
            AclCommand::Ls => (client.get("/v1/acls").await?, render_list),
            AclCommand::Add(flags) => {
                let body = Body::Json(json!({ "acls": flags.bindings()? }));
                (client.call(Method::POST, "/v1/acls", body).await?.1, |v| {
                    format!(
                        "added {} ACLs ({} were there already)\n",
                        v["added"], v["present"]
                    )
                })
            }
            AclCommand::Rm(flags) => {
                let body = Body::Json(json!({ "acls": flags.bindings()? }));
                (
                    client.call(Method::DELETE, "/v1/acls", body).await?.1,
                    |v| {
                        let removed = v["removed"].as_array().map_or(0, Vec::len);
                        format!("removed {removed} ACLs\n")
                    },
                )
            }
        };
        if self.api.json {
            print_json(&value);
        } else {
            print!("{}", render(&value));
        }
        Ok(())
    }
}

fn render_list(v: &Value) -> String {
    let mut table = Table::new(&[
        "PRINCIPAL",
        "HOST",
        "PERMISSION",
        "OPERATION",
        "RESOURCE",
        "NAME",
        "PATTERN",
    ]);
    for acl in v["acls"].as_array().into_iter().flatten() {
        table.row(
            [
                "principal",
                "host",
                "permission",
                "operation",
                "resource_type",
                "resource_name",
                "pattern_type",
            ]
            .iter()
            .map(|field| text(&acl[*field]))
            .collect(),
        );
    }
    table.render()
}
