//! What a reload keeps: a running provider is reused when its whole entry is unchanged
//! (wherever it now stands in the file) and so is the dependency entry behind it.
//!
//! Entries are compared whole (`PartialEq` derived on every configuration type), so a field
//! added later takes part in the decision without anyone remembering to add it here.

use super::{ProviderConfig, ServiceConfig};

/// For each provider of `new`, in order, the index of the provider of `old` it can reuse.
pub fn reusable(old: &ServiceConfig, new: &ServiceConfig) -> Vec<Option<usize>> {
    new.provider_entries()
        .map(|entry| {
            old.provider_entries()
                .position(|running| same_provider((old, running), (new, entry)))
        })
        .collect()
}

/// Same entry (but for `limits`, `expose` and `tool_prefix`, which the service applies around
/// the provider), and the same dependency entry behind it.
fn same_provider(
    (old_service, old): (&ServiceConfig, &ProviderConfig),
    (new_service, new): (&ServiceConfig, &ProviderConfig),
) -> bool {
    old.as_running() == new.as_running()
        && old.dependency().map(|d| old_service.dependency(d))
            == new.dependency().map(|d| new_service.dependency(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn service(providers: Value, dependencies: Value) -> ServiceConfig {
        let mut config = ServiceConfig::parse(
            "service: { name: unit, port: 9999 }\n",
            "unit.yaml",
            std::path::PathBuf::from("."),
        )
        .unwrap();
        config.providers = serde_json::from_value::<Vec<ProviderConfig>>(providers)
            .unwrap()
            .into_iter()
            .map(|p| {
                serde_saphyr::Spanned::new(
                    p,
                    serde_saphyr::Location::UNKNOWN,
                    serde_saphyr::Location::UNKNOWN,
                )
            })
            .collect();
        config.dependencies = serde_json::from_value::<
            std::collections::BTreeMap<String, super::super::DependencyConfig>,
        >(dependencies)
        .unwrap()
        .into_iter()
        .map(|(k, d)| {
            (
                k,
                serde_saphyr::Spanned::new(
                    d,
                    serde_saphyr::Location::UNKNOWN,
                    serde_saphyr::Location::UNKNOWN,
                ),
            )
        })
        .collect();
        config
    }

    /// One entry of every kind with every field set, as YAML would give it.
    fn every_field() -> (Value, Value) {
        let expose = json!({"include": ["a*"], "exclude": ["b"], "rename": {"a1": "x"},
                            "describe": {"a1": "d"}});
        let providers = json!([
            { "name": "stdio", "kind": "mcp", "command": "node", "args": ["a"], "env": {"K": "v"},
              "env_passthrough": ["GITHUB_TOKEN"],
              "cwd": "here", "setup_hint": "start it", "validate_output": "warn",
              "tool_prefix": "s_", "expose": expose },
            { "name": "remote", "kind": "mcp", "url": "http://h/mcp", "headers": {"X": "y"},
              "setup_hint": "start it", "tool_prefix": "r_", "expose": expose },
            { "name": "graph", "kind": "cypher", "dependency": "db", "setup_hint": "h",
              "validate_output": "off", "tool_prefix": "g_", "expose": expose,
              "tools": [{ "name": "t", "description": "d", "input_schema": {"type": "object"},
                          "query": "RETURN 1", "result_key": "rows",
                          "output_schema": {"type": "object"} }] },
            { "name": "api", "kind": "http", "dependency": "api", "openapi": "o.yaml",
              "include": ["a"], "exclude": ["b"], "usage_tool": "usage", "setup_hint": "h",
              "tools": [{ "name": "t", "description": "d", "input_schema": {"type": "object"},
                          "method": "POST", "path": "/p", "query": {"q": "1"}, "headers": {"H": "1"},
                          "body": "{}", "result": "/r", "output_schema": {"type": "object"} }],
              "validate_output": "warn", "tool_prefix": "a_", "expose": expose }
        ]);
        let dependencies = json!({
            "db": { "kind": "bolt", "uri": "bolt://h:1", "user": "u", "password_env": "P",
                    "max_connections": 4, "timeout_ms": 100 },
            "api": { "kind": "http", "base_url": "http://h", "api_key_env": "K", "health_path": "/h",
                     "headers": {"A": "b"}, "timeout_ms": 100 }
        });
        (providers, dependencies)
    }

    /// The provider fields applied by the service, not by the running provider.
    const SERVICE_APPLIED: &[&str] = &["limits", "tool_prefix", "expose"];

    /// A different value of the same type.
    fn changed(value: &Value) -> Value {
        match value {
            Value::String(s) if s.starts_with("http") => json!(format!("{s}x")),
            Value::String(s) if s.starts_with("bolt") => json!(format!("{s}0")),
            Value::String(s) if s.starts_with('/') => json!(format!("{s}x")),
            Value::String(s) if s == "POST" => json!("PUT"),
            Value::String(s) => json!(format!("{s}-changed")),
            Value::Number(n) => json!(n.as_u64().unwrap() + 1),
            Value::Array(items) => {
                let mut items = items.clone();
                items.push(json!("more"));
                Value::Array(items)
            }
            Value::Object(map) => {
                let mut map = map.clone();
                map.insert("Extra".into(), json!("1"));
                Value::Object(map)
            }
            other => panic!("no change made for {other}"),
        }
    }

    /// Every (path, mutated document) pair: each field of each entry and tool changed once.
    fn mutations(doc: &Value, at: &str, out: &mut Vec<(String, Value)>, root: &Value) {
        let Value::Object(map) = doc else { return };
        for (key, value) in map {
            // Applied around a running provider: see a_change_of_what_the_service_applies_….
            if key == "kind" || SERVICE_APPLIED.contains(&key.as_str()) {
                continue;
            }
            let here = format!("{at}/{key}");
            if key == "tools" {
                mutations(&value[0], &format!("{here}/0"), out, root);
                continue;
            }
            if key == "validate_output" {
                let mut new = root.clone();
                let other = if value == "strict" { "off" } else { "strict" };
                *new.pointer_mut(&here).unwrap() = json!(other);
                out.push((here, new));
                continue;
            }
            if key == "input_schema" || key == "output_schema" {
                let mut new = root.clone();
                *new.pointer_mut(&here).unwrap() = json!({"type": "object", "required": ["x"]});
                out.push((here, new));
                continue;
            }
            let mut new = root.clone();
            *new.pointer_mut(&here).unwrap() = changed(value);
            out.push((here, new));
        }
    }

    #[test]
    fn an_unchanged_file_reuses_every_provider() {
        let (providers, dependencies) = every_field();
        let old = service(providers.clone(), dependencies.clone());
        let new = service(providers, dependencies);
        assert_eq!(reusable(&old, &new), [Some(0), Some(1), Some(2), Some(3)]);
    }

    #[test]
    fn a_moved_entry_is_still_reused() {
        let (providers, dependencies) = every_field();
        let old = service(providers.clone(), dependencies.clone());
        let mut moved = providers.as_array().unwrap().clone();
        moved.reverse();
        let new = service(Value::Array(moved), dependencies);
        assert_eq!(reusable(&old, &new), [Some(3), Some(2), Some(1), Some(0)]);
    }

    #[test]
    fn a_change_to_any_provider_field_restarts_that_provider_only() {
        let (providers, dependencies) = every_field();
        let old = service(providers.clone(), dependencies.clone());
        let mut cases = Vec::new();
        for (i, entry) in providers.as_array().unwrap().iter().enumerate() {
            let mut one = Vec::new();
            mutations(entry, "", &mut one, entry);
            for (path, new_entry) in one {
                let mut all = providers.clone();
                all[i] = new_entry;
                cases.push((i, format!("providers/{i}{path}"), all));
            }
        }
        assert!(
            cases.len() >= 25,
            "every field is exercised: {}",
            cases.len()
        );
        for (i, path, all) in cases {
            let new = service(all, dependencies.clone());
            let plan = reusable(&old, &new);
            assert_eq!(plan[i], None, "a change of {path} went unnoticed");
            for (j, reuse) in plan.iter().enumerate() {
                if j != i {
                    assert_eq!(*reuse, Some(j), "a change of {path} restarted provider {j}");
                }
            }
        }
    }

    #[test]
    fn a_change_of_limits_restarts_nothing() {
        let (providers, dependencies) = every_field();
        let old = service(providers.clone(), dependencies.clone());
        let mut limited = providers.clone();
        for entry in limited.as_array_mut().unwrap() {
            entry["limits"] = json!({"max_concurrent": 2, "timeout_ms": 100,
                                     "tools": [{"tool": "*", "max_concurrent": 1}]});
        }
        assert_eq!(
            reusable(&old, &service(limited, dependencies)),
            [Some(0), Some(1), Some(2), Some(3)]
        );
    }

    #[test]
    fn a_change_of_what_the_service_applies_restarts_nothing() {
        let (providers, dependencies) = every_field();
        let old = service(providers.clone(), dependencies.clone());
        let mut cases = 0;
        for i in 0..providers.as_array().unwrap().len() {
            for key in ["tool_prefix", "expose"] {
                let entry = &providers[i];
                let mut one = Vec::new();
                if key == "expose" {
                    mutations(&entry[key], "/expose", &mut one, entry);
                } else {
                    let mut new = entry.clone();
                    new[key] = changed(&entry[key]);
                    one.push((format!("/{key}"), new));
                }
                for (path, new_entry) in one {
                    let mut all = providers.clone();
                    all[i] = new_entry.clone();
                    let new = service(all, dependencies.clone());
                    assert_ne!(
                        new.providers[i].value, old.providers[i].value,
                        "providers/{i}{path} was not read"
                    );
                    assert_eq!(
                        reusable(&old, &new),
                        [Some(0), Some(1), Some(2), Some(3)],
                        "a change of providers/{i}{path} restarted a provider"
                    );
                    cases += 1;
                }
            }
        }
        assert_eq!(
            cases,
            4 * 5,
            "tool_prefix and the four fields of expose, per provider"
        );
    }

    #[test]
    fn a_change_to_any_dependency_field_restarts_its_providers() {
        let (providers, dependencies) = every_field();
        let old = service(providers.clone(), dependencies.clone());
        for (name, user) in [("db", 2), ("api", 3)] {
            let mut one = Vec::new();
            mutations(&dependencies[name], "", &mut one, &dependencies[name]);
            assert!(one.len() >= 4);
            for (path, entry) in one {
                let mut all = dependencies.clone();
                all[name] = entry;
                let plan = reusable(&old, &service(providers.clone(), all));
                assert_eq!(
                    plan[user], None,
                    "a change of dependencies/{name}{path} went unnoticed"
                );
            }
        }
    }
}
