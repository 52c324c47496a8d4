//! The value types of the configuration, each checked while it is read so an error carries the
//! `line:column` of the value: names, ports, bounded integers, and durations.
//!
//! Durations are typed once here: a field spelled `…_ms` or `…_secs` in YAML is a
//! [`Duration`] in Rust, so no reader converts units.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `^[a-z][a-z0-9-]*$`
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct ServiceName(String);

impl TryFrom<String> for ServiceName {
    type Error = ValueError;
    fn try_from(value: String) -> Result<Self, ValueError> {
        if is_name(&value) {
            Ok(ServiceName(value))
        } else {
            Err(ValueError::ServiceName(value))
        }
    }
}

/// `^[a-z][a-z0-9-]*$`, the same rule as service names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProviderName(String);

impl TryFrom<String> for ProviderName {
    type Error = ValueError;
    fn try_from(value: String) -> Result<Self, ValueError> {
        if is_name(&value) {
            Ok(ProviderName(value))
        } else {
            Err(ValueError::ProviderName(value))
        }
    }
}

/// Whether `value` follows `^[a-z][a-z0-9-]*$`.
fn is_name(value: &str) -> bool {
    let mut chars = value.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    first_ok && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A value that is not what its setting takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error(
        "service name '{0}' must match ^[a-z][a-z0-9-]*$ (lowercase letter, then lowercase letters, digits, '-')"
    )]
    ServiceName(String),
    #[error(
        "provider name '{0}' must match ^[a-z][a-z0-9-]*$ (lowercase letter, then lowercase letters, digits, '-')"
    )]
    ProviderName(String),
    #[error("port must be from 1024 to 65535, got {0}")]
    Port(i64),
}

macro_rules! string_newtype {
    ($t:ident) => {
        impl $t {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl From<$t> for String {
            fn from(value: $t) -> String {
                value.0
            }
        }
    };
}
string_newtype!(ServiceName);
string_newtype!(ProviderName);

/// A TCP port from 1024 to 65535 (no privileged ports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "i64", into = "u16")]
pub struct Port(u16);

impl Port {
    pub fn get(self) -> u16 {
        self.0
    }
}

impl TryFrom<i64> for Port {
    type Error = ValueError;
    fn try_from(value: i64) -> Result<Self, ValueError> {
        match u16::try_from(value) {
            Ok(port) if port >= 1024 => Ok(Port(port)),
            _ => Err(ValueError::Port(value)),
        }
    }
}

impl From<Port> for u16 {
    fn from(port: Port) -> u16 {
        port.0
    }
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An integer of at least `min`, or the error every bounded setting gives.
fn at_least<'de, D: Deserializer<'de>>(deserializer: D, min: u64) -> Result<u64, D::Error> {
    let value = i64::deserialize(deserializer)?;
    match u64::try_from(value) {
        Ok(v) if v >= min => Ok(v),
        _ => Err(serde::de::Error::custom(format!(
            "must be an integer of at least {min}, got {value}"
        ))),
    }
}

/// A count of at least `MIN` (`deserialize_with = "count::<_, MIN>"`).
pub fn count<'de, D: Deserializer<'de>, const MIN: u64>(deserializer: D) -> Result<u64, D::Error> {
    at_least(deserializer, MIN)
}

/// An optional count of at least `MIN`.
pub fn optional_count<'de, D: Deserializer<'de>, const MIN: u64>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    struct Bounded<const M: u64>(#[serde(deserialize_with = "count::<_, M>")] u64);
    Ok(Option::<Bounded<MIN>>::deserialize(deserializer)?.map(|b| b.0))
}

/// A size in bytes of at least `MIN`.
pub fn bytes<'de, D: Deserializer<'de>, const MIN: u64>(
    deserializer: D,
) -> Result<usize, D::Error> {
    let value = at_least(deserializer, MIN)?;
    usize::try_from(value).map_err(|_| {
        serde::de::Error::custom(format!(
            "{value} bytes is more than this machine can address"
        ))
    })
}

/// Milliseconds, at least `MIN`, as a [`Duration`].
pub fn millis<'de, D: Deserializer<'de>, const MIN: u64>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    at_least(deserializer, MIN).map(Duration::from_millis)
}

/// Optional milliseconds, at least `MIN`.
pub fn optional_millis<'de, D: Deserializer<'de>, const MIN: u64>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    Ok(optional_count::<D, MIN>(deserializer)?.map(Duration::from_millis))
}

/// Seconds, at least `MIN`, as a [`Duration`].
pub fn seconds<'de, D: Deserializer<'de>, const MIN: u64>(
    deserializer: D,
) -> Result<Duration, D::Error> {
    at_least(deserializer, MIN).map(Duration::from_secs)
}

/// Writes a [`Duration`] back as the milliseconds it was read as.
pub fn as_millis<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(value.as_millis() as u64)
}

/// Writes an optional [`Duration`] back as milliseconds.
pub fn as_optional_millis<S: Serializer>(
    value: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(d) => serializer.serialize_some(&(d.as_millis() as u64)),
        None => serializer.serialize_none(),
    }
}

/// Writes a [`Duration`] back as the seconds it was read as.
pub fn as_seconds<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(value.as_secs())
}

/// A scalar read as text. Provider and dependency entries are buffered by serde (their `kind`
/// picks the variant), and a buffered `8080` or `true` is no longer a string; this reads any
/// scalar back as the text the file wrote, as a direct read would.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// An optional `http://` or `https://` URL with a host.
pub fn optional_http_url<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let Some(text) = Option::<String>::deserialize(deserializer)? else {
        return Ok(None);
    };
    match url::Url::parse(&text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(Some(text)),
        _ => Err(serde::de::Error::custom(format!(
            "must be an http:// or https:// URL, got '{text}'"
        ))),
    }
}

/// Any scalar as text (`deserialize_with = "text"`).
pub fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Scalar::deserialize(deserializer).map(|s| s.0)
}

/// An optional scalar as text.
pub fn optional_text<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(Option::<Scalar>::deserialize(deserializer)?.map(|s| s.0))
}

/// A list of scalars as text.
pub fn texts<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Ok(Vec::<Scalar>::deserialize(deserializer)?
        .into_iter()
        .map(|s| s.0)
        .collect())
}

/// A map whose keys and values are scalars read as text (environment variables, headers): a
/// buffered key `N` or `ON` would otherwise be a YAML 1.1 boolean.
pub fn text_map<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    Ok(
        std::collections::BTreeMap::<Scalar, Scalar>::deserialize(deserializer)?
            .into_iter()
            .map(|(k, v)| (k.0, v.0))
            .collect(),
    )
}

/// What to do with a result that does not match its tool's output schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputValidation {
    /// Refuse it: the call answers EXECUTION_ERROR naming where and why.
    #[default]
    Strict,
    /// Log it and answer the result as it is.
    Warn,
    /// Do not check.
    Off,
}
