//! Which files are indexed: those under the root with a source extension this indexer parses,
//! `.gitignore`/`.ignore` and hidden folders respected (as git would see the tree), files over a
//! size cap skipped. Paths come back relative to the root, `/`-separated, sorted, so two runs
//! over the same tree see the same files in the same order.

use std::path::{Path, PathBuf};

use crate::lang::Lang;

/// One file to parse.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Relative to the root, `/`-separated.
    pub rel: String,
    pub abs: PathBuf,
    pub lang: Lang,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Walk {
    pub files: Vec<SourceFile>,
    /// Files with a source extension over `max_bytes` (generated or vendored code, mostly).
    pub too_large: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("{0} is not a folder")]
    NotADir(String),
}

pub fn walk(root: &Path, max_bytes: u64) -> Result<Walk, WalkError> {
    if !root.is_dir() {
        return Err(WalkError::NotADir(root.display().to_string()));
    }
    let mut out = Walk::default();
    // require_git(false): a .gitignore counts even in a tree that is not a git checkout.
    let walker = ignore::WalkBuilder::new(root)
        .require_git(false)
        .follow_links(false)
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let abs = entry.path();
        let Some(lang) = Lang::of(abs) else { continue };
        let Ok(rel) = abs.strip_prefix(root) else {
            continue;
        };
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if entry.metadata().is_ok_and(|m| m.len() > max_bytes) {
            out.too_large.push(rel);
            continue;
        }
        out.files.push(SourceFile {
            rel,
            abs: abs.to_path_buf(),
            lang,
        });
    }
    out.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.too_large.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignored_hidden_foreign_and_large_files_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/gen")).unwrap();
        std::fs::create_dir_all(root.join(".hidden")).unwrap();
        std::fs::write(root.join(".gitignore"), "gen/\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn a() {}").unwrap();
        std::fs::write(root.join("src/gen/out.rs"), "fn b() {}").unwrap();
        std::fs::write(root.join(".hidden/x.py"), "def c(): pass").unwrap();
        std::fs::write(root.join("README.md"), "# hi").unwrap();
        std::fs::write(root.join("app.ts"), "function d() {}").unwrap();
        std::fs::write(root.join("big.py"), "x = 1\n".repeat(100)).unwrap();
        let w = walk(root, 100).unwrap();
        let rels: Vec<_> = w.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, ["app.ts", "src/lib.rs"]);
        assert_eq!(w.too_large, ["big.py"]);
        assert!(walk(&root.join("README.md"), 100).is_err());
    }
}
