//! Standalone's users (`kafka.authentication = "local"`): SCRAM credentials, as Kafka keeps
//! them (`ScramCredential`: salt, StoredKey, ServerKey, iterations; never the password), one
//! per user and mechanism, in memory for the listener and in the store across restarts.
//!
//! A credential is derived the way RFC 5802 and Kafka's `ScramFormatter` do it: SaltedPassword
//! = PBKDF2-HMAC(password, salt, iterations), ClientKey = HMAC(SaltedPassword, "Client Key"),
//! StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key"); the primitives are
//! RustCrypto's (`pbkdf2`, `hmac`, `sha2`), the salt the operating system's (`getrandom`), and a
//! PLAIN password is checked by deriving its StoredKey under the stored salt and comparing in
//! constant time (`subtle`). The SCRAM exchange itself is rsasl's (`kafka::login`).
//!
//! Its own part, below `kafka` (whose logins read it) and `admin` (which changes it), and above
//! `store`, which keeps its rows as bytes and knows nothing of credentials.

use std::collections::BTreeMap;
use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

use crate::store::{Store, StoreError};

/// Kafka's bounds on SCRAM iterations (`ScramMechanism.minIterations` / `maxIterations`).
pub const MIN_ITERATIONS: u32 = 4096;
pub const MAX_ITERATIONS: u32 = 16384;
/// Random bytes in a salt (RFC 5802 sets no length; 32 is SHA-256's output, ample for both).
const SALT_BYTES: usize = 32;

/// A SCRAM mechanism a user can hold a credential for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ScramMechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
}

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::ScramSha256, ScramMechanism::ScramSha512];

    /// The mechanism's name on the wire (SaslHandshake) and in Kafka's tools.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::ScramSha256 => "SCRAM-SHA-256",
            ScramMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    pub fn parse(name: &str) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// What the host keeps of a password: enough to check a SCRAM proof or a PLAIN password,
/// nothing that logs in elsewhere. Its `Debug` shows no key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    #[serde(with = "b64")]
    pub salt: Vec<u8>,
    #[serde(with = "b64")]
    pub stored_key: Vec<u8>,
    #[serde(with = "b64")]
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// A user or credential the host cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UserError {
    #[error(
        "user name {0:?} is not allowed: use 1 to 255 characters without ',' or '=' (SCRAM \
         escapes them, and Kafka's principals would then differ between mechanisms) and without \
         control characters"
    )]
    BadName(String),
    #[error("iterations {0} is outside Kafka's range {MIN_ITERATIONS}..={MAX_ITERATIONS}")]
    BadIterations(u32),
    #[error("the password is empty")]
    EmptyPassword,
    #[error("cannot draw a salt from the operating system: {0}")]
    Random(String),
    #[error("{0}")]
    Store(String),
}

impl From<StoreError> for UserError {
    fn from(e: StoreError) -> UserError {
        UserError::Store(e.to_string())
    }
}

impl Credential {
    /// A new credential for `password`, under a fresh random salt.
    pub fn new(
        mechanism: ScramMechanism,
        password: &str,
        iterations: u32,
    ) -> Result<Credential, UserError> {
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(UserError::BadIterations(iterations));
        }
        if password.is_empty() {
            return Err(UserError::EmptyPassword);
        }
        let mut salt = vec![0; SALT_BYTES];
        getrandom::fill(&mut salt).map_err(|e| UserError::Random(e.to_string()))?;
        let (stored_key, server_key) = derive(mechanism, password.as_bytes(), &salt, iterations);
        Ok(Credential {
            salt,
            stored_key,
            server_key,
            iterations,
        })
    }

    /// Whether `password` is the one this credential was made from (PLAIN), in constant time.
    pub fn verifies(&self, mechanism: ScramMechanism, password: &str) -> bool {
        let (stored_key, _) = derive(mechanism, password.as_bytes(), &self.salt, self.iterations);
        bool::from(stored_key.ct_eq(&self.stored_key))
    }
}

/// RFC 5802's StoredKey and ServerKey for `password` under `salt`.
fn derive(
    mechanism: ScramMechanism,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
) -> (Vec<u8>, Vec<u8>) {
    // One body for both digests (a macro: digest 0.11's bounds for a generic HMAC are long).
    macro_rules! keys {
        ($digest:ty) => {{
            let mut salted = vec![0; <$digest as Digest>::output_size()];
            pbkdf2::pbkdf2::<Hmac<$digest>>(password, salt, iterations, &mut salted)
                .expect("HMAC takes a key of any length");
            let key = |label: &[u8]| {
                let mut mac = <Hmac<$digest> as KeyInit>::new_from_slice(&salted)
                    .expect("HMAC takes a key of any length");
                mac.update(label);
                mac.finalize().into_bytes().to_vec()
            };
            let client_key = key(b"Client Key");
            (<$digest>::digest(&client_key).to_vec(), key(b"Server Key"))
        }};
    }
    match mechanism {
        ScramMechanism::ScramSha256 => keys!(Sha256),
        ScramMechanism::ScramSha512 => keys!(Sha512),
    }
}

