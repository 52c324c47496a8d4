//! Reading configuration files: parsing with positions, the rules that span entries, and the
//! folder form (`--config-dir`) with its own rule that services differ in name and address.

use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

use super::error::{ConfigError, located, located_at};
use super::provider::ProviderError;
use super::providers_file::{self, FileProviders};
use super::{ProviderConfig, ServiceConfig};

impl ServiceConfig {
    /// Reads, parses and validates one file.
    pub fn load(path: &Path) -> Result<ServiceConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, &shown, base_dir)
    }

    /// Parses and validates a file's text; `shown` names it in messages.
    pub fn parse(text: &str, shown: &str, base_dir: PathBuf) -> Result<ServiceConfig, ConfigError> {
        // YAML 1.2 booleans only: provider entries are buffered by serde, and a buffered `N`
        // or `on` (an environment variable, a header) must stay the text it was written as.
        let options = serde_saphyr::options! { strict_booleans: true };
        let mut config: ServiceConfig =
            serde_saphyr::from_str_with_options(text, options).map_err(|e| located(shown, &e))?;
        config.base_dir = base_dir;
        config.source = shown.to_owned();
        config.read_providers_file()?;
        config.settle_hosts()?;
        config.validate()?;
        config.choose_providers();
        Ok(config)
    }

    /// Leaves out the entries whose `when` does not hold in this environment, and keeps why.
    fn choose_providers(&mut self) {
        let mut choices = Vec::new();
        self.providers.retain(|entry| {
            let Some(when) = entry.value.when() else {
                return true;
            };
            let (serving, reason) = when.holds();
            choices.push(super::ProviderChoice {
                name: entry.value.name().to_string(),
                kind: entry.value.kind(),
                serving,
                reason,
            });
            serving
        });
        self.choices = choices;
    }

    /// Appends the enabled entries of `providers_file` to `providers` (the disabled ones are
    /// kept aside, to be checked all the same).
    fn read_providers_file(&mut self) -> Result<(), ConfigError> {
        let Some(file) = &self.providers_file else {
            return Ok(());
        };
        let source = self.source.clone();
        let entries = providers_file::read(
            file,
            &self.base_dir,
            |message| located_at(&source, file, message),
            &mut self.notices,
        )?;
        self.from_file = Some(FileProviders {
            shown: entries.shown,
            first: self.providers.len(),
            disabled: entries.disabled,
        });
        self.providers.extend(entries.enabled);
        Ok(())
    }

    /// Every provider entry, enabled or not, with the file it is written in: the inline ones,
    /// then those of `providers_file` in the order that file has them.
    fn located_providers(&self) -> Vec<(&str, &Spanned<ProviderConfig>)> {
        let Some(file) = &self.from_file else {
            return self
                .providers
                .iter()
                .map(|p| (self.source.as_str(), p))
                .collect();
        };
        let (inline, listed) = self
            .providers
            .split_at(file.first.min(self.providers.len()));
        let mut from_file: Vec<&Spanned<ProviderConfig>> =
            listed.iter().chain(&file.disabled).collect();
        from_file.sort_by_key(|p| (p.referenced.line(), p.referenced.column()));
        inline
            .iter()
            .map(|p| (self.source.as_str(), p))
            .chain(from_file.into_iter().map(|p| (file.shown.as_str(), p)))
            .collect()
    }

    /// The rules that span entries: unique provider names (across `providers` and
    /// `providers_file`), dependencies that exist and are of the kind the provider needs, tools
    /// that are declared once and take an object.
    fn validate(&self) -> Result<(), ConfigError> {
        self.validate_security()?;
        let mut seen: Vec<(&str, &Spanned<ProviderConfig>)> = Vec::new();
        for (source, provider) in self.located_providers() {
            let name = provider.value.name();
            if let Some((first_source, first)) = seen.iter().find(|(_, p)| p.value.name() == name) {
                let first_at = if *first_source == source {
                    format!("line {}", first.referenced.line())
                } else {
                    format!(
                        "{first_source}:{}:{}",
                        first.referenced.line(),
                        first.referenced.column()
                    )
                };
                return Err(located_at(
                    source,
                    provider,
                    format!("provider name '{name}' is used twice (first at {first_at})"),
                ));
            }
            seen.push((source, provider));
            self.validate_entry(&provider.value).map_err(|message| {
                located_at(source, provider, format!("provider '{name}': {message}"))
            })?;
        }
        Ok(())
    }

    /// Key names are unique (they are the clients' identities), and none takes a name of the
    /// older form's keys (`key-1`, …) while that form is on; public routes are paths.
    fn validate_security(&self) -> Result<(), ConfigError> {
        let security = &self.security;
        for (i, key) in security.api_keys.iter().enumerate() {
            let name = &key.value.name;
            if let Some(first) = security.api_keys[..i]
                .iter()
                .find(|k| &k.value.name == name)
            {
                return Err(self.at(
                    key,
                    format!(
                        "api key name '{name}' is used twice (first at line {}); a name is the client's identity",
                        first.referenced.line()
                    ),
                ));
            }
            let legacy = name
                .strip_prefix("key-")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if security.api_keys_enabled && legacy {
                return Err(self.at(
                    key,
                    format!(
                        "api key name '{name}' is how the keys of security.api_keys_env are named; choose another name"
                    ),
                ));
            }
        }
        if let Some(route) = security.public_routes.iter().find(|r| !r.starts_with('/')) {
            return Err(ConfigError::Whole {
                path: self.source.clone(),
                message: format!(
                    "security.public_routes: '{route}' must be a path starting with '/' (`*` matches any run of characters)"
                ),
            });
        }
        Ok(())
    }

    /// The entry by itself ([`ProviderConfig::check`]), then the entry of `dependencies` it
    /// uses: there, and of the kind it needs.
    fn validate_entry(&self, provider: &ProviderConfig) -> Result<(), EntryError> {
        provider.check()?;
        let (Some(dependency), Some(wanted)) = (provider.dependency(), provider.dependency_kind())
        else {
            return Ok(());
        };
        match self.dependency(dependency) {
            None => Err(EntryError::NoDependency(dependency.to_owned())),
            Some(d) if d.kind() != wanted => Err(EntryError::DependencyKind {
                dependency: dependency.to_owned(),
                is: d.kind(),
                provider: provider.kind(),
                wanted,
            }),
            Some(_) => Ok(()),
        }
    }

    pub(super) fn at<T>(&self, spanned: &Spanned<T>, message: String) -> ConfigError {
        located_at(&self.source, spanned, message)
    }
}

