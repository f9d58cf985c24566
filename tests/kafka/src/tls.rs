//! The test cluster's certificates, made at start with the `openssl` command (no crypto of
//! ours): a CA, a certificate for the brokers (valid for `127.0.0.1` and `localhost`) and a
//! client certificate each for `alice` and for `assignor-host` (the host under test, for
//! mutual TLS), RSA 2048, valid for 30 days.
//!
//! Kafka reads PEM directly (`ssl.keystore.type=PEM`: the private key and its certificate
//! chain in one file; KIP-651), and so do librdkafka, the Python clients and rustls, so
//! every file here is PEM.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Where the cluster's PEM files are.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tls {
    /// The CA certificate: what clients trust.
    pub ca: PathBuf,
    /// The brokers' key and certificate chain, in one file (Kafka's PEM keystore).
    pub broker_keystore: PathBuf,
    /// `alice`'s client certificate and its key, for mutual TLS.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// The host's client certificate (`User:CN=assignor-host,O=assignor-host tests`) and key,
    /// for a host that logs in to the SSL listener by mutual TLS.
    pub host_cert: PathBuf,
    pub host_key: PathBuf,
}

impl Tls {
    /// Makes a CA and the certificates it signs in `dir`.
    pub fn make(dir: &Path) -> Result<Tls> {
        fs::create_dir_all(dir)?;
        let file = |name: &str| dir.join(name);
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "30",
                "-subj",
                "/CN=assignor-host test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
        )?;
        signed(
            dir,
            "broker",
            "/CN=localhost",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        )?;
        signed(
            dir,
            "alice",
            "/O=assignor-host tests/CN=alice",
            "extendedKeyUsage=clientAuth\n",
        )?;
        signed(
            dir,
            "assignor-host",
            "/O=assignor-host tests/CN=assignor-host",
            "extendedKeyUsage=clientAuth\n",
        )?;
        let keystore = [
            fs::read_to_string(file("broker.key"))?,
            fs::read_to_string(file("broker.pem"))?,
            fs::read_to_string(file("ca.pem"))?,
        ]
        .concat();
        fs::write(file("broker-keystore.pem"), keystore)?;
        Ok(Tls {
            ca: file("ca.pem"),
            broker_keystore: file("broker-keystore.pem"),
            client_cert: file("alice.pem"),
            client_key: file("alice.key"),
            host_cert: file("assignor-host.pem"),
            host_key: file("assignor-host.key"),
        })
    }
}

impl Tls {
    /// One more certificate signed by this CA, next to the others: `<name>.pem` and
    /// `<name>.key` for `subject` with `extensions` (`openssl x509 -extfile` syntax), valid for
    /// `days` (0: it expires the second it is made, for tests of an expired certificate).
    /// Returns the certificate's and the key's paths.
    pub fn sign(
        &self,
        name: &str,
        subject: &str,
        extensions: &str,
        days: u32,
    ) -> Result<(PathBuf, PathBuf)> {
        let dir = self.ca.parent().context("the CA file's folder")?;
        signed_for(dir, name, subject, extensions, days)?;
        Ok((
            dir.join(format!("{name}.pem")),
            dir.join(format!("{name}.key")),
        ))
    }
}

/// A key `<name>.key` and a certificate `<name>.pem` for `subject`, signed by the CA, with
/// the X.509 extensions `extensions` (`openssl x509 -extfile` syntax), valid for 30 days.
fn signed(dir: &Path, name: &str, subject: &str, extensions: &str) -> Result<()> {
    signed_for(dir, name, subject, extensions, 30)
}

fn signed_for(dir: &Path, name: &str, subject: &str, extensions: &str, days: u32) -> Result<()> {
    let (key, csr, pem, ext) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.pem"),
        format!("{name}.ext"),
    );
    fs::write(dir.join(&ext), extensions)?;
    openssl(
        dir,
        &[
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", &key, "-out", &csr,
        ],
    )?;
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            &days.to_string(),
            "-extfile",
            &ext,
            "-out",
            &pem,
        ],
    )
}

fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .context("running `openssl` to make the test cluster's certificates (Debian: apt-get install openssl)")?;
    if !output.status.success() {
        bail!(
            "openssl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}
