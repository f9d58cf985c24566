//! Every setting from the environment: `ASSIGNOR_HOST_<SECTION>__<KEY>` sets the key at that
//! path, `__` separating the levels, e.g. `ASSIGNOR_HOST_SANDBOX__LIMITS__FUEL=500000000` or
//! `ASSIGNOR_HOST_KAFKA__MAX_CONNECTIONS=2000` (the names are the file's keys, upper-cased).
//!
//! Precedence: defaults < config file < these variables < command-line flags (whose own
//! variables, `ASSIGNOR_HOST_LISTEN`, `ASSIGNOR_HOST_DATA_DIR`, ..., have no `__` and are read
//! by the flags, not here). A value is read as a TOML value when it is one (`5`, `true`,
//! `["a"]`) and as a string otherwise (`0.0.0.0:9092`, `5s`); quote a string that looks like
//! a number (`'"1234"'`). A variable naming no setting, or with a
//! value of the wrong type, refuses the start with the variable's name.

use std::path::Path;

use toml::{Table, Value};

use super::{Config, ConfigError};

/// Prefix of every variable the host reads.
pub const ENV_PREFIX: &str = "ASSIGNOR_HOST_";

impl Config {
    /// The configuration from `file` (if any) and the `ASSIGNOR_HOST_*__*` variables among
    /// `vars` (pass `std::env::vars()`), over the defaults.
    pub fn load(
        file: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut table = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                })?;
                let parse = |message: String| ConfigError::Parse {
                    path: path.display().to_string(),
                    message,
                };
                let table: Table = toml::from_str(&text).map_err(|e| parse(e.to_string()))?;
                check(&table).map_err(parse)?;
                if secret_in(&table) {
                    return Err(parse(
                        "upstream.sasl_password may not be written in a file: set \
                         upstream.sasl_password_file or the variable \
                         ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD"
                            .to_owned(),
                    ));
                }
                table
            }
            None => Table::new(),
        };
        let mut overrides: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(name, _)| {
                name.strip_prefix(ENV_PREFIX)
                    .is_some_and(|path| path.contains("__"))
            })
            .collect();
        overrides.sort();
        for (variable, raw) in overrides {
            let error = |message: String| ConfigError::Env {
                variable: variable.clone(),
                message,
            };
            let keys: Vec<String> = variable[ENV_PREFIX.len()..]
                .split("__")
                .map(str::to_ascii_lowercase)
                .collect();
            if keys.iter().any(String::is_empty) {
                return Err(error("empty key in the path".into()));
            }
            // A password is text as it is: never read as a TOML value (a number would not
            // deserialize, and the error would print it).
            let value = if keys == SECRET {
                Value::String(raw)
            } else {
                value(&raw)
            };
            set(&mut table, &keys, value).map_err(error)?;
            // Checked one variable at a time, so an error names the variable that caused it.
            check(&table).map_err(error)?;
        }
        Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Env {
                variable: ENV_PREFIX.to_owned(),
                message: e.to_string(),
            })
    }
}

/// The one setting that is a secret: only from its variable (or a file it names).
const SECRET: [&str; 2] = ["upstream", "sasl_password"];

fn secret_in(table: &Table) -> bool {
    table
        .get(SECRET[0])
        .and_then(Value::as_table)
        .is_some_and(|upstream| upstream.contains_key(SECRET[1]))
}

/// Whether `table` is a valid configuration (the deserializer's message otherwise).
fn check(table: &Table) -> Result<(), String> {
    Value::Table(table.clone())
        .try_into::<Config>()
        .map(drop)
        .map_err(|e| e.to_string().trim().to_owned())
}

/// A variable's text as a TOML value, or as a string when it is not one.
fn value(raw: &str) -> Value {
    toml::from_str::<Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_owned()))
}