/// Why one provider entry cannot be served, said after `provider '<name>': ` at its position.
#[derive(Debug, thiserror::Error)]
enum EntryError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("dependency '{0}' is not in `dependencies`")]
    NoDependency(String),
    #[error("dependency '{dependency}' is {is}, a {provider} provider needs {wanted}")]
    DependencyKind {
        dependency: String,
        is: &'static str,
        provider: &'static str,
        wanted: &'static str,
    },
}

/// Every `*.yaml` file of a folder, sorted, each loaded; the first error stops the scan.
pub fn load_dir(dir: &Path) -> Result<Vec<ServiceConfig>, ConfigError> {
    let shown = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml") && is_service_file(p))
        .collect();
    files.sort();
    let referenced = providers_files(&files);
    files.retain(|f| !referenced.iter().any(|r| same_file(r, f)));
    if files.is_empty() {
        return Err(ConfigError::Whole {
            path: shown,
            message: "no service *.yaml file in this folder".into(),
        });
    }
    let configs = files
        .iter()
        .map(|f| ServiceConfig::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    check_distinct(&configs)?;
    Ok(configs)
}

/// `services.yaml` is the registry of services (for the wrapper generator), not a service.
fn is_service_file(path: &Path) -> bool {
    path.file_stem().is_some_and(|s| s != "services")
}

/// The files the service files of a folder name as their `providers_file`: lists of
/// providers, not services. Read leniently (only that key); a file that cannot be read here
/// is reported when it is loaded.
fn providers_files(files: &[PathBuf]) -> Vec<PathBuf> {
    #[derive(serde::Deserialize)]
    struct Reference {
        providers_file: Option<String>,
    }
    files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let reference: Reference = serde_saphyr::from_str(&text).ok()?;
            let dir = f.parent().unwrap_or(Path::new(""));
            Some(dir.join(reference.providers_file?))
        })
        .collect()
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Services run in one process must differ in name and in address.
pub fn check_distinct(configs: &[ServiceConfig]) -> Result<(), ConfigError> {
    for (i, a) in configs.iter().enumerate() {
        for b in &configs[..i] {
            if a.service.name == b.service.name {
                return Err(ConfigError::Whole {
                    path: a.source.clone(),
                    message: format!(
                        "service name '{}' is also used by {}",
                        a.service.name, b.source
                    ),
                });
            }
            if a.service.port == b.service.port && a.service.host.value == b.service.host.value {
                return Err(ConfigError::Whole {
                    path: a.source.clone(),
                    message: format!("port {} is also used by {}", a.service.port, b.source),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LogFormat;

    fn parse(text: &str) -> Result<ServiceConfig, ConfigError> {
        ServiceConfig::parse(text, "t.yaml", PathBuf::from("."))
    }

    const MINIMAL: &str = "service: { name: docs, port: 8003 }\n";

    #[test]
    fn minimal_file_gets_the_defaults() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.service.host.value, "127.0.0.1");
        assert_eq!(c.limits.max_body_bytes, 1_048_576);
        assert_eq!(
            c.limits.call_timeout,
            std::time::Duration::from_millis(30_000)
        );
        assert_eq!(c.security.rate_limit, 1_000);
        assert_eq!(c.limits.max_concurrent_calls, 64);
        assert_eq!(c.limits.queue_depth, 256);
        assert_eq!(
            c.limits.queue_timeout,
            std::time::Duration::from_millis(10_000)
        );
        assert_eq!(
            c.monitoring.health_check_interval,
            std::time::Duration::from_secs(30)
        );
        assert_eq!(c.logging.format, LogFormat::Json);
    }

    #[test]
    fn value_errors_point_at_the_value() {
        let e = parse("service: { name: docs, port: 80 }\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.yaml:1:"), "{e}");
        assert!(e.contains("port must be from 1024 to 65535, got 80"), "{e}");
        let e = parse("service:\n  name: Docs\n  port: 8000\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.yaml:2:9: service name 'Docs' must match"),
            "{e}"
        );
        let e = parse(
            "service: { name: docs, port: 8000 }\nmonitoring: { health_check_interval: 5 }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("t.yaml:2:") && e.contains("at least 10, got 5"),
            "{e}"
        );
        let e = parse(
            "service: { name: docs, port: 8000 }\nmonitoring: { otlp_endpoint: \"127.0.0.1:4318\" }\n",
        )
        .unwrap_err().to_string();
        assert!(
            e.starts_with("t.yaml:2:") && e.contains("must be an http:// or https:// URL"),
            "{e}"
        );
        let c = parse(
            "service: { name: docs, port: 8000 }\nmonitoring: { otlp_endpoint: \"http://127.0.0.1:4318\", otlp_timeout_ms: 2500 }\n",
        )
        .unwrap();
        assert_eq!(
            c.monitoring.otlp_endpoint.as_deref(),
            Some("http://127.0.0.1:4318")
        );
        assert_eq!(
            c.monitoring.otlp_timeout,
            std::time::Duration::from_millis(2500)
        );
        assert_eq!(
            c.monitoring.status_interval,
            std::time::Duration::from_secs(10),
            "the status page samples every 10 s by default"
        );
        let c = parse(
            "service: { name: docs, port: 8000 }\nmonitoring: { status_interval_ms: 1000 }\n",
        )
        .unwrap();
        assert_eq!(
            c.monitoring.status_interval,
            std::time::Duration::from_secs(1)
        );
        let e =
            parse("service: { name: docs, port: 8000 }\nmonitoring: { status_interval_ms: 999 }\n")
                .unwrap_err()
                .to_string();
        assert!(e.contains("at least 1000, got 999"), "{e}");
        let e = parse("service: { name: docs, port: 8000 }\nsecurity:\n  rate_limit: 9\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.yaml:3:15: must be an integer of at least 10, got 9"),
            "{e}"
        );
    }

    #[test]
    fn api_keys_are_named_once_and_public_routes_are_paths() {
        let c = parse(
            "service: { name: docs, port: 8000 }\nsecurity:\n  api_keys:\n    - { name: ci, value_env: CI_KEY, tools: ['get-*'] }\n  public_routes: [/health, '/docs*']\n",
        )
        .unwrap();
        assert!(c.security.keys_required());
        assert!(c.security.is_public("/docs/index.html"));
        assert!(!c.security.is_public("/tools"));
        assert!(
            !parse("service: { name: docs, port: 8000 }\n")
                .unwrap()
                .security
                .keys_required()
        );
        let e = parse(
            "service: { name: docs, port: 8000 }\nsecurity:\n  api_keys:\n    - { name: ci, value_env: A }\n    - { name: ci, value_env: B }\n",
        )
        .unwrap_err().to_string();
        assert!(
            e.starts_with("t.yaml:5:") && e.contains("'ci' is used twice (first at line 4)"),
            "{e}"
        );
        let e = parse(
            "service: { name: docs, port: 8000 }\nsecurity:\n  api_keys_enabled: true\n  api_keys:\n    - { name: key-2, value_env: B }\n",
        )
        .unwrap_err().to_string();
        assert!(
            e.contains("how the keys of security.api_keys_env are named"),
            "{e}"
        );
        let e = parse(
            "service: { name: docs, port: 8000 }\nsecurity:\n  api_keys:\n    - { name: ci, value_env: A, tools: [] }\n",
        )
        .unwrap_err().to_string();
        assert!(
            e.starts_with("t.yaml:4:") && e.contains("would allow no tool"),
            "{e}"
        );
        let e =
            parse("service: { name: docs, port: 8000 }\nsecurity: { public_routes: [health] }\n")
                .unwrap_err()
                .to_string();
        assert!(e.contains("must be a path starting with '/'"), "{e}");
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_position() {
        let e = parse("service: { name: docs, port: 8000 }\nlimits:\n  max_body: 10\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.yaml:3:3: unknown field `max_body`"), "{e}");
    }

    /// Only `key-` and digits is the older form's name; it is refused only while that form is
    /// on.
    #[test]
    fn a_key_may_not_take_an_older_form_name_only_while_that_form_is_on() {
        let with = |enabled: bool, name: &str| {
            parse(&format!(
                "service: {{ name: docs, port: 8000 }}\nsecurity:\n  api_keys_enabled: {enabled}\n  api_keys:\n    - {{ name: '{name}', value_env: B }}\n"
            ))
        };
        for name in ["key-1", "key-23"] {
            assert!(with(true, name).is_err(), "{name}");
            assert!(with(false, name).is_ok(), "{name} with the older form off");
        }
        for name in ["key-", "key-abc", "key-2b", "ci"] {
            assert!(with(true, name).is_ok(), "{name}");
        }
    }

    /// An entry whose `when` does not hold is left out, and why is kept for /health.
    #[test]
    fn entries_whose_when_does_not_hold_are_left_out_with_the_reason() {
        let c = parse(
            "service: { name: docs, port: 8000 }\nproviders:\n  - { name: always, kind: mcp, command: x }\n  - { name: given, kind: mcp, command: x, when: { env_set: MHG_UNIT_NEVER_SET } }\n  - { name: otherwise, kind: mcp, command: x, when: { env_unset: MHG_UNIT_NEVER_SET } }\n",
        )
        .unwrap();
        let served: Vec<&str> = c
            .providers
            .iter()
            .map(|p| p.value.name().as_str())
            .collect();
        assert_eq!(served, ["always", "otherwise"]);
        let choices: Vec<(&str, &str, bool, &str)> = c
            .choices
            .iter()
            .map(|c| (c.name.as_str(), c.kind, c.serving, c.reason.as_str()))
            .collect();
        assert_eq!(
            choices,
            [
                ("given", "mcp", false, "MHG_UNIT_NEVER_SET is not set"),
                ("otherwise", "mcp", true, "MHG_UNIT_NEVER_SET is not set"),
            ]
        );
    }

    #[test]
    fn providers_are_checked_together() {
        let two = "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: mcp, command: x }\n  - { name: a, kind: mcp, url: \"http://h/mcp\" }\n";
        let e = parse(two).unwrap_err().to_string();
        assert!(
            e.starts_with("t.yaml:4:") && e.contains("'a' is used twice (first at line 3)"),
            "{e}"
        );
        let neither =
            "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: mcp }\n";
        assert!(
            parse(neither)
                .unwrap_err()
                .to_string()
                .contains("needs `command` (stdio) or `url`")
        );
        let both = "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: mcp, command: x, url: \"http://h\" }\n";
        assert!(parse(both).unwrap_err().to_string().contains("not both"));
        let kind = "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: soap, command: x }\n";
        assert!(parse(kind).unwrap_err().to_string().contains("soap"));
    }

    #[test]
    fn a_field_of_another_kind_is_unknown_at_its_entry() {
        let text = "service: { name: docs, port: 8000 }\ndependencies:\n  db: { kind: bolt, uri: \"bolt://h:1\" }\nproviders:\n  - name: q\n    kind: cypher\n    dependency: db\n    url: \"http://h\"\n    tools: []\n";
        let e = parse(text).unwrap_err().to_string();
        assert!(e.starts_with("t.yaml:5:"), "{e}");
        assert!(e.contains("unknown field `url`"), "{e}");
        let wrong = "service: { name: docs, port: 8000 }\ndependencies:\n  api: { kind: http, base_url: \"http://h\" }\nproviders:\n  - { name: q, kind: cypher, dependency: api, tools: [{ name: t, description: d, input_schema: { type: object }, query: \"RETURN 1\" }] }\n";
        let e = parse(wrong).unwrap_err().to_string();
        assert!(
            e.contains("dependency 'api' is http, a cypher provider needs bolt"),
            "{e}"
        );
    }

    #[test]
    fn limits_are_read_per_provider_and_a_cypher_timeout_is_capped() {
        let entry = |limits: &str| {
            format!(
                "service: {{ name: docs, port: 8000 }}\ndependencies:\n  db: {{ kind: bolt, uri: \"bolt://h:1\" }}\nproviders:\n  - {{ name: a, kind: mcp, command: x, limits: {{ max_concurrent: 3, tools: [{{ tool: 'e*', rate_limit: 60 }}] }} }}\n  - name: q\n    kind: cypher\n    dependency: db\n    limits: {limits}\n    tools: [{{ name: t, description: d, input_schema: {{ type: object }}, query: \"RETURN 1\" }}]\n"
            )
        };
        let c = parse(&entry("{ timeout_ms: 60000 }")).unwrap();
        assert_eq!(c.providers[0].value.limits().max_concurrent, Some(3));
        assert_eq!(c.providers[0].value.limits().tools[0].rate_limit, Some(60));
        let e = parse(&entry("{ tools: [{ tool: t, timeout_ms: 60001 }] }"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.yaml:6:"), "{e}");
        assert!(e.contains("timeout_ms may be at most 60000"), "{e}");
        let e = parse(&entry("{ max_concurrent: 0 }"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 1"), "{e}");
    }

    #[test]
    fn buffered_scalars_keep_their_text() {
        let text = "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: mcp, command: x, args: [--port, 8080, true, on], env: { N: 1, Y: off } }\n";
        let c = parse(text).unwrap();
        let ProviderConfig::Mcp(mcp) = &c.providers[0].value else {
            panic!("an mcp provider")
        };
        let crate::config::McpTransport::Stdio(stdio) = &mcp.transport else {
            panic!("stdio")
        };
        assert_eq!(stdio.args, ["--port", "8080", "true", "on"]);
        assert_eq!(stdio.env["N"], "1");
        assert_eq!(stdio.env["Y"], "off");
    }

    #[test]
    fn served_names_are_identifiers_and_expose_is_read_for_every_kind() {
        let base = "service: { name: docs, port: 8000, on_name_clash: prefix, identifier_names: true }\ndependencies:\n  db: { kind: bolt, uri: \"bolt://h:1\" }\nproviders:\n";
        let cypher = |name: &str, extra: &str| {
            format!(
                "{base}  - {{ name: q, kind: cypher, dependency: db{extra}, tools: [{{ name: \"{name}\", description: d, input_schema: {{ type: object }}, query: \"RETURN 1\" }}] }}\n"
            )
        };
        let c = parse(&cypher(
            "t",
            ", tool_prefix: g_, expose: { exclude: [x], rename: { t: u }, describe: { t: D } }",
        ))
        .unwrap();
        assert_eq!(c.service.on_name_clash, crate::config::OnNameClash::Prefix);
        assert!(c.service.identifier_names);
        let entry = &c.providers[0].value;
        assert_eq!(entry.tool_prefix(), Some("g_"));
        assert_eq!(entry.expose().rename["t"], "u");
        let e = parse(&cypher("get-t", "")).unwrap_err().to_string();
        assert!(
            e.starts_with("t.yaml:5:") && e.contains("tool 'get-t': not a tool name"),
            "{e}"
        );
        let e = parse(&cypher("t", ", tool_prefix: g-"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("tool_prefix 'g-'"), "{e}");
        let e = parse(&cypher("t", ", expose: { rename: { t: a.b } }"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expose.rename 't': 'a.b'"), "{e}");
        let e = parse(&cypher("t", ", expose: { hide: [t] }"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `hide`"), "{e}");
        let mcp = format!(
            "{base}  - {{ name: m, kind: mcp, command: x, tool_prefix: ev_, expose: {{ include: ['get-*'], rename: {{ get-sum: sum }} }} }}\n"
        );
        let c = parse(&mcp).unwrap();
        assert_eq!(c.providers[0].value.tool_prefix(), Some("ev_"));
        assert_eq!(c.providers[0].value.expose().include, ["get-*"]);
        let e = parse("service: { name: docs, port: 8000, on_name_clash: rename }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rename"), "{e}");
    }

    /// A folder with a service file `svc.yaml` (`service` then `extra`) and `providers.yaml`.
    fn with_providers_file(extra: &str, providers: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("svc.yaml");
        std::fs::write(
            &file,
            format!("service: {{ name: docs, port: 8000 }}\n{extra}"),
        )
        .unwrap();
        std::fs::write(dir.path().join("providers.yaml"), providers).unwrap();
        (dir, file)
    }

    fn load(file: &Path) -> Result<ServiceConfig, ConfigError> {
        ServiceConfig::load(file)
    }

    const SEED: &str = "providers:\n  - name: hello-go\n    type: grpc\n    address: localhost:50051\n    enabled: false\n    metadata: { version: 1.0.0, environment: development }\n  - name: hello-rs\n    type: grpc\n    address: localhost:50052\n    enabled: true\n    metadata: { version: 1.0.0, environment: development }\n";

    #[test]
    fn providers_file_entries_follow_the_inline_ones() {
        let inline =
            "providers:\n  - { name: ev, kind: mcp, command: x }\nproviders_file: providers.yaml\n";
        let (dir, file) = with_providers_file(inline, SEED);
        let c = load(&file).unwrap();
        let names: Vec<&str> = c.provider_entries().map(|p| p.name().as_str()).collect();
        assert_eq!(names, ["ev", "hello-rs"], "hello-go is disabled");
        assert_eq!(c.providers[1].value.kind(), "grpc");
        let shown = dir.path().join("providers.yaml").display().to_string();
        assert_eq!(
            c.notices,
            [format!(
                "{shown}:2:5: provider 'hello-go' has enabled: false; it is not started"
            )]
        );
        let from = c.from_file.as_ref().unwrap();
        assert_eq!((from.first, from.shown.as_str()), (1, shown.as_str()));
        // Relative to the config file, not to the working directory; config get sees the key.
        assert_eq!(
            crate::config::query::get(&c, "providers_file").unwrap(),
            "providers.yaml"
        );
    }

    #[test]
    fn providers_file_errors_point_into_the_file_that_has_them() {
        let key = "providers_file: providers.yaml\n";
        let shown =
            |dir: &tempfile::TempDir| dir.path().join("providers.yaml").display().to_string();
        // An unknown type, where it is written.
        let (dir, file) = with_providers_file(
            key,
            "providers:\n  - name: a\n    type: grpc\n    address: h:1\n  - name: b\n    type: rest\n    address: h:2\n",
        );
        let e = load(&file).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:6:11: ", shown(&dir))), "{e}");
        assert!(e.contains("unknown provider type 'rest'"), "{e}");
        // An address that is not host:port, at its entry in providers.yaml (disabled or not).
        for enabled in ["true", "false"] {
            let (dir, file) = with_providers_file(
                key,
                &format!(
                    "providers:\n  - {{ name: a, type: grpc, address: \"h:1\" }}\n  - {{ name: b, type: grpc, address: \"http://h:2\", enabled: {enabled} }}\n"
                ),
            );
            let e = load(&file).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "{}:3:5: provider 'b': address 'http://h:2' must be host:port",
                    shown(&dir)
                )),
                "{e}"
            );
        }
        // A name used inline and in the file: at the second, naming the first's position.
        let (dir, file) = with_providers_file(
            &format!("providers:\n  - {{ name: hello-rs, kind: mcp, command: x }}\n{key}"),
            SEED,
        );
        let e = load(&file).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}:7:5: provider name 'hello-rs' is used twice (first at {}:3:5)",
                shown(&dir),
                file.display()
            )
        );
        // Twice in the file, a disabled one included.
        let (dir, file) = with_providers_file(
            key,
            "providers:\n  - { name: a, type: grpc, address: \"h:1\", enabled: false }\n  - { name: a, type: grpc, address: \"h:2\" }\n",
        );
        let e = load(&file).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}:", shown(&dir)))
                && e.contains("'a' is used twice (first at line 2)"),
            "{e}"
        );
        // A file that is not there: at the key of the service config.
        let (_dir, file) = with_providers_file("providers_file: missing.yaml\n", SEED);
        let e = load(&file).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}:2:17: providers_file 'missing.yaml': cannot read",
                file.display()
            )),
            "{e}"
        );
    }

    #[test]
    fn an_inline_grpc_address_follows_the_same_rule() {
        let e = parse("service: { name: docs, port: 8000 }\nproviders:\n  - { name: g, kind: grpc, address: localhost }\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "t.yaml:3:5: provider 'g': address 'localhost' must be host:port (e.g. 127.0.0.1:50051 or [::1]:50051): no port"
        );
        assert!(parse("service: { name: docs, port: 8000 }\nproviders:\n  - { name: g, kind: grpc, address: \"[::1]:50051\" }\n").is_ok());
    }

    #[test]
    fn a_folder_skips_the_providers_file_its_services_name() {
        let (dir, _) = with_providers_file("providers_file: providers.yaml\n", SEED);
        let configs = load_dir(dir.path()).unwrap();
        assert_eq!(configs.len(), 1);
        assert_eq!(configs[0].service.name.as_str(), "docs");
    }

    /// A folder's services are its `*.yaml` and `*.yml` files, not `services.yaml` (the
    /// registry) and not files of other kinds.
    #[test]
    fn a_folder_loads_its_yaml_files_but_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("b-docs.yaml", "service: { name: docs, port: 8000 }\n");
        write("a-other.yml", "service: { name: other, port: 8001 }\n");
        write("services.yaml", "services: [docs, other]\n");
        write("README.md", "# not a service\n");
        write("docs.yaml.bak", "service: { name: stale, port: 8002 }\n");
        let names: Vec<String> = load_dir(dir.path())
            .unwrap()
            .iter()
            .map(|c| c.service.name.as_str().to_owned())
            .collect();
        assert_eq!(names, ["other", "docs"], "sorted by file name");

        let empty = tempfile::tempdir().unwrap();
        std::fs::write(empty.path().join("services.yaml"), "services: []\n").unwrap();
        let e = load_dir(empty.path()).unwrap_err().to_string();
        assert!(e.contains("no service *.yaml file in this folder"), "{e}");
    }

    /// The providers file is recognised however the service names it.
    #[test]
    fn a_folder_skips_its_providers_file_named_by_another_path() {
        let (dir, _) = with_providers_file("providers_file: sub/../providers.yaml\n", SEED);
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let configs = load_dir(dir.path()).unwrap();
        let names: Vec<&str> = configs.iter().map(|c| c.service.name.as_str()).collect();
        assert_eq!(names, ["docs"]);
    }

    /// A providers file that is missing is reported by the service naming it (not taken for
    /// every file of the folder).
    #[test]
    fn a_missing_providers_file_is_reported_by_its_service() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("svc.yaml"),
            "service: { name: docs, port: 8000 }\nproviders_file: gone.yaml\n",
        )
        .unwrap();
        let e = load_dir(dir.path()).unwrap_err().to_string();
        assert!(e.contains("gone.yaml"), "{e}");
        assert!(!e.contains("no service *.yaml file"), "{e}");
    }

    #[test]
    fn services_of_one_process_differ_in_name_and_address() {
        let service = |name: &str, host: &str, port: u16, file: &str| {
            ServiceConfig::parse(
                &format!("service: {{ name: {name}, host: '{host}', port: {port} }}\n"),
                file,
                PathBuf::from("."),
            )
            .unwrap()
        };
        let docs = service("docs", "127.0.0.1", 8000, "docs.yaml");
        let fine = [
            service("other", "127.0.0.1", 8001, "other.yaml"),
            service("other", "127.0.0.2", 8000, "other.yaml"),
        ];
        for other in fine {
            assert!(check_distinct(&[docs.clone(), other]).is_ok());
        }
        let e = check_distinct(&[
            docs.clone(),
            service("docs", "127.0.0.1", 8001, "again.yaml"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("service name 'docs' is also used by docs.yaml"),
            "{e}"
        );
        let e = check_distinct(&[docs.clone(), service("other", "127.0.0.1", 8000, "o.yaml")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("port 8000 is also used by docs.yaml"), "{e}");
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let e = parse("service: [\n").unwrap_err().to_string();
        assert!(e.starts_with("t.yaml:"), "{e}");
    }
}
