//! `registry keep-only`: the registry's text with every service not kept disabled
//! (`enabled: false`), edited where the YAML parser says each entry is, so that the file's
//! comments, order and layout stay as they were (launchd/install.sh installs the result).

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};

use contract::registry::{Registry, RegistryError};

#[derive(Debug, thiserror::Error)]
pub enum KeepOnlyError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("{path}: not in the registry: {} (known: {known})", quoted(.names))]
    Unknown {
        path: String,
        names: Vec<String>,
        known: String,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Uneditable {
        path: String,
        line: u64,
        column: u64,
        message: String,
    },
    /// The safety net: the edited text, read back, is not the registry asked for.
    #[error("{path}: the edited registry does not read back as asked ({message}); edit it by hand")]
    Unverified { path: String, message: String },
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The registry with the positions of what keep-only edits; everything else is left to
/// [`Registry::parse`], which has read the same text first.
#[derive(Deserialize)]
struct Located {
    services: Vec<Spanned<LocatedEntry>>,
}

#[derive(Deserialize)]
struct LocatedEntry {
    name: Spanned<String>,
    enabled: Option<Spanned<bool>>,
}

/// One edit of the text: `replaced` bytes at `at` become `with`.
struct Edit {
    at: usize,
    replaced: usize,
    with: String,
}

/// `text` (the registry file `shown`) with every service whose name is not in `keep` disabled;
/// an error names each of `keep` that the registry does not have.
pub fn keep_only(text: &str, shown: &str, keep: &[String]) -> Result<String, KeepOnlyError> {
    let registry = Registry::parse(text, shown)?;
    let unknown: Vec<String> = keep
        .iter()
        .filter(|k| !registry.services.iter().any(|s| &s.name == *k))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = registry.services.iter().map(|s| s.name.as_str()).collect();
        return Err(KeepOnlyError::Unknown {
            path: shown.to_owned(),
            names: unknown,
            known: known.join(", "),
        });
    }
    let located: Located = serde_saphyr::from_str(text).map_err(|e| RegistryError::Invalid {
        path: shown.to_owned(),
        message: e.to_string(),
    })?;
    let mut edits = Vec::new();
    for entry in &located.services {
        if keep.contains(&entry.value.name.value) {
            continue;
        }
        if let Some(edit) = disable(text, shown, entry)? {
            edits.push(edit);
        }
    }
    let mut edited = text.to_owned();
    edits.sort_by_key(|e| e.at);
    for edit in edits.iter().rev() {
        edited.replace_range(edit.at..edit.at + edit.replaced, &edit.with);
    }
    verify(&edited, shown, &registry, keep)?;
    Ok(edited)
}

/// The edit that disables `entry` (none if it is disabled already).
fn disable(
    text: &str,
    shown: &str,
    entry: &Spanned<LocatedEntry>,
) -> Result<Option<Edit>, KeepOnlyError> {
    let uneditable = |at: &Location, message: &str| KeepOnlyError::Uneditable {
        path: shown.to_owned(),
        line: at.line(),
        column: at.column(),
        message: message.to_owned(),
    };
    let name = &entry.value.name;
    let aliased = |s: &Location, d: &Location| s != d;
    if aliased(&entry.referenced, &entry.defined)
        || aliased(&name.referenced, &name.defined)
        || entry
            .value
            .enabled
            .as_ref()
            .is_some_and(|e| aliased(&e.referenced, &e.defined))
    {
        return Err(uneditable(
            &entry.referenced,
            &format!(
                "service '{}' is given through a YAML alias: disable it by hand",
                name.value
            ),
        ));
    }
    let bytes = |at: &Location| -> Result<(usize, usize), KeepOnlyError> {
        let span = at.span();
        match (span.byte_offset(), span.byte_len()) {
            (Some(offset), Some(len)) => Ok((offset as usize, len as usize)),
            _ => Err(uneditable(
                at,
                "the YAML parser gave no position to edit at",
            )),
        }
    };
    match &entry.value.enabled {
        Some(enabled) if !enabled.value => Ok(None),
        // `enabled: true` (or "true"): the value becomes `false`.
        Some(enabled) => {
            let (at, replaced) = bytes(&enabled.referenced)?;
            Ok(Some(Edit {
                at,
                replaced,
                with: "false".to_owned(),
            }))
        }
        // No `enabled` (true by default): one is added after the name.
        None => {
            let (entry_at, _) = bytes(&entry.referenced)?;
            let (name_at, name_len) = bytes(&name.referenced)?;
            let after_name = name_at + name_len;
            if text[entry_at..].starts_with('{') {
                // A flow mapping, `{ name: a, url: … }`.
                return Ok(Some(Edit {
                    at: after_name,
                    replaced: 0,
                    with: ", enabled: false".to_owned(),
                }));
            }
            // A block mapping: a line of its own, indented like the mapping's first key (where
            // the parser places the mapping), after the name's line.
            let line_end = text[after_name..]
                .find('\n')
                .map_or(text.len(), |n| after_name + n);
            let (at, newline) = match line_end.checked_sub(1) {
                Some(before) if text.as_bytes().get(before) == Some(&b'\r') => (before, "\r\n"),
                _ => (line_end, "\n"),
            };
            let indent = " ".repeat(entry.referenced.column().saturating_sub(1) as usize);
            Ok(Some(Edit {
                at,
                replaced: 0,
                with: format!("{newline}{indent}enabled: false"),
            }))
        }
    }
}

