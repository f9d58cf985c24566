//! The host's configuration: one TOML file, every field defaulted, so `assignor-host serve` with
//! no file at all is the standalone mode of docs/operating.md (Kafka on 127.0.0.1:9092, admin on
//! 127.0.0.1:9644, data in `./data`, no topics).
//!
//! Each part of the host owns one section (`[kafka]`, `[admin]`, `[catalog]`, ...) as a type
//! of its own ([`crate::kafka::KafkaConfig`], [`crate::admin::AdminConfig`], ...); this file
//! only reads the file, the environment and the flags and assembles them, so adding a part's
//! settings is one field here and no part imports this file. Unknown keys are refused with the key's name, because a
//! misspelt setting silently ignored is worse than a refused start. Every key can also come
//! from the environment as `ASSIGNOR_HOST_<SECTION>__<KEY>` ([`Config::load`], `env`), and
//! `docs/assignor-host.example.toml` lists every setting with its default (a test keeps the
//! two equal).
//!
//! ```toml
//! data_dir = "/var/lib/assignor-host"
//!
//! [kafka]
//! listen = "0.0.0.0:9092"
//! advertised = "assignor.internal:9092"
//!
//! [catalog]
//! auto_create_topics = false
//!
//! [[catalog.topics]]
//! name = "orders"
//! partitions = 12
//! ```

mod env;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::admin::AdminConfig;
use crate::catalog::CatalogConfig;
use crate::cluster::ClusterSettings;
use crate::coordinator::CoordinatorConfig;
use crate::driver::DriverSettings;
use crate::kafka::KafkaConfig;
use crate::registry::RegistrySettings;
use crate::sandbox::SandboxConfig;
use crate::upstream::UpstreamConfig;

/// Everything the host reads at start. `Config::default()` is the standalone mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the store (`assignor-host.redb`) lives; created if missing.
    pub data_dir: PathBuf,
    /// The Kafka listener and how the host presents itself as a broker.
    pub kafka: KafkaConfig,
    /// The HTTP admin API: listener, bearer token, body caps.
    pub admin: AdminConfig,
    /// The topics the host serves.
    pub catalog: CatalogConfig,
    /// Group coordinator settings (Kafka's broker defaults), owned by `coordinator`.
    pub coordinator: CoordinatorConfig,
    /// Per-call limits and the instance pool of the wasm sandbox, owned by `sandbox`.
    pub sandbox: SandboxConfig,
    /// Module uploads and quarantine, owned by `registry`.
    pub registry: RegistrySettings,
    /// Shards and assignor threads of the coordinator's runtime, owned by `driver`.
    pub driver: DriverSettings,
    /// Proxy mode: the cluster the host sits in front of, owned by `upstream`. Empty
    /// `bootstrap`: standalone.
    pub upstream: UpstreamConfig,
    /// Several host nodes in front of one upstream, owned by `cluster`. No `name`: alone.
    pub cluster: ClusterSettings,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./data"),
            kafka: KafkaConfig::default(),
            admin: AdminConfig::default(),
            catalog: CatalogConfig::default(),
            coordinator: CoordinatorConfig::default(),
            sandbox: SandboxConfig::default(),
            registry: RegistrySettings::default(),
            driver: DriverSettings::default(),
            upstream: UpstreamConfig::default(),
            cluster: ClusterSettings::default(),
        }
    }
}

/// The config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: String, message: String },
    /// An `ASSIGNOR_HOST_<SECTION>__<KEY>` variable names no setting or has a bad value.
    #[error("environment variable {variable}: {message}")]
    Env { variable: String, message: String },
}