/// A user as the admin API lists it: its name and which mechanisms it has a credential for,
/// with their iterations (Kafka's `DescribeUserScramCredentials` shows the same).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserView {
    pub name: String,
    pub credentials: Vec<CredentialView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialView {
    pub mechanism: ScramMechanism,
    pub iterations: u32,
}

/// Every user's credentials, shared by the listener (each login reads them) and the admin API
/// (which changes them, the store first).
pub struct Users {
    store: Option<Store>,
    users: parking_lot::RwLock<BTreeMap<String, BTreeMap<ScramMechanism, Credential>>>,
}

impl Users {
    /// The users kept in `store` (`None`: in memory only, for tests).
    pub fn open(store: Option<Store>) -> Result<Arc<Users>, StoreError> {
        let mut users: BTreeMap<String, BTreeMap<_, _>> = BTreeMap::new();
        if let Some(store) = &store {
            for ((name, mechanism), row) in store.load_credentials()? {
                let corrupt = |why: String| {
                    StoreError::Storage(format!(
                        "credential row ({name:?}, {mechanism:?}) is corrupt: {why}"
                    ))
                };
                let parsed = ScramMechanism::parse(&mechanism)
                    .ok_or_else(|| corrupt("unknown mechanism".into()))?;
                let credential: Credential =
                    serde_json::from_slice(&row).map_err(|e| corrupt(e.to_string()))?;
                users.entry(name).or_default().insert(parsed, credential);
            }
        }
        Ok(Arc::new(Users {
            store,
            users: parking_lot::RwLock::new(users),
        }))
    }

    /// The credential `name` holds for `mechanism`.
    pub fn credential(&self, name: &str, mechanism: ScramMechanism) -> Option<Credential> {
        self.users.read().get(name)?.get(&mechanism).cloned()
    }

    /// Checks a PLAIN login: the password against any of the user's credentials (Kafka's PLAIN
    /// users are a separate JAAS list; here PLAIN checks the SCRAM credential, so one
    /// password serves both).
    pub fn verify_plain(&self, name: &str, password: &str) -> bool {
        let credentials = self.users.read().get(name).cloned().unwrap_or_default();
        if credentials.is_empty() {
            // As long as a known user's check, so the time does not tell who exists.
            let _ = derive(
                ScramMechanism::ScramSha512,
                password.as_bytes(),
                &[0; SALT_BYTES],
                MIN_ITERATIONS,
            );
            return false;
        }
        credentials
            .iter()
            .any(|(mechanism, credential)| credential.verifies(*mechanism, password))
    }

    /// Adds `name`, or changes its password, for `mechanism`. Returns whether it was new.
    pub fn set(
        &self,
        name: &str,
        mechanism: ScramMechanism,
        password: &str,
        iterations: u32,
    ) -> Result<bool, UserError> {
        check_name(name)?;
        let credential = Credential::new(mechanism, password, iterations)?;
        if let Some(store) = &self.store {
            let row =
                serde_json::to_vec(&credential).map_err(|e| StoreError::Storage(e.to_string()))?;
            store.put_credential(name, mechanism.name(), &row)?;
        }
        let mut users = self.users.write();
        let created = users
            .entry(name.to_owned())
            .or_default()
            .insert(mechanism, credential)
            .is_none();
        Ok(created)
    }

    /// Removes `name`'s credential for `mechanism`, or all of them (`None`). Returns what was
    /// removed (empty: the user had none).
    pub fn remove(
        &self,
        name: &str,
        mechanism: Option<ScramMechanism>,
    ) -> Result<Vec<ScramMechanism>, UserError> {
        let held: Vec<ScramMechanism> = self
            .users
            .read()
            .get(name)
            .map(|c| c.keys().copied().collect())
            .unwrap_or_default();
        let gone: Vec<ScramMechanism> = held
            .into_iter()
            .filter(|m| mechanism.is_none_or(|wanted| wanted == *m))
            .collect();
        if gone.is_empty() {
            return Ok(gone);
        }
        if let Some(store) = &self.store {
            let names: Vec<&str> = gone.iter().map(|m| m.name()).collect();
            store.delete_credentials(name, &names)?;
        }
        let mut users = self.users.write();
        if let Some(credentials) = users.get_mut(name) {
            for m in &gone {
                credentials.remove(m);
            }
            if credentials.is_empty() {
                users.remove(name);
            }
        }
        Ok(gone)
    }

    /// Every user, sorted by name.
    pub fn list(&self) -> Vec<UserView> {
        self.users
            .read()
            .iter()
            .map(|(name, credentials)| UserView {
                name: name.clone(),
                credentials: credentials
                    .iter()
                    .map(|(mechanism, c)| CredentialView {
                        mechanism: *mechanism,
                        iterations: c.iterations,
                    })
                    .collect(),
            })
            .collect()
    }
}

fn check_name(name: &str) -> Result<(), UserError> {
    let fine = !name.is_empty()
        && name.chars().count() <= 255
        && !name.chars().any(|c| c == ',' || c == '=' || c.is_control());
    if fine {
        Ok(())
    } else {
        Err(UserError::BadName(name.to_owned()))
    }
}

