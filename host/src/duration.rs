//! Durations in the configuration: written as `"5s"` / `"250ms"`; read from such a string
//! (units `us`, `ms`, `s`, `m`, `h`), from a bare integer (milliseconds), or from serde's own
//! `{ secs, nanos }` table, so a config file can say `timeout = "5s"` or `timeout = 5000`. Used
//! as `#[serde(with = "crate::duration")]`.

use std::fmt;
use std::time::Duration;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    let text = if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    };
    s.serialize_str(&text)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    d.deserialize_any(DurationVisitor)
}

struct DurationVisitor;

impl<'de> Visitor<'de> for DurationVisitor {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration: \"5s\", \"250ms\", or an integer number of milliseconds")
    }

    fn visit_u64<E: de::Error>(self, ms: u64) -> Result<Duration, E> {
        Ok(Duration::from_millis(ms))
    }

    fn visit_i64<E: de::Error>(self, ms: i64) -> Result<Duration, E> {
        u64::try_from(ms)
            .map(Duration::from_millis)
            .map_err(|_| E::custom("a duration cannot be negative"))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let n: u64 = number
            .parse()
            .map_err(|_| E::custom(format!("`{text}` is not a duration like \"5s\"")))?;
        match unit.trim() {
            "us" => Ok(Duration::from_micros(n)),
            "ms" | "" => Ok(Duration::from_millis(n)),
            "s" => Ok(Duration::from_secs(n)),
            "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
            "h" => Ok(Duration::from_secs(n.saturating_mul(3600))),
            other => Err(E::custom(format!(
                "unknown duration unit `{other}` in `{text}` (use us, ms, s, m or h)"
            ))),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Duration, A::Error> {
        let (mut secs, mut nanos) = (0u64, 0u32);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "secs" => secs = map.next_value()?,
                "nanos" => nanos = map.next_value()?,
                other => return Err(de::Error::unknown_field(other, &["secs", "nanos"])),
            }
        }
        Ok(Duration::new(secs, nanos))
    }
}
