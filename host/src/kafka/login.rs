//! Standalone's own authentication (`kafka.authentication = "local"`): the server side of a
//! client's SASL exchange, against [`Users`]. The exchanges are rsasl's (SCRAM-SHA-256 and -512
//! by RFC 5802, PLAIN by RFC 4616); this file only looks credentials up for them and reads
//! their verdict, so no mechanism is written by hand.
//!
//! As in Kafka: SCRAM is offered on every listener, PLAIN only where the connection is
//! encrypted (the password crosses the wire; Kafka leaves that choice to the operator's
//! `sasl.enabled.mechanisms`, the host makes it for them); a failed exchange is answered
//! SASL_AUTHENTICATION_FAILED with Kafka's own message, which names neither which part was
//! wrong nor whether the user exists (rsasl's SCRAM answers an unknown user with a made-up
//! salt, as Kafka's does).

use std::sync::Arc;
use std::time::Duration;

use rsasl::callback::{Context, Request, SessionCallback, SessionData};
use rsasl::mechanisms::scram::properties::ScramStoredPassword;
use rsasl::prelude::{Mechname, SASLConfig, SASLServer, SessionError, State};
use rsasl::property::{AuthId, AuthzId, Password};
use rsasl::validate::{Validate, Validation, ValidationError};

use crate::users::{ScramMechanism, Users};

/// How the host authenticates its clients itself; one per listener set.
pub struct Login {
    users: Arc<Users>,
    config: Arc<SASLConfig>,
    /// Whether PLAIN is offered (the Kafka ports speak TLS).
    plain: bool,
    /// Kafka's `connections.max.reauth.ms`: the session lifetime told to each client, after
    /// which a request closes the connection unless it re-authenticated; zero: no limit.
    pub session_lifetime: Duration,
}

/// One exchange under way on a connection.
pub struct Exchange {
    session: rsasl::prelude::Session<Verdict>,
    mechanism: &'static str,
    /// Client messages stepped so far (SCRAM: the first is client-first, then client-final).
    steps: u32,
}

/// What one SaslAuthenticate step came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answer these bytes; the exchange goes on.
    Continue(Vec<u8>),
    /// The client proved who it is: answer these (last) bytes.
    Authenticated { user: String, bytes: Vec<u8> },
    /// Refused: Kafka's message for the answer (then the connection closes).
    Failed(String),
}

impl Login {
    pub fn new(users: Arc<Users>, plain: bool, session_lifetime: Duration) -> Login {
        let callback = Lookup {
            users: users.clone(),
        };
        let config = SASLConfig::builder()
            .with_defaults()
            .with_callback(callback)
            .expect("rsasl's default mechanisms with a callback make a server configuration");
        Login {
            users,
            config,
            plain,
            session_lifetime,
        }
    }

    /// The users the logins are checked against.
    pub fn users(&self) -> &Arc<Users> {
        &self.users
    }

    /// The mechanisms offered, as SaslHandshake lists them.
    pub fn mechanisms(&self) -> Vec<&'static str> {
        let mut offered: Vec<&'static str> = ScramMechanism::ALL.iter().map(|m| m.name()).collect();
        if self.plain {
            offered.push("PLAIN");
        }
        offered
    }

    /// Starts an exchange of `mechanism`; `None` when it is not offered.
    pub fn start(&self, mechanism: &str) -> Option<Exchange> {
        let name = *self.mechanisms().iter().find(|m| **m == mechanism)?;
        let session = SASLServer::<Verdict>::new(self.config.clone())
            .start_suggested(Mechname::parse(name.as_bytes()).ok()?)
            .ok()?;
        Some(Exchange {
            session,
            mechanism: name,
            steps: 0,
        })
    }
}

impl Exchange {
    pub fn mechanism(&self) -> &'static str {
        self.mechanism
    }

    /// One client message of the exchange.
    pub fn step(&mut self, input: &[u8]) -> Outcome {
        let mut out = Vec::new();
        let mechanism = self.mechanism;
        let failed = || {
            Outcome::Failed(format!(
                "Authentication failed during authentication due to invalid credentials with \
                 SASL mechanism {mechanism}"
            ))
        };
        // rsasl 2.3.1's SCRAM parser slices attributes without checking their length (`n,,n`
        // or an `a` shorter than `a=` panic in `ClientFirstMessage::parse`, an extension of
        // one byte in the client-final): such a message is refused here before it reaches
        // rsasl, and a panic that still came would refuse the login, not end the task.
        if self.mechanism.starts_with("SCRAM-") && !scram_attributes_well_formed(input, self.steps)
        {
            return failed();
        }
        self.steps += 1;
        let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.session.step(Some(input), &mut out)
        }));
        let Ok(stepped) = stepped else {
            return failed();
        };
        match stepped {
            Ok(State::Running) => Outcome::Continue(out),
            Ok(State::Finished(_)) => match self.session.validation() {
                Some(Ok(user)) => Outcome::Authenticated { user, bytes: out },
                // An invalid SCRAM proof finishes the exchange with `e=invalid-proof` written
                // and no verdict; Kafka answers it with the error alone.
                Some(Err(())) | None => failed(),
            },
            Err(SessionError::MechanismDone) => failed(),
            Err(_) => failed(),
        }
    }
}