/// Key bytes as base64 in the store's JSON rows.
mod b64 {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    /// RFC 7677's example (SCRAM-SHA-256, user "user", password "pencil", salt
    /// `W22ZaJ0SNY7soEsUEjb6gQ==`, 4096 iterations): the ServerKey and StoredKey it implies,
    /// checked through the proof and signature the RFC prints.
    #[test]
    fn keys_match_rfc_7677() {
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let (stored_key, server_key) = derive(ScramMechanism::ScramSha256, b"pencil", &salt, 4096);
        let auth_message = "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&server_key).unwrap();
        mac.update(auth_message.as_bytes());
        let server_signature = STANDARD.encode(mac.finalize().into_bytes());
        assert_eq!(
            server_signature,
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        // ClientProof = ClientKey XOR ClientSignature; H(ClientKey) must be the StoredKey.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&stored_key).unwrap();
        mac.update(auth_message.as_bytes());
        let signature = mac.finalize().into_bytes();
        let proof = STANDARD
            .decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .unwrap();
        let client_key: Vec<u8> = proof.iter().zip(signature).map(|(p, s)| p ^ s).collect();
        assert_eq!(Sha256::digest(&client_key).to_vec(), stored_key);
    }

    #[test]
    fn a_plain_password_is_checked_against_the_stored_key() {
        let users = Users::open(None).unwrap();
        assert!(
            users
                .set("alice", ScramMechanism::ScramSha512, "s3cret", 4096)
                .unwrap()
        );
        assert!(users.verify_plain("alice", "s3cret"));
        assert!(!users.verify_plain("alice", "s3cret!"));
        assert!(!users.verify_plain("bob", "s3cret"));
        // A second credential for another mechanism, with another password: each checks.
        assert!(
            users
                .set("alice", ScramMechanism::ScramSha256, "other", 4096)
                .unwrap()
        );
        assert!(users.verify_plain("alice", "other"));
        assert!(users.verify_plain("alice", "s3cret"));
    }

    #[test]
    fn salts_differ_and_no_key_is_printed() {
        let a = Credential::new(ScramMechanism::ScramSha512, "pw", 4096).unwrap();
        let b = Credential::new(ScramMechanism::ScramSha512, "pw", 4096).unwrap();
        assert_ne!(a.salt, b.salt);
        assert_ne!(a.stored_key, b.stored_key);
        assert_eq!(a.stored_key.len(), 64);
        let printed = format!("{a:?}");
        assert!(
            !printed.contains(&format!("{:?}", a.stored_key)),
            "{printed}"
        );
        assert_eq!(printed, "Credential { iterations: 4096, .. }");
    }

    #[test]
    fn bad_names_iterations_and_passwords_are_refused() {
        let users = Users::open(None).unwrap();
        for name in ["", "a,b", "a=b", "tab\there"] {
            assert_eq!(
                users.set(name, ScramMechanism::ScramSha256, "pw", 4096),
                Err(UserError::BadName(name.to_owned()))
            );
        }
        assert_eq!(
            users.set("a", ScramMechanism::ScramSha256, "pw", 4095),
            Err(UserError::BadIterations(4095))
        );
        assert_eq!(
            users.set("a", ScramMechanism::ScramSha256, "pw", 16385),
            Err(UserError::BadIterations(16385))
        );
        assert_eq!(
            users.set("a", ScramMechanism::ScramSha256, "", 4096),
            Err(UserError::EmptyPassword)
        );
        assert!(users.list().is_empty());
    }

    #[test]
    fn users_survive_reopening_the_store_and_removal_is_per_mechanism() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            let users = Users::open(Some(store)).unwrap();
            users
                .set("alice", ScramMechanism::ScramSha512, "pw", 8192)
                .unwrap();
            users
                .set("alice", ScramMechanism::ScramSha256, "pw", 4096)
                .unwrap();
            users
                .set("bob", ScramMechanism::ScramSha256, "pw", 4096)
                .unwrap();
            assert_eq!(
                users
                    .remove("alice", Some(ScramMechanism::ScramSha256))
                    .unwrap(),
                vec![ScramMechanism::ScramSha256]
            );
            assert_eq!(users.remove("carol", None).unwrap(), vec![]);
        }
        let users = Users::open(Some(Store::open(dir.path()).unwrap())).unwrap();
        let listed = users.list();
        assert_eq!(
            listed,
            vec![
                UserView {
                    name: "alice".into(),
                    credentials: vec![CredentialView {
                        mechanism: ScramMechanism::ScramSha512,
                        iterations: 8192
                    }],
                },
                UserView {
                    name: "bob".into(),
                    credentials: vec![CredentialView {
                        mechanism: ScramMechanism::ScramSha256,
                        iterations: 4096
                    }],
                },
            ]
        );
        assert!(users.verify_plain("alice", "pw"));
        assert_eq!(
            users.remove("bob", None).unwrap(),
            vec![ScramMechanism::ScramSha256]
        );
        assert!(
            users
                .credential("bob", ScramMechanism::ScramSha256)
                .is_none()
        );
    }
}
