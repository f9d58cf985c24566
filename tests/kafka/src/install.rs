//! Kafka's jars, resolved by Maven from `tests/kafka/pom.xml` into
//! `<target>/kafka/<version>/lib`, once per machine (the Maven repository is
//! `<target>/maven`, so a clean clone downloads into its own `target/` and nowhere else).
//!
//! The recipe is the script `tests/kafka/install` (tests/run also runs it, in the background
//! while the gates compile); this module checks the install's marker (the pom's text, so
//! changing the pom installs again), checks Java, and runs the script when the marker is
//! missing. The script takes a file lock, so test processes asking at once install once.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The Apache Kafka release the tests run (`kafka.version` in `tests/kafka/pom.xml`).
pub const KAFKA_VERSION: &str = "4.4.0";

/// The pom naming Kafka's artifacts.
pub fn pom() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("pom.xml")
}

/// The install script (`tests/kafka/install`).
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("install")
}

/// The workspace's target directory: `CARGO_TARGET_DIR` if set, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// The folder holding Kafka's jars (`KAFKA_LIBS` if set), installing them first if needed.
pub fn kafka_libs() -> Result<PathBuf> {
    if let Some(dir) = env::var_os("KAFKA_LIBS") {
        return Ok(PathBuf::from(dir));
    }
    let home = target_dir().join("kafka").join(KAFKA_VERSION);
    let lib = home.join("lib");
    let pom_text = fs::read_to_string(pom()).context("tests/kafka/pom.xml")?;
    let installed =
        || fs::read_to_string(home.join("installed-from.pom.xml")).is_ok_and(|t| t == pom_text);
    if installed() {
        return Ok(lib);
    }
    java_version()?;
    let output = Command::new(script())
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .with_context(|| format!("running {}", script().display()))?;
    if !output.status.success() {
        bail!(
            "{} could not install Apache Kafka {KAFKA_VERSION}:\n{}{}",
            script().display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    anyhow::ensure!(
        installed(),
        "{} finished but left no install of {}",
        script().display(),
        pom().display()
    );
    Ok(lib)
}

/// Kafka 4 brokers need Java 17 or later.
fn java_version() -> Result<()> {
    let output = Command::new("java")
        .arg("-version")
        .output()
        .context("running `java`: Kafka needs a Java 17+ runtime (Debian: apt-get install openjdk-17-jre-headless)")?;
    let text = String::from_utf8_lossy(&output.stderr);
    let major = text
        .split('"')
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse::<u32>().ok());
    match major {
        Some(major) if major >= 17 => Ok(()),
        _ => bail!("Kafka {KAFKA_VERSION} needs Java 17 or later; `java -version` says: {text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pom_names_the_version_the_harness_runs() {
        let pom = fs::read_to_string(pom()).unwrap();
        assert!(
            pom.contains(&format!("<kafka.version>{KAFKA_VERSION}</kafka.version>")),
            "tests/kafka/pom.xml's kafka.version differs from KAFKA_VERSION ({KAFKA_VERSION})"
        );
    }
}