/// Whether a SCRAM client message has the shape RFC 5802 gives it, as far as rsasl's parser
/// assumes without checking: the client-first's GS2 header (`n`, `y` or `p=NAME`, then empty
/// or `a=NAME`) and then every attribute `x=...`; in the client-final, every attribute.
fn scram_attributes_well_formed(input: &[u8], step: u32) -> bool {
    let attribute = |part: &[u8]| part.len() >= 2 && part[1] == b'=';
    let mut parts = input.split(|b| *b == b',');
    if step == 0 {
        let flag_fine = parts.next().is_some_and(|flag| {
            flag == b"n" || flag == b"y" || (flag.starts_with(b"p=") && flag.len() > 2)
        });
        let authzid_fine = parts
            .next()
            .is_some_and(|a| a.is_empty() || (a.starts_with(b"a=") && a.len() > 2));
        if !(flag_fine && authzid_fine) {
            return false;
        }
    }
    let rest: Vec<&[u8]> = parts.collect();
    rest.len() >= 2 && rest.iter().all(|part| attribute(part))
}

/// The verdict rsasl carries out of the exchange: the authenticated user, or a refusal.
struct Verdict;

impl Validation for Verdict {
    type Value = Result<String, ()>;
}

/// rsasl's callback: SCRAM's stored credential by user and mechanism, PLAIN's password check.
struct Lookup {
    users: Arc<Users>,
}

