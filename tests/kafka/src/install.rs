//! Kafka's jars, resolved by Maven from `tests/kafka/pom.xml` into
//! `<target>/kafka/<version>/lib`, once per machine (the Maven repository is
//! `<target>/maven`, so a clean clone downloads into its own `target/` and nowhere else).
//!
//! Several test processes may ask at once (the Rust test binaries, the Python suite's
//! workers): the first takes a file lock and installs, the others wait on the lock and find
//! the install done. The pom's text is the install's marker, so changing the pom (another
//! Kafka version) installs again.

use std::env;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The Apache Kafka release the tests run (`kafka.version` in `tests/kafka/pom.xml`).
pub const KAFKA_VERSION: &str = "4.4.0";

/// The pom naming Kafka's artifacts.
pub fn pom() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("pom.xml")
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
    let marker = home.join("installed-from.pom.xml");
    let pom_text = fs::read_to_string(pom()).context("tests/kafka/pom.xml")?;
    if fs::read_to_string(&marker).is_ok_and(|t| t == pom_text) {
        return Ok(lib);
    }
    fs::create_dir_all(&home)?;
    let lock = File::create(home.join(".lock"))?;
    lock.lock().context("locking the Kafka install")?;
    if fs::read_to_string(&marker).is_ok_and(|t| t == pom_text) {
        return Ok(lib);
    }
    java_version()?;
    let _ = fs::remove_dir_all(&lib);
    let repository = target_dir().join("maven");
    let output = Command::new("mvn")
        .arg("-B")
        .arg("-q")
        .arg("-f")
        .arg(pom())
        .arg(format!("-Dmaven.repo.local={}", repository.display()))
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", lib.display()))
        .arg("-DincludeScope=runtime")
        .output()
        .context("running `mvn` (Apache Maven) to fetch Kafka's jars; install Maven (Debian: apt-get install maven)")?;
    if !output.status.success() {
        bail!(
            "mvn could not resolve Apache Kafka {KAFKA_VERSION} from {}:\n{}{}",
            pom().display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let broker_jar = lib.join(format!("kafka_2.13-{KAFKA_VERSION}.jar"));
    anyhow::ensure!(
        broker_jar.is_file(),
        "mvn finished but {} is missing",
        broker_jar.display()
    );
    fs::write(&marker, pom_text)?;
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