/// Sets `keys` (a path of tables) in `table` to `value`, creating tables on the way.
fn set(table: &mut Table, keys: &[String], value: Value) -> Result<(), String> {
    let (last, parents) = keys.split_last().expect("at least one key");
    let mut current = table;
    for (depth, key) in parents.iter().enumerate() {
        let entry = current
            .entry(key.clone())
            .or_insert_with(|| Value::Table(Table::new()));
        current = entry.as_table_mut().ok_or_else(|| {
            format!(
                "`{}` is not a section, so it has no key `{}`",
                keys[..=depth].join("."),
                keys[depth + 1]
            )
        })?;
    }
    current.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn variables_set_any_key_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("host.toml");
        std::fs::write(&file, "[kafka]\nmax_connections = 5\nnode_id = 7\n").unwrap();
        let config = Config::load(
            Some(&file),
            vars(&[
                ("ASSIGNOR_HOST_KAFKA__MAX_CONNECTIONS", "2000"),
                ("ASSIGNOR_HOST_KAFKA__LISTEN", "0.0.0.0:19092"),
                ("ASSIGNOR_HOST_SANDBOX__LIMITS__FUEL", "500000000"),
                ("ASSIGNOR_HOST_SANDBOX__LIMITS__TIMEOUT", "2s"),
                ("ASSIGNOR_HOST_CATALOG__AUTO_CREATE_TOPICS", "true"),
                ("ASSIGNOR_HOST_ADMIN__TOKEN", "\"1234\""),
                ("ASSIGNOR_HOST_COORDINATOR__FALLBACK_STRATEGY", "roundrobin"),
                ("ASSIGNOR_HOST_DRIVER__SHARDS", "3"),
                ("ASSIGNOR_HOST_LISTEN", "ignored: a flag's variable"),
                ("PATH", "/usr/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(
            config.kafka.max_connections, 2000,
            "the variable wins over the file"
        );
        assert_eq!(config.kafka.node_id, 7, "the file still applies");
        assert_eq!(config.kafka.listen.to_string(), "0.0.0.0:19092");
        assert_eq!(config.sandbox.limits.fuel, 500_000_000);
        assert_eq!(config.sandbox.limits.timeout.as_secs(), 2);
        assert!(config.catalog.auto_create_topics);
        assert_eq!(config.admin.token.as_deref(), Some("1234"));
        assert_eq!(config.coordinator.fallback_strategy, "roundrobin");
        assert_eq!(config.driver.shards, Some(3));
    }

    #[test]
    fn the_metering_variable_sets_the_sandbox_section() {
        let config =
            Config::load(None, vars(&[("ASSIGNOR_HOST_SANDBOX__METERING", "epoch")])).unwrap();
        assert_eq!(config.sandbox.metering, crate::sandbox::Metering::Epoch);
        let error = Config::load(None, vars(&[("ASSIGNOR_HOST_SANDBOX__METERING", "wall")]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("ASSIGNOR_HOST_SANDBOX__METERING")
                && error.contains("`metering` must be \"fuel\" or \"epoch\""),
            "{error}"
        );
    }

    #[test]
    fn the_upstream_password_comes_from_its_variable_as_text_and_never_from_a_file() {
        // Digits stay text: a password is never read as a TOML value.
        let config = Config::load(
            None,
            vars(&[
                ("ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD", "12345"),
                ("ASSIGNOR_HOST_UPSTREAM__SECURITY_PROTOCOL", "SASL_SSL"),
                ("ASSIGNOR_HOST_UPSTREAM__SASL_MECHANISM", "SCRAM-SHA-512"),
            ]),
        )
        .unwrap();
        let password = config.upstream.sasl_password.as_ref().unwrap();
        assert_eq!(password.expose(), "12345");
        assert_eq!(
            config.upstream.security_protocol,
            crate::upstream::connection::SecurityProtocol::SaslSsl
        );
        assert!(!format!("{:?}", config.upstream).contains("12345"));

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("host.toml");
        std::fs::write(&file, "[upstream]\nsasl_password = \"hunter2\"\n").unwrap();
        let error = Config::load(Some(&file), vars(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("may not be written in a file")
                && error.contains("ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD")
                && !error.contains("hunter2"),
            "{error}"
        );
    }

    #[test]
    fn a_bad_variable_is_refused_by_name() {
        let unknown = Config::load(None, vars(&[("ASSIGNOR_HOST_KAFKA__LISTEN_ADDR", "x")]));
        let error = unknown.unwrap_err().to_string();
        assert!(
            error.contains("ASSIGNOR_HOST_KAFKA__LISTEN_ADDR") && error.contains("listen_addr"),
            "{error}"
        );
        let wrong_type = Config::load(
            None,
            vars(&[("ASSIGNOR_HOST_SANDBOX__LIMITS__FUEL", "lots")]),
        );
        let error = wrong_type.unwrap_err().to_string();
        assert!(
            error.contains("ASSIGNOR_HOST_SANDBOX__LIMITS__FUEL"),
            "{error}"
        );
        let not_a_section = Config::load(None, vars(&[("ASSIGNOR_HOST_DATA_DIR__X", "1")]));
        let error = not_a_section.unwrap_err().to_string();
        assert!(error.contains("ASSIGNOR_HOST_DATA_DIR__X"), "{error}");
    }

    #[test]
    fn a_variable_naming_no_key_of_its_section_is_refused() {
        let variables = [
            ("ASSIGNOR_HOST_COORDINATOR__TYPO", "typo"),
            ("ASSIGNOR_HOST_KAFKA__MAX_CONECTIONS", "max_conections"),
            ("ASSIGNOR_HOST_ADMIN__TOKN", "tokn"),
            (
                "ASSIGNOR_HOST_CATALOG__AUTO_CREATE_TOPIC",
                "auto_create_topic",
            ),
            ("ASSIGNOR_HOST_SANDBOX__LIMIT", "limit"),
            ("ASSIGNOR_HOST_SANDBOX__LIMITS__MEMORY_BYTE", "memory_byte"),
            ("ASSIGNOR_HOST_SANDBOX__POOL__MAX_INSTANCE", "max_instance"),
            ("ASSIGNOR_HOST_REGISTRY__MAX_MODULE_BYTE", "max_module_byte"),
            ("ASSIGNOR_HOST_REGISTRY__QUARANTINE__TRESHOLD", "treshold"),
            ("ASSIGNOR_HOST_DRIVER__SHARD", "shard"),
        ];
        for (variable, key) in variables {
            let error = Config::load(None, vars(&[(variable, "1")]))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(variable) && error.contains(&format!("unknown field `{key}`")),
                "{error}"
            );
        }
    }

    #[test]
    fn a_typo_in_any_section_of_a_file_is_refused_naming_file_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("host.toml");
        for (text, key) in crate::config::tests::TYPOS {
            std::fs::write(&file, text).unwrap();
            let error = Config::load(Some(&file), Vec::new())
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("host.toml") && error.contains(&format!("unknown field `{key}`")),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn the_documented_example_file_is_the_defaults() {
        let example =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/assignor-host.example.toml");
        let config = Config::load(Some(&example), Vec::new()).unwrap();
        assert_eq!(
            config,
            Config::default(),
            "docs/assignor-host.example.toml drifted"
        );
    }

    #[test]
    fn no_file_and_no_variables_is_the_standalone_mode() {
        assert_eq!(Config::load(None, Vec::new()).unwrap(), Config::default());
    }
}