impl SessionCallback for Lookup {
    fn callback(
        &self,
        session_data: &SessionData,
        context: &Context<'_>,
        request: &mut Request<'_>,
    ) -> Result<(), SessionError> {
        let mechanism = ScramMechanism::parse(session_data.mechanism().mechanism.as_str());
        if let (Some(mechanism), Some(user)) = (mechanism, context.get_ref::<AuthId>())
            && let Some(c) = self.users.credential(user, mechanism)
        {
            request.satisfy::<ScramStoredPassword<'_>>(&ScramStoredPassword::new(
                c.iterations,
                &c.salt,
                &c.stored_key,
                &c.server_key,
            ))?;
        }
        Ok(())
    }

    fn validate(
        &self,
        session_data: &SessionData,
        context: &Context<'_>,
        validate: &mut Validate<'_>,
    ) -> Result<(), ValidationError> {
        let plain = session_data.mechanism().mechanism.as_str() == "PLAIN";
        let user = context.get_ref::<AuthId>();
        // Kafka refuses an authorization id other than the user's own (no impersonation).
        let authzid = context.get_ref::<AuthzId>().filter(|z| !z.is_empty());
        let verdict = match user {
            Some(user) if authzid.is_some_and(|z| z != user) => Err(()),
            Some(user) if plain => {
                let password = context.get_ref::<Password>().unwrap_or_default();
                match std::str::from_utf8(password) {
                    Ok(password) if self.users.verify_plain(user, password) => Ok(user.to_owned()),
                    _ => Err(()),
                }
            }
            // SCRAM validates only after the client's proof matched the stored key.
            Some(user) => Ok(user.to_owned()),
            None => Err(()),
        };
        validate.with::<Verdict, _>(|| Ok(verdict))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsasl::prelude::SASLClient;

    fn login(plain: bool) -> Login {
        let users = Users::open(None).unwrap();
        users
            .set("alice", ScramMechanism::ScramSha512, "alice-secret", 4096)
            .unwrap();
        users
            .set("bob", ScramMechanism::ScramSha256, "bob-secret", 4096)
            .unwrap();
        Login::new(users, plain, Duration::ZERO)
    }

    /// Runs rsasl's client against the host's server: what the host answers at the end.
    fn exchange(login: &Login, mechanism: &str, user: &str, password: &str) -> Outcome {
        let config =
            SASLConfig::with_credentials(None, user.to_owned(), password.to_owned()).unwrap();
        let mechname = Mechname::parse(mechanism.as_bytes()).unwrap();
        let mut client = SASLClient::new(config)
            .start_suggested(&[mechname])
            .unwrap();
        let mut server = login.start(mechanism).expect("offered");
        let mut to_server = Vec::new();
        client.step(None, &mut to_server).unwrap();
        loop {
            match server.step(&to_server) {
                Outcome::Continue(bytes) => {
                    to_server.clear();
                    client.step(Some(&bytes), &mut to_server).unwrap();
                }
                done @ Outcome::Authenticated { .. } => {
                    if let Outcome::Authenticated { bytes, .. } = &done
                        && !bytes.is_empty()
                    {
                        // The client checks the server's signature (SCRAM's server-final).
                        client.step(Some(bytes), &mut Vec::new()).unwrap();
                    }
                    return done;
                }
                failed => return failed,
            }
        }
    }

    fn user(outcome: Outcome) -> Option<String> {
        match outcome {
            Outcome::Authenticated { user, .. } => Some(user),
            _ => None,
        }
    }

    #[test]
    fn scram_logs_in_with_the_right_password_for_the_mechanism_held() {
        let login = login(false);
        assert_eq!(
            user(exchange(&login, "SCRAM-SHA-512", "alice", "alice-secret")),
            Some("alice".into())
        );
        assert_eq!(
            user(exchange(&login, "SCRAM-SHA-256", "bob", "bob-secret")),
            Some("bob".into())
        );
    }

    #[test]
    fn scram_refuses_a_wrong_password_an_unknown_user_and_a_mechanism_not_held() {
        let login = login(false);
        let refused = "Authentication failed during authentication due to invalid credentials \
                       with SASL mechanism SCRAM-SHA-512";
        assert_eq!(
            exchange(&login, "SCRAM-SHA-512", "alice", "wrong"),
            Outcome::Failed(refused.into())
        );
        assert_eq!(
            exchange(&login, "SCRAM-SHA-512", "nobody", "alice-secret"),
            Outcome::Failed(refused.into())
        );
        // bob holds a SCRAM-SHA-256 credential only.
        assert_eq!(
            exchange(&login, "SCRAM-SHA-512", "bob", "bob-secret"),
            Outcome::Failed(refused.into())
        );
    }

    #[test]
    fn plain_is_offered_over_tls_only_and_checks_the_password() {
        assert_eq!(
            login(false).mechanisms(),
            vec!["SCRAM-SHA-256", "SCRAM-SHA-512"]
        );
        assert!(login(false).start("PLAIN").is_none());
        let login = login(true);
        assert_eq!(
            login.mechanisms(),
            vec!["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]
        );
        assert_eq!(
            user(exchange(&login, "PLAIN", "alice", "alice-secret")),
            Some("alice".into())
        );
        assert!(matches!(
            exchange(&login, "PLAIN", "alice", "bob-secret"),
            Outcome::Failed(_)
        ));
        assert!(login.start("GSSAPI").is_none());
    }

    #[test]
    fn plain_refuses_acting_as_another_user() {
        let login = login(true);
        let mut server = login.start("PLAIN").unwrap();
        // authzid "bob", authcid "alice" with alice's password.
        assert!(matches!(
            server.step(b"bob\0alice\0alice-secret"),
            Outcome::Failed(_)
        ));
        let mut server = login.start("PLAIN").unwrap();
        assert_eq!(
            user(server.step(b"alice\0alice\0alice-secret")),
            Some("alice".into())
        );
    }

    /// The messages that panicked rsasl 2.3.1's parser (found by the test below).
    #[test]
    fn malformed_scram_messages_are_refused_before_rsasl() {
        let login = login(false);
        for first in [
            &b"n,,"[..],
            b"n,,n",
            b"n,x,n=alice,r=abc",
            b"n,,n=alice,r",
            b"q,,n=alice,r=abc",
        ] {
            let mut server = login.start("SCRAM-SHA-512").unwrap();
            assert!(
                matches!(server.step(first), Outcome::Failed(_)),
                "{first:?}"
            );
        }
        // A client-final with a one-byte attribute, after a good client-first.
        let mut server = login.start("SCRAM-SHA-512").unwrap();
        assert!(matches!(
            server.step(b"n,,n=alice,r=abcdefgh"),
            Outcome::Continue(_)
        ));
        assert!(matches!(
            server.step(b"c=biws,x,p=AAAA"),
            Outcome::Failed(_)
        ));
        assert!(scram_attributes_well_formed(b"n,,n=alice,r=abc", 0));
        assert!(scram_attributes_well_formed(b"n,a=alice,n=alice,r=abc", 0));
        assert!(scram_attributes_well_formed(b"c=biws,r=abc,p=xyz", 1));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any client-first, then any client-final, made of SCRAM's own characters (where
        /// rsasl's parser had its panics) or of any bytes: an outcome, never a panic, and never
        /// a login.
        #[test]
        fn no_message_panics_or_logs_in(
            first in proptest::string::string_regex("[nyp=a,r=xA-Z0-9]{0,24}").unwrap(),
            last in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            mechanism in proptest::sample::select(vec!["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]),
        ) {
            static LOGIN: std::sync::LazyLock<Login> = std::sync::LazyLock::new(|| login(true));
            let mut server = LOGIN.start(mechanism).unwrap();
            for input in [first.as_bytes(), &last[..]] {
                match server.step(input) {
                    Outcome::Continue(_) => {}
                    Outcome::Authenticated { user, .. } => {
                        proptest::prop_assert!(false, "{mechanism} logged {user} in from {first:?} {last:?}");
                    }
                    Outcome::Failed(_) => break,
                }
            }
        }
    }

    #[test]
    fn garbage_is_a_refusal_not_a_panic() {
        let login = login(true);
        for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"] {
            for input in [&b""[..], b"\xff\xfe", b"n,,", b"p=tls-unique,,n=alice,r=x"] {
                let mut server = login.start(mechanism).unwrap();
                assert!(
                    matches!(server.step(input), Outcome::Failed(_)),
                    "{mechanism} {input:?}"
                );
            }
        }
    }
}
