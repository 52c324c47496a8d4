//! `providers_file`: a service config may name a file of gRPC providers in the seed's
//! `providers.yaml` form,
//!
//! ```yaml
//! providers:
//!   - name: hello-rs
//!     type: grpc
//!     address: localhost:50052
//!     enabled: true
//!     metadata: { version: 1.0.0, environment: development }
//! ```
//!
//! relative to the config file. Each entry becomes a `kind: grpc` entry with every other field
//! at its default (an entry that needs TLS, deadlines or limits is written inline instead),
//! after the inline `providers`. Entries with `enabled: false` are read and checked like the
//! others, so enabling one never reveals an error, then left out (a notice says so). Errors
//! point into the file that has them (`providers.yaml:line:column`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::error::{ConfigError, located};
use super::provider::{GrpcProviderConfig, ProviderConfig};
use super::types::{ProviderName, text, text_map};

/// The providers read from `providers_file`, kept with the file they came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileProviders {
    /// The file as messages name it (the config's folder joined with `providers_file`).
    pub shown: String,
    /// Index in `ServiceConfig::providers` of the first entry that came from the file (every
    /// entry from here on did).
    pub first: usize,
    /// The entries with `enabled: false`: checked, not run.
    pub disabled: Vec<Spanned<ProviderConfig>>,
}

/// The file as the seed writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedFile {
    #[serde(default)]
    providers: Vec<Spanned<SeedEntry>>,
}

/// One entry of the seed's file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedEntry {
    name: ProviderName,
    /// Only `grpc`: any other value is refused where it is written.
    #[serde(rename = "type")]
    kind: SeedKind,
    #[serde(deserialize_with = "text")]
    address: String,
    #[serde(default = "enabled")]
    enabled: bool,
    /// Labels (the seed has `version` and `environment`), shown in /health.
    #[serde(default, deserialize_with = "text_map")]
    metadata: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(try_from = "String")]
enum SeedKind {
    Grpc,
}

/// A `type` a providers file does not list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SeedKindError {
    #[error(
        "unknown provider type '{0}': a providers file lists grpc providers only (write other kinds in the service config's `providers`)"
    )]
    NotGrpc(String),
}

impl TryFrom<String> for SeedKind {
    type Error = SeedKindError;
    fn try_from(value: String) -> Result<Self, SeedKindError> {
        match value.as_str() {
            "grpc" => Ok(SeedKind::Grpc),
            _ => Err(SeedKindError::NotGrpc(value)),
        }
    }
}

fn enabled() -> bool {
    true
}

/// The entries of a providers file, split by `enabled`, each with its position in the file.
#[derive(Debug, Default)]
pub struct Entries {
    /// The file as messages name it.
    pub shown: String,
    pub enabled: Vec<Spanned<ProviderConfig>>,
    pub disabled: Vec<Spanned<ProviderConfig>>,
}

/// The entries of `providers_file`, resolved against `base_dir`. `at` locates a file that
/// cannot be read (the `providers_file` value in the config); `notices` gets a line per
/// disabled entry.
pub fn read(
    providers_file: &Spanned<String>,
    base_dir: &Path,
    at: impl Fn(String) -> ConfigError,
    notices: &mut Vec<String>,
) -> Result<Entries, ConfigError> {
    let path = base_dir.join(&providers_file.value);
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        at(format!(
            "providers_file '{}': cannot read {shown}: {e}",
            providers_file.value
        ))
    })?;
    parse(&text, shown, notices)
}