impl Config {
    /// Reads a TOML file; absent keys take their defaults, unknown keys are an error naming them.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Config::from_toml(&text).map_err(|message| ConfigError::Parse {
            path: path.display().to_string(),
            message,
        })
    }

    /// Parses TOML text (the error is the parser's message, which names line and key).
    pub fn from_toml(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Metering;

    #[test]
    fn empty_file_is_the_standalone_mode() {
        let config = Config::from_toml("").unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.kafka.listen.to_string(), "127.0.0.1:9092");
        assert_eq!(config.admin.listen.to_string(), "127.0.0.1:9644");
        assert_eq!(config.data_dir, PathBuf::from("./data"));
        assert_eq!(config.kafka.max_frame_bytes, 104_857_600);
        assert!(!config.catalog.auto_create_topics);
    }

    #[test]
    fn sections_override_only_what_they_name() {
        let config = Config::from_toml(
            r#"
            data_dir = "/tmp/x"
            [kafka]
            advertised = "broker.example:19092"
            [[catalog.topics]]
            name = "orders"
            partitions = 12
            "#,
        )
        .unwrap();
        assert_eq!(config.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(
            config.kafka.advertised.as_deref(),
            Some("broker.example:19092")
        );
        assert_eq!(config.kafka.listen.to_string(), "127.0.0.1:9092");
        assert_eq!(config.catalog.topics.len(), 1);
        assert_eq!(config.catalog.topics[0].partitions, 12);
        assert!(config.catalog.topics[0].partition_racks.is_empty());
    }

    #[test]
    fn unknown_key_is_refused_by_name() {
        let err = Config::from_toml("[kafka]\nlisten_addr = \"1.2.3.4:1\"\n").unwrap_err();
        assert!(err.contains("listen_addr"), "{err}");
    }

    /// One misspelt key per section (and per nested section), each a file on its own.
    pub(super) const TYPOS: [(&str, &str); 16] = [
        ("data_dri = \"/tmp/x\"", "data_dri"),
        ("[kafka]\nmax_conections = 5", "max_conections"),
        ("[admin]\ntokn = \"secret\"", "tokn"),
        ("[catalog]\nauto_create_topic = true", "auto_create_topic"),
        (
            "[[catalog.topics]]\nname = \"t\"\npartitions = 1\npartition_rack = []",
            "partition_rack",
        ),
        ("[coordinator]\ntypo = 1", "typo"),
        (
            "[coordinator]\nsession_timeout_ms = 10000",
            "session_timeout_ms",
        ),
        ("[sandbox]\nlimit = {}", "limit"),
        ("[sandbox]\nmetring = \"epoch\"", "metring"),
        ("[sandbox.limits]\nmemory_byte = 1", "memory_byte"),
        ("[sandbox.pool]\nmax_instance = 1", "max_instance"),
        ("[registry]\nmax_module_byte = 1", "max_module_byte"),
        ("[registry.quarantine]\ntreshold = 1", "treshold"),
        ("[driver]\nshard = 1", "shard"),
        ("[upstream]\nbootstraps = \"a:1\"", "bootstraps"),
        ("[cluster]\nshard = 50", "shard"),
    ];

    #[test]
    fn a_typo_in_any_section_is_refused_by_name() {
        for (text, key) in TYPOS {
            let error = Config::from_toml(text).expect_err(text);
            assert!(
                error.contains(&format!("unknown field `{key}`")),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn sandbox_metering_is_fuel_unless_set_to_epoch() {
        assert_eq!(Config::default().sandbox.metering, Metering::Fuel);
        let read = |text: &str| Config::from_toml(text).map(|c| c.sandbox.metering);
        assert_eq!(read("[sandbox]\nmetering = \"fuel\""), Ok(Metering::Fuel));
        assert_eq!(read("[sandbox]\nmetering = \"epoch\""), Ok(Metering::Epoch));
        let config =
            Config::from_toml("[sandbox]\nmetering = \"epoch\"\n[sandbox.limits]\nfuel = 7")
                .unwrap();
        assert_eq!(
            (config.sandbox.metering, config.sandbox.limits.fuel),
            (Metering::Epoch, 7),
            "metering sits beside the limits, not inside them"
        );
    }

    #[test]
    fn an_unknown_metering_is_refused_naming_the_key_and_both_values() {
        for value in ["\"cpu\"", "\"FUEL\"", "true"] {
            let text = format!("[sandbox]\nmetering = {value}");
            let error = Config::from_toml(&text).unwrap_err();
            assert!(
                error.contains("`metering` must be")
                    && error.contains("\"fuel\"")
                    && error.contains("\"epoch\""),
                "{text}: {error}"
            );
        }
        // Under [sandbox.limits] it is an unknown key: metering is an engine setting.
        let error = Config::from_toml("[sandbox.limits]\nmetering = \"epoch\"").unwrap_err();
        assert!(error.contains("unknown field `metering`"), "{error}");
    }

    #[test]
    fn the_test_only_seed_is_not_a_setting() {
        // The driver seeds member ids from the OS; a configured seed would do nothing.
        let error = Config::from_toml("[coordinator]\nseed = 7").unwrap_err();
        assert!(error.contains("unknown field `seed`"), "{error}");
    }
}
