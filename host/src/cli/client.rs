//! The admin API from the CLI's side: one HTTP call per command, the bearer token attached,
//! and the server's `{"error": {...}}` answers turned into [`CliError::Api`] with the server's
//! own message, so the CLI prints exactly what the host said.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::CliError;

/// How long one admin call may take: an upload compiles the module and runs a smoke call,
/// which takes seconds for a large module on a busy host.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A client of one host's admin API.
#[derive(Debug, Clone)]
pub struct AdminClient {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// A request body.
pub enum Body {
    None,
    Json(Value),
    Wasm(Vec<u8>),
}

impl AdminClient {
    /// `base` is the API's URL (`http://127.0.0.1:9644`, `https://...`); a trailing `/` is
    /// ignored. An https API's certificate is checked against `ca` (the system's CA bundle
    /// when `None`).
    pub fn new(
        base: &str,
        token: Option<String>,
        ca: Option<&std::path::Path>,
    ) -> Result<AdminClient, CliError> {
        let http = crate::tls::http_client(ca, "--admin-ca")
            .map_err(CliError::Usage)?
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| CliError::Usage(format!("cannot create the HTTP client: {e}")))?;
        Ok(AdminClient {
            base: base.trim_end_matches('/').to_owned(),
            token: token.filter(|t| !t.is_empty()),
            http,
        })
    }

    /// The API's URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    pub async fn get(&self, path: &str) -> Result<Value, CliError> {
        self.call(Method::GET, path, Body::None)
            .await
            .map(|(_, v)| v)
    }

    /// Sends one request; the answer's status and JSON body, or the server's error.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Body,
    ) -> Result<(StatusCode, Value), CliError> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method, &url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request = match body {
            Body::None => request,
            Body::Json(value) => request.json(&value),
            Body::Wasm(bytes) => request
                .header(reqwest::header::CONTENT_TYPE, "application/wasm")
                .body(bytes),
        };
        let response = request.send().await.map_err(|e| CliError::Unreachable {
            url: self.base.clone(),
            message: error_chain(&e),
        })?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| CliError::Unreachable {
            url: self.base.clone(),
            message: error_chain(&e),
        })?;
        let value: Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).trim().to_owned()));
        if status.is_success() {
            return Ok((status, value));
        }
        let error = &value["error"];
        Err(CliError::Api {
            status: status.as_u16(),
            code: error["code"].as_str().unwrap_or("unknown").to_owned(),
            message: error["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("the host answered {status}: {value}")),
            check: error["check"].as_str().map(str::to_owned),
            detail: error.get("detail").cloned(),
        })
    }
}

/// The root cause of `e` ("Connection refused (os error 111)"): what the operator can act on,
/// rather than reqwest's "error sending request for url (...)" wrapper.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut root = e;
    while let Some(inner) = root.source() {
        root = inner;
    }
    root.to_string()
}

/// A path segment (module, group or topic name) escaped for a URL.
pub fn segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
