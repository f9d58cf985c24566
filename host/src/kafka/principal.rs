//! A client certificate's principal, as Kafka names it: `User:` and the certificate's subject in
//! RFC 2253 form (most specific first, `CN=alice,O=Example`; Java's
//! `X500Principal.getName()`), rewritten by `kafka.ssl_principal_mapping_rules`, Kafka's
//! `ssl.principal.mapping.rules` with Kafka's syntax (`SslPrincipalMapper`):
//!
//! ```text
//! RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]*).*$/$1/, DEFAULT
//! ```
//!
//! Rules are tried in order; a rule applies when its pattern matches the whole name, which then
//! becomes the replacement (`$1` for a group), lower- or upper-cased with `/L` or `/U`;
//! `DEFAULT` keeps the name. A name no rule matches is refused, as Kafka refuses the
//! connection. Standalone decides its ACLs for this principal when the client did not log in
//! by SASL (a SASL login names the principal on a SASL_SSL connection, as in Kafka).

use regex::Regex;

/// Kafka's `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Rewrite {
        pattern: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

impl PrincipalMapper {
    /// Parses the rules; `Err` names the rule that cannot be read.
    pub fn parse(rules: &str) -> Result<PrincipalMapper, String> {
        let mut parsed = Vec::new();
        let mut rest = rules.trim();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("DEFAULT") {
                parsed.push(Rule::Default);
                rest = after;
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                let (pattern, after) = until_slash(after)
                    .ok_or_else(|| format!("rule {rest:?} has no '/' after its pattern"))?;
                let (replacement, after) = until_slash(after)
                    .ok_or_else(|| format!("rule {rest:?} has no '/' after its replacement"))?;
                let (case, after) = match after.chars().next() {
                    Some('L') => (Case::Lower, &after[1..]),
                    Some('U') => (Case::Upper, &after[1..]),
                    _ => (Case::Keep, after),
                };
                // Kafka matches the whole name (`Matcher.matches`).
                let pattern = Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("rule pattern {pattern:?}: {e}"))?;
                parsed.push(Rule::Rewrite {
                    pattern,
                    replacement: java_replacement(&replacement),
                    case,
                });
                rest = after;
            } else {
                return Err(format!(
                    "cannot read {rest:?}: each rule is RULE:pattern/replacement/[LU] or DEFAULT"
                ));
            }
            rest = rest.trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
        }
        if parsed.is_empty() {
            parsed.push(Rule::Default);
        }
        Ok(PrincipalMapper { rules: parsed })
    }

    /// The principal's name for the distinguished name `dn`; `Err` when no rule matches.
    pub fn map(&self, dn: &str) -> Result<String, String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_owned()),
                Rule::Rewrite {
                    pattern,
                    replacement,
                    case,
                } => {
                    if pattern.is_match(dn) {
                        let name = pattern.replace(dn, replacement.as_str()).into_owned();
                        return Ok(match case {
                            Case::Keep => name,
                            Case::Lower => name.to_lowercase(),
                            Case::Upper => name.to_uppercase(),
                        });
                    }
                }
            }
        }
        Err(format!(
            "no kafka.ssl_principal_mapping_rules rule matches the certificate subject {dn:?}"
        ))
    }
}

/// The text up to the next unescaped `/`, and what follows it (`\/` is a slash in the text).
fn until_slash(text: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, '/')) => out.push('/'),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            '/' => return Some((out, &text[i + 1..])),
            c => out.push(c),
        }
    }
    None
}

/// A Java replacement (`$1`) in the regex crate's syntax (`${1}`, so `$1x` stays group 1).
fn java_replacement(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            let mut digits = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                digits.push(d);
                chars.next();
            }
            out.push_str(&format!("${{{digits}}}"));
        } else if c == '$' {
            out.push_str("$$");
        } else {
            out.push(c);
        }
    }
    out
}

/// The subject of a DER certificate in RFC 2253 form, most specific first (`CN=alice,O=Example`),
/// as Java's `X500Principal.getName()` writes it for the attributes certificates use.
pub fn subject(certificate: &[u8]) -> Option<String> {
    use x509_cert::der::Decode;
    let parsed = x509_cert::Certificate::from_der(certificate).ok()?;
    // RFC 4514 (RFC 2253's successor) writes the RDNs last first, as Java does.
    Some(parsed.tbs_certificate.subject.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keeps_the_name_and_rules_apply_in_order() {
        let mapper = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]*),O=(.*)$/$1@$2/, DEFAULT",
        )
        .unwrap();
        assert_eq!(mapper.map("CN=Duke,OU=ServiceUsers,O=Org").unwrap(), "duke");
        assert_eq!(mapper.map("CN=alice,O=Example").unwrap(), "alice@Example");
        assert_eq!(mapper.map("OU=x,CN=y").unwrap(), "OU=x,CN=y");
        assert_eq!(
            PrincipalMapper::parse("DEFAULT")
                .unwrap()
                .map("CN=a,O=b")
                .unwrap(),
            "CN=a,O=b"
        );
    }

    #[test]
    fn kafka_documentation_examples() {
        // From Kafka's `ssl.principal.mapping.rules` documentation.
        let mapper = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\
             RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\
             RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\
             DEFAULT",
        )
        .unwrap();
        assert_eq!(
            mapper
                .map("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
                .unwrap(),
            "serviceuser"
        );
        assert_eq!(
            mapper
                .map("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
                .unwrap(),
            "adminuser@admin"
        );
        assert_eq!(mapper.map("OU=x,cn=Bob.Smith,O=y").unwrap(), "bob.smith");
    }

    #[test]
    fn a_name_no_rule_matches_is_refused_and_bad_rules_are_named() {
        let mapper = PrincipalMapper::parse("RULE:^CN=(.*)$/$1/").unwrap();
        assert!(
            mapper
                .map("O=only")
                .unwrap_err()
                .contains("no kafka.ssl_principal_mapping_rules rule")
        );
        assert!(PrincipalMapper::parse("RULE:^CN=(.*)$").is_err());
        assert!(PrincipalMapper::parse("RULE:([/x/").is_err());
        assert!(PrincipalMapper::parse("SOMETHING").is_err());
        // An escaped slash is part of the pattern.
        let mapper = PrincipalMapper::parse(r"RULE:^CN=(.*)\/x$/$1/U").unwrap();
        assert_eq!(mapper.map("CN=a/x").unwrap(), "A");
    }

    /// The test harness's certificate subjects are `/O=assignor-host tests/CN=...`; Kafka named
    /// the host's `User:CN=assignor-host,O=assignor-host tests` (its ACLs, granted to that
    /// principal, are what the mutual-TLS runs of the suite use).
    #[test]
    fn subjects_are_written_most_specific_first_as_kafka_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("k.pem");
        let cert = dir.path().join("c.der");
        let made = std::process::Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
            ])
            .args([
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/O=assignor-host tests/CN=assignor-host",
            ])
            .arg("-keyout")
            .arg(&key)
            .args(["-outform", "DER", "-out"])
            .arg(&cert)
            .output()
            .expect("openssl runs");
        assert!(made.status.success(), "{made:?}");
        let der = std::fs::read(&cert).unwrap();
        assert_eq!(
            subject(&der).as_deref(),
            Some("CN=assignor-host,O=assignor-host tests")
        );
        assert_eq!(subject(b"not a certificate"), None);
    }
}