/// The edited text read back is `registry` with only the services in `keep` left as they were
/// and every other one disabled.
fn verify(
    edited: &str,
    shown: &str,
    registry: &Registry,
    keep: &[String],
) -> Result<(), KeepOnlyError> {
    let unverified = |message: String| KeepOnlyError::Unverified {
        path: shown.to_owned(),
        message,
    };
    let read = Registry::parse(edited, shown).map_err(|e| unverified(e.to_string()))?;
    let mut wanted = registry.clone();
    for entry in &mut wanted.services {
        entry.enabled &= keep.contains(&entry.name);
    }
    if read != wanted {
        return Err(unverified(format!("read {read:?}, wanted {wanted:?}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep(text: &str, names: &[&str]) -> Result<String, KeepOnlyError> {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        keep_only(text, "services.yaml", &names)
    }

    #[test]
    fn flow_entries_not_kept_are_disabled_and_comments_stay() {
        let text = "# The registry.\nservices:\n  - { name: a, url: \"http://h:1\", enabled: true }  # first\n  # between\n  - { name: b, url: \"http://h:2\", enabled: true }\n  - { name: c, url: \"http://h:3\", enabled: false }\n";
        assert_eq!(
            keep(text, &["a"]).unwrap(),
            "# The registry.\nservices:\n  - { name: a, url: \"http://h:1\", enabled: true }  # first\n  # between\n  - { name: b, url: \"http://h:2\", enabled: false }\n  - { name: c, url: \"http://h:3\", enabled: false }\n"
        );
    }

    #[test]
    fn a_missing_enabled_is_added_false_in_flow_and_block_style() {
        let text = "services:\n  - {url: \"http://h:1\", name: 'a'}\n  - name: \"b\"  # b's comment\n    url: http://h:2\n  - url: http://h:3\n    name: c\n";
        assert_eq!(
            keep(text, &["x"]).unwrap_err().to_string(),
            "services.yaml: not in the registry: 'x' (known: a, b, c)"
        );
        assert_eq!(
            keep(text, &["b"]).unwrap(),
            "services:\n  - {url: \"http://h:1\", name: 'a', enabled: false}\n  - name: \"b\"  # b's comment\n    url: http://h:2\n  - url: http://h:3\n    name: c\n    enabled: false\n"
        );
        assert_eq!(
            keep(text, &["a", "c"]).unwrap(),
            "services:\n  - {url: \"http://h:1\", name: 'a'}\n  - name: \"b\"  # b's comment\n    enabled: false\n    url: http://h:2\n  - url: http://h:3\n    name: c\n"
        );
    }

    #[test]
    fn a_quoted_true_and_crlf_lines_and_no_final_newline() {
        let text = "services:\r\n  - name: a\r\n    url: x\r\n    enabled: \"true\"\r\n  - name: b\r\n    url: y";
        assert_eq!(
            keep(text, &["b"]).unwrap(),
            "services:\r\n  - name: a\r\n    url: x\r\n    enabled: false\r\n  - name: b\r\n    url: y"
        );
        let last = "services:\n  - url: y\n    name: b";
        assert_eq!(
            keep(last, &["a"]).unwrap_err().to_string(),
            "services.yaml: not in the registry: 'a' (known: b)"
        );
        let two = "services:\n  - url: y\n    name: b\n  - { name: a, url: z }";
        assert_eq!(
            keep(two, &["a"]).unwrap(),
            "services:\n  - url: y\n    name: b\n    enabled: false\n  - { name: a, url: z }"
        );
    }

    #[test]
    fn every_unknown_name_is_named() {
        let text = "services:\n  - { name: a, url: x }\n  - { name: b, url: y }\n";
        assert_eq!(
            keep(text, &["a", "nosuch", "b", "other"])
                .unwrap_err()
                .to_string(),
            "services.yaml: not in the registry: 'nosuch', 'other' (known: a, b)"
        );
    }

    #[test]
    fn an_invalid_registry_is_refused_as_registry_list_refuses_it() {
        let error = keep("services:\n  - { name: a }\n", &["a"]).unwrap_err();
        assert!(matches!(error, KeepOnlyError::Registry(_)), "{error}");
        assert!(error.to_string().starts_with("services.yaml: "), "{error}");
    }

    #[test]
    fn an_entry_given_through_an_alias_is_refused_not_mangled() {
        let text =
            "services:\n  - &shared { name: a, url: x }\n  - { name: b, url: y }\n  - *shared\n";
        let error = keep(text, &["b"]).unwrap_err();
        assert!(matches!(error, KeepOnlyError::Uneditable { .. }), "{error}");
        assert!(
            error
                .to_string()
                .contains("service 'a' is given through a YAML alias"),
            "{error}"
        );
        // Kept, the aliased entry needs no edit.
        assert_eq!(
            keep(text, &["a"]).unwrap(),
            text.replace("{ name: b, url: y }", "{ name: b, enabled: false, url: y }")
        );
    }

    #[test]
    fn the_shipped_registry_keeps_its_comments() {
        let text = include_str!("../../../../config/services.yaml");
        let edited = keep(text, &["seekr", "docwell"]).unwrap();
        let comments = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.trim_start().starts_with('#'))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(comments(&edited), comments(text));
        let registry = Registry::parse(&edited, "services.yaml").unwrap();
        let enabled: Vec<&str> = registry
            .services
            .iter()
            .filter(|s| s.enabled)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(enabled, ["seekr", "docwell"]);
        assert_eq!(edited.lines().count(), text.lines().count());
    }
}
