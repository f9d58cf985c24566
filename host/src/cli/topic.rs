//! `assignor-host topic ...`: the catalog of topics the host serves.

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{Body, segment};
use super::table::Table;
use super::{ApiArgs, CliError, print_json, text};

/// Manage the topics the host serves in Metadata.
#[derive(Debug, clap::Args)]
pub struct TopicArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    #[command(subcommand)]
    pub command: TopicCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum TopicCommand {
    /// List topics with their partition counts.
    #[command(alias = "list")]
    Ls,
    /// Create a topic.
    Create {
        topic: String,
        /// Partition count [default: the host's catalog.default_partitions].
        #[arg(long)]
        partitions: Option<i32>,
    },
    /// Raise a topic's partition count (groups subscribed to it rebalance).
    AddPartitions {
        topic: String,
        /// The new total partition count.
        #[arg(long)]
        count: i32,
    },
    /// Delete a topic.
    #[command(alias = "delete")]
    Rm { topic: String },
}

impl TopicArgs {
    pub async fn run(self) -> Result<(), CliError> {
        let client = self.api.client()?;
        let (value, render): (Value, fn(&Value) -> String) = match self.command {
            TopicCommand::Ls => (client.get("/v1/topics").await?, render_list),
            TopicCommand::Create { topic, partitions } => {
                let mut body = json!({ "name": topic });
                if let Some(p) = partitions {
                    body["partitions"] = json!(p);
                }
                let answer = client
                    .call(Method::POST, "/v1/topics", Body::Json(body))
                    .await?;
                (answer.1, |v| format!("created {}\n", describe(v)))
            }
            TopicCommand::AddPartitions { topic, count } => {
                let path = format!("/v1/topics/{}/partitions", segment(&topic));
                let body = Body::Json(json!({ "count": count }));
                (client.call(Method::POST, &path, body).await?.1, |v| {
                    format!("{} now\n", describe(v))
                })
            }
            TopicCommand::Rm { topic } => {
                let path = format!("/v1/topics/{}", segment(&topic));
                (
                    client.call(Method::DELETE, &path, Body::None).await?.1,
                    |v| format!("deleted {}\n", describe(v)),
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

fn describe(v: &Value) -> String {
    format!("{} with {} partitions", text(&v["name"]), v["partitions"])
}

fn render_list(v: &Value) -> String {
    let mut table = Table::new(&["TOPIC", "PARTITIONS", "RACKS"]);
    for t in v["topics"].as_array().into_iter().flatten() {
        let racks = if t["racks"].is_array() { "known" } else { "-" };
        table.row(vec![text(&t["name"]), text(&t["partitions"]), racks.into()]);
    }
    table.render()
}
