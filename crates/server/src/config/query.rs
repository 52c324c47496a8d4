//! `config get FILE KEY`: one setting of a loaded configuration, defaults applied, for scripts
//! that must not parse YAML themselves.

use serde_json::Value;

use super::ServiceConfig;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{file}: no setting '{key}' (known at '{parent}': {known})")]
    Unknown {
        file: String,
        key: String,
        parent: String,
        known: String,
    },
}

/// The value at a dotted `key` (`limits.shutdown_grace_ms`, `providers.0.name`) in the file's
/// own units: scalars as plain text, lists and maps as compact JSON.
pub fn get(config: &ServiceConfig, key: &str) -> Result<String, QueryError> {
    let whole = serde_json::to_value(config).unwrap_or(Value::Null);
    let mut at = &whole;
    let mut walked = Vec::new();
    for part in key.split('.') {
        let next = match at {
            Value::Object(map) => map.get(part),
            Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        let Some(next) = next else {
            let known = match at {
                Value::Object(map) => map.keys().cloned().collect::<Vec<_>>().join(", "),
                Value::Array(items) => format!("0 to {}", items.len().saturating_sub(1)),
                _ => "nothing: it is a value".into(),
            };
            return Err(QueryError::Unknown {
                file: config.source.clone(),
                key: key.to_owned(),
                parent: if walked.is_empty() {
                    "the top".into()
                } else {
                    walked.join(".")
                },
                known,
            });
        };
        walked.push(part);
        at = next;
    }
    Ok(match at {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ServiceConfig {
        ServiceConfig::parse(
            "service: { name: docs, port: 8003 }\nlimits: { call_timeout_ms: 1500 }\nproviders:\n  - { name: a, kind: mcp, command: node, args: [x, 1] }\n",
            "t.yaml",
            std::path::PathBuf::from("."),
        )
        .unwrap()
    }

    #[test]
    fn settings_read_back_in_the_units_of_the_file() {
        let c = config();
        assert_eq!(get(&c, "limits.call_timeout_ms").unwrap(), "1500");
        assert_eq!(get(&c, "limits.shutdown_grace_ms").unwrap(), "5000");
        assert_eq!(get(&c, "service.port").unwrap(), "8003");
        assert_eq!(get(&c, "service.host").unwrap(), "127.0.0.1");
        assert_eq!(get(&c, "mcp.session_ttl_secs").unwrap(), "1800");
        assert_eq!(get(&c, "providers.0.kind").unwrap(), "mcp");
        assert_eq!(get(&c, "providers.0.args").unwrap(), r#"["x","1"]"#);
    }

    #[test]
    fn an_unknown_key_says_what_is_known() {
        let e = get(&config(), "limits.call_timeout")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no setting 'limits.call_timeout'"), "{e}");
        assert!(e.contains("call_timeout_ms"), "{e}");
    }
}