/// Parses the text of a providers file named `shown` in messages.
fn parse(text: &str, shown: String, notices: &mut Vec<String>) -> Result<Entries, ConfigError> {
    let options = serde_saphyr::options! { strict_booleans: true };
    let file: SeedFile =
        serde_saphyr::from_str_with_options(text, options).map_err(|e| located(&shown, &e))?;
    let mut entries = Entries::default();
    for entry in file.providers {
        let Spanned {
            value,
            referenced,
            defined,
        } = entry;
        let SeedKind::Grpc = value.kind;
        let on = value.enabled;
        let name = value.name.clone();
        let config = ProviderConfig::Grpc(GrpcProviderConfig::from_seed(
            value.name,
            value.address,
            value.metadata,
        ));
        let spanned = Spanned::new(config, referenced, defined);
        if on {
            entries.enabled.push(spanned);
        } else {
            notices.push(format!(
                "{shown}:{}:{}: provider '{name}' has enabled: false; it is not started",
                referenced.line(),
                referenced.column()
            ));
            entries.disabled.push(spanned);
        }
    }
    entries.shown = shown;
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The enabled entries, the names of the disabled ones, and the notices.
    type Parsed = (Vec<ProviderConfig>, Vec<String>, Vec<String>);

    fn parsed(text: &str) -> Result<Parsed, ConfigError> {
        let mut notices = Vec::new();
        let entries = parse(text, "providers.yaml".into(), &mut notices)?;
        Ok((
            entries.enabled.into_iter().map(|p| p.value).collect(),
            entries
                .disabled
                .iter()
                .map(|p| p.value.name().to_string())
                .collect(),
            notices,
        ))
    }

    const SEED: &str = "providers:\n  - name: hello-go\n    type: grpc\n    address: localhost:50051\n    enabled: false\n    metadata:\n      version: 1.0.0\n      environment: development\n  - name: hello-rs\n    type: grpc\n    address: localhost:50052\n    enabled: true\n    metadata: { version: 1.0.0, environment: development, replicas: 2 }\n";

    #[test]
    fn the_seed_file_reads_as_grpc_entries_and_a_disabled_one_is_noted() {
        let (on, off, notices) = parsed(SEED).unwrap();
        assert_eq!(on.len(), 1);
        let ProviderConfig::Grpc(rs) = &on[0] else {
            panic!("a grpc entry")
        };
        assert_eq!(rs.common.name.as_str(), "hello-rs");
        assert_eq!(rs.address, "localhost:50052");
        assert_eq!(rs.metadata["version"], "1.0.0");
        assert_eq!(rs.metadata["replicas"], "2", "scalars are read as text");
        assert_eq!(rs.metadata["environment"], "development");
        assert_eq!(rs.deadline_ms, 30_000, "the other fields at their defaults");
        assert_eq!(off, ["hello-go"]);
        assert_eq!(
            notices,
            ["providers.yaml:2:5: provider 'hello-go' has enabled: false; it is not started"]
        );
        // `enabled` defaults to true.
        let (on, _, _) =
            parsed("providers:\n  - { name: a, type: grpc, address: \"h:1\" }\n").unwrap();
        assert_eq!(on.len(), 1);
    }

    #[test]
    fn an_unknown_type_is_refused_where_it_is_written() {
        let text = "providers:\n  - name: a\n    type: grpc\n    address: h:1\n  - name: b\n    type: soap\n    address: h:2\n";
        let e = parsed(text).unwrap_err().to_string();
        assert!(e.starts_with("providers.yaml:6:11: "), "{e}");
        assert!(
            e.contains("unknown provider type 'soap': a providers file lists grpc providers only"),
            "{e}"
        );
    }

    #[test]
    fn other_mistakes_have_their_positions_too() {
        let e = parsed("providers:\n  - { name: a, type: grpc, address: \"h:1\", tls: {} }\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("providers.yaml:2:") && e.contains("unknown field `tls`"),
            "{e}"
        );
        let e = parsed("providers:\n  - { name: A, type: grpc, address: \"h:1\" }\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("providers.yaml:2:") && e.contains("provider name 'A'"),
            "{e}"
        );
        let e = parsed("providers:\n  - { name: a, address: \"h:1\" }\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("providers.yaml:2:") && e.contains("type"),
            "{e}"
        );
        let e = parsed("providers:\n  - { name: a, type: grpc, address: \"h:1\", enabled: yes }\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("providers.yaml:2:"), "{e}");
        let e = parsed("services: []\n").unwrap_err().to_string();
        assert!(e.contains("unknown field `services`"), "{e}");
    }
}
