//! `assignor-host user ...`: standalone's SCRAM users, which `kafka.authentication = "local"`
//! checks. The password is read from a file (its first line, as `admin.token_file`), never from
//! the command line, where `ps` and shell history would show it.

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{Body, segment};
use super::table::Table;
use super::{ApiArgs, CliError, print_json, text};

/// Manage the users standalone's Kafka listener authenticates.
#[derive(Debug, clap::Args)]
pub struct UserArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    #[command(subcommand)]
    pub command: UserCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum UserCommand {
    /// List users and the mechanisms each has a credential for.
    #[command(alias = "list")]
    Ls,
    /// Add a user, or change its password, for one SCRAM mechanism.
    Add {
        name: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512 (PLAIN logins check the SCRAM credential).
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
        /// A file whose first line is the password.
        #[arg(long)]
        password_file: std::path::PathBuf,
        /// SCRAM iterations (Kafka's range 4096..=16384) [default: 4096].
        #[arg(long)]
        iterations: Option<u32>,
    },
    /// Remove a user's credential for one mechanism, or all of them.
    #[command(alias = "delete")]
    Rm {
        name: String,
        #[arg(long)]
        mechanism: Option<String>,
    },
}

impl UserArgs {
    pub async fn run(self) -> Result<(), CliError> {
        let client = self.api.client()?;
        let (value, render): (Value, fn(&Value) -> String) = match self.command {
            UserCommand::Ls => (client.get("/v1/users").await?, render_list),
            UserCommand::Add {
                name,
                mechanism,
                password_file,
                iterations,
            } => {
                let password = read_password(&password_file)?;
                let mut body = json!({ "mechanism": mechanism, "password": password });
                if let Some(i) = iterations {
                    body["iterations"] = json!(i);
                }
                let path = format!("/v1/users/{}", segment(&name));
                let answer = client.call(Method::PUT, &path, Body::Json(body)).await?;
                (answer.1, |v| {
                    let verb = if v["created"] == json!(true) {
                        "added"
                    } else {
                        "changed the password of"
                    };
                    format!(
                        "{verb} {} for {} ({} iterations)\n",
                        text(&v["name"]),
                        text(&v["mechanism"]),
                        v["iterations"]
                    )
                })
            }
            UserCommand::Rm { name, mechanism } => {
                let mut path = format!("/v1/users/{}", segment(&name));
                if let Some(m) = mechanism {
                    path.push_str(&format!("?mechanism={}", segment(&m)));
                }
                (
                    client.call(Method::DELETE, &path, Body::None).await?.1,
                    |v| {
                        let removed: Vec<String> = v["removed"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(text)
                            .collect();
                        format!("removed {} ({})\n", text(&v["name"]), removed.join(", "))
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

/// The password file's first line, without its line end (inner spaces are the password's).
fn read_password(path: &std::path::Path) -> Result<String, CliError> {
    let failed = |message: String| CliError::Read {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    let line = text.lines().next().unwrap_or("");
    if line.is_empty() {
        return Err(failed("empty: write the password on its first line".into()));
    }
    Ok(line.to_owned())
}

fn render_list(v: &Value) -> String {
    let mut table = Table::new(&["USER", "MECHANISMS"]);
    for user in v["users"].as_array().into_iter().flatten() {
        let mechanisms: Vec<String> = user["credentials"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!("{} ({})", text(&c["mechanism"]), c["iterations"]))
            .collect();
        table.row(vec![text(&user["name"]), mechanisms.join(", ")]);
    }
    table.render()
}
