//! `kind: search`: lexical (BM25) full-text search over local folders, built into the gateway.
//! Each root is `code` (source files, split into line chunks) or `docs` (Markdown,
//! reStructuredText, plain text, split into sections by heading).

use serde::{Deserialize, Serialize};

use super::super::types::{optional_text, text, texts};
use super::{EntryKeys, ProviderCommon};

/// `kind: search`. Read as an entry of [`super::ProviderConfig`], which refuses a key of another
/// kind first.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SearchProviderConfig {
    #[serde(flatten)]
    pub common: ProviderCommon,
    /// The folders searched, each `code` or `docs`.
    pub roots: Vec<SearchRoot>,
    /// Where the index lives (may use `${VAR}`; relative to the config file's folder).
    /// Default: `$XDG_CACHE_HOME/mcp-http-gateway/search/<service>-<provider>-<hash of roots>`,
    /// `~/.cache/…` when XDG_CACHE_HOME is unset.
    #[serde(default, deserialize_with = "optional_text")]
    pub index_dir: Option<String>,
    /// Files larger than this are not indexed (counted as `too_large`). Default 1 MiB.
    #[serde(default = "default_max_file_bytes")]
    pub max_file_bytes: u64,
    /// The most `read_file` and `get_section` answer, in bytes; past it the text is cut at a
    /// line end and `truncated` is true. Default 256 KiB.
    #[serde(default = "default_max_read_bytes")]
    pub max_read_bytes: u64,
    /// Follow changes with a file watcher (default true); off: the index is as of start.
    #[serde(default = "default_true")]
    pub watch: bool,
}

impl EntryKeys for SearchProviderConfig {
    const KEYS: &'static [&'static str] = &[
        "name",
        "roots",
        "index_dir",
        "max_file_bytes",
        "max_read_bytes",
        "watch",
        "setup_hint",
        "validate_output",
        "limits",
        "resilience",
        "tool_prefix",
        "expose",
        "when",
    ];
}

/// One searched folder.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRoot {
    /// The folder (may use `${VAR}`; relative to the config file's folder). After expansion it
    /// may list several folders separated by `:`, as PATH does.
    #[serde(deserialize_with = "text")]
    pub path: String,
    pub kind: RootKind,
    /// Globs (relative to the root) a file must match to be indexed; empty: every file for
    /// `code`, `**/*.{md,markdown,rst,txt}` for `docs`.
    #[serde(default, deserialize_with = "texts")]
    pub include: Vec<String>,
    /// Globs (relative to the root) never indexed, on top of `.gitignore` and `.git/`.
    #[serde(default, deserialize_with = "texts")]
    pub exclude: Vec<String>,
}

/// What a root holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RootKind {
    Code,
    Docs,
}

impl RootKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RootKind::Code => "code",
            RootKind::Docs => "docs",
        }
    }
}

fn default_max_file_bytes() -> u64 {
    1024 * 1024
}
fn default_max_read_bytes() -> u64 {
    256 * 1024
}
fn default_true() -> bool {
    true
}

/// Why a search entry cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("a search provider needs at least one entry in `roots`")]
    NoRoots,
    #[error("max_file_bytes and max_read_bytes must be above 0")]
    ZeroCap,
    #[error("root '{root}': glob '{glob}': {source}")]
    Glob {
        root: String,
        glob: String,
        source: globset::Error,
    },
}

impl SearchProviderConfig {
    /// Rules serde cannot say: at least one root, globs that parse, caps above zero.
    pub fn check(&self) -> Result<(), SearchError> {
        if self.roots.is_empty() {
            return Err(SearchError::NoRoots);
        }
        if self.max_file_bytes == 0 || self.max_read_bytes == 0 {
            return Err(SearchError::ZeroCap);
        }
        for root in &self.roots {
            for glob in root.include.iter().chain(&root.exclude) {
                globset::Glob::new(glob).map_err(|source| SearchError::Glob {
                    root: root.path.clone(),
                    glob: glob.clone(),
                    source,
                })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(yaml: &str) -> String {
        let entry: SearchProviderConfig = serde_saphyr::from_str(yaml).unwrap();
        entry.check().unwrap_err().to_string()
    }

    #[test]
    fn roots_caps_and_globs() {
        let fine: SearchProviderConfig =
            serde_saphyr::from_str("{ name: s, roots: [{ path: ., kind: docs }] }").unwrap();
        assert_eq!(fine.check(), Ok(()));
        assert_eq!(
            (fine.max_file_bytes, fine.max_read_bytes),
            (1 << 20, 256 << 10)
        );
        assert!(fine.watch);
        assert_eq!(
            refused("{ name: s, roots: [] }"),
            "a search provider needs at least one entry in `roots`"
        );
        assert_eq!(
            refused("{ name: s, roots: [{ path: ., kind: docs }], max_read_bytes: 0 }"),
            "max_file_bytes and max_read_bytes must be above 0"
        );
        assert_eq!(
            refused("{ name: s, roots: [{ path: src, kind: code, exclude: ['a['] }] }"),
            "root 'src': glob 'a[': error parsing glob 'a[': unclosed character class; missing ']'"
        );
    }
}
