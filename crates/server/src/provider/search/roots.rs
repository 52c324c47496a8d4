//! The searched folders: each root as configured (expanded, resolved against the config
//! file's folder, its globs compiled), which of its files are indexed (`.gitignore` and
//! `.ignore` respected, `.git/` never, include/exclude globs), how a file is named in answers,
//! and the one way a caller's path becomes a file: confined to its root.

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::config::{RootKind, SearchRoot, expand_env};

/// What `docs` roots index when they name no `include`.
const DOCS_DEFAULT: &[&str] = &["**/*.md", "**/*.markdown", "**/*.rst", "**/*.txt"];

/// One searched folder.
#[derive(Debug, Clone)]
pub struct Root {
    /// As resolved (symlinks followed when it exists), absolute.
    pub path: PathBuf,
    pub kind: RootKind,
    /// Prefix of its files' names in answers: empty when it is the provider's only root of
    /// its kind, else its folder name (made unique).
    pub label: String,
    include: Option<GlobSet>,
    exclude: GlobSet,
}

/// Why a caller's path was refused (`NoRoot` is a file not found, the others a refusal).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("path '{0}' is absolute; give a path relative to a root")]
    Absolute(String),
    #[error("path '{0}' contains '..'; paths are confined to the roots")]
    ParentDir(String),
    #[error("path '{0}' leaves its root (through a symbolic link)")]
    Escapes(String),
    #[error("no root is named '{0}' (with several roots, a path starts with its root's name)")]
    NoRoot(String),
}

/// Why the roots could not be read from the config.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("root '{path}': {message}")]
    Invalid { path: String, message: String },
}

fn globs(patterns: &[impl AsRef<str>]) -> Result<GlobSet, globset::Error> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(Glob::new(p.as_ref())?);
    }
    set.build()
}

/// The roots of a provider: each entry's path expanded (`${VAR}`, then split on `:`) and made
/// absolute against `base_dir`. A folder that does not exist is kept (reported missing).
pub fn resolve(entries: &[SearchRoot], base_dir: &Path) -> Result<Vec<Root>, RootError> {
    let mut roots = Vec::new();
    for entry in entries {
        let invalid = |message: String| RootError::Invalid {
            path: entry.path.clone(),
            message,
        };
        let expanded = expand_env(&entry.path).map_err(|e| invalid(e.to_string()))?;
        let include = match (entry.include.is_empty(), entry.kind) {
            (false, _) => Some(globs(&entry.include)),
            (true, RootKind::Docs) => Some(globs(DOCS_DEFAULT)),
            (true, RootKind::Code) => None,
        }
        .transpose()
        .map_err(|e| invalid(e.to_string()))?;
        let exclude = globs(&entry.exclude).map_err(|e| invalid(e.to_string()))?;
        for part in expanded.split(':').filter(|p| !p.trim().is_empty()) {
            let path = base_dir.join(part.trim());
            let path = std::fs::canonicalize(&path).unwrap_or_else(|_| normalize(&path));
            roots.push(Root {
                path,
                kind: entry.kind,
                label: String::new(),
                include: include.clone(),
                exclude: exclude.clone(),
            });
        }
    }
    if roots.is_empty() {
        return Err(RootError::Invalid {
            path: String::new(),
            message: "no folder given".into(),
        });
    }
    // Labels only where a kind has several roots: then answers need to say which.
    for kind in [RootKind::Code, RootKind::Docs] {
        let of_kind: Vec<usize> = (0..roots.len())
            .filter(|&i| roots[i].kind == kind)
            .collect();
        if of_kind.len() < 2 {
            continue;
        }
        let mut taken: Vec<String> = Vec::new();
        for i in of_kind {
            let base = roots[i]
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "root".into());
            let mut label = base.clone();
            let mut n = 2;
            while taken.contains(&label) {
                label = format!("{base}-{n}");
                n += 1;
            }
            taken.push(label.clone());
            roots[i].label = label;
        }
    }
    Ok(roots)
}

/// `..` and `.` resolved by text (for a path that does not exist, so cannot be canonicalized).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

impl Root {
    /// Whether a file (relative to the root, `/`-separated) passes the globs.
    pub fn wanted(&self, relative: &str) -> bool {
        self.include.as_ref().is_none_or(|s| s.is_match(relative))
            && !self.exclude.is_match(relative)
    }

    /// A file's name in answers: `label/relative`, or `relative` when the root has no label.
    pub fn name_of(&self, file: &Path) -> Option<String> {
        let relative = file.strip_prefix(&self.path).ok()?;
        let relative = relative.to_str()?.replace(std::path::MAIN_SEPARATOR, "/");
        Some(if self.label.is_empty() {
            relative
        } else if relative.is_empty() {
            self.label.clone()
        } else {
            format!("{}/{relative}", self.label)
        })
    }

    /// The indexable files under `dir` (the root or a folder in it), recursively or just its
    /// direct entries: `.gitignore`/`.ignore` files of the root and above `dir` apply (also
    /// outside a git repository), hidden files are included but `.git/` is not, symbolic
    /// links are not followed, and the root's globs decide.
    pub fn walk(&self, dir: &Path, recursive: bool) -> Vec<PathBuf> {
        let mut builder = ignore::WalkBuilder::new(dir);
        builder
            .hidden(false)
            .follow_links(false)
            .require_git(false)
            .git_global(false)
            .parents(true)
            .filter_entry(|e| e.file_name() != ".git");
        if !recursive {
            builder.max_depth(Some(1));
        }
        builder
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| e.into_path())
            .filter(|p| {
                p.strip_prefix(&self.path)
                    .ok()
                    .and_then(|r| r.to_str())
                    .is_some_and(|r| self.wanted(&r.replace(std::path::MAIN_SEPARATOR, "/")))
            })
            .collect()
    }

    /// Whether a path under the root is one the walk would reach: every folder on the way and
    /// the path itself are listed (not ignored) in their parent, and a file passes the globs.
    /// Asking the walker folder by folder is what makes an ignored folder's files ignored too
    /// (the walker only skips descending into it).
    pub fn admits(&self, path: &Path) -> bool {
        let Ok(relative) = path.strip_prefix(&self.path) else {
            return false;
        };
        let mut dir = self.path.clone();
        for component in relative.components() {
            let child = dir.join(component);
            let listed = ignore::WalkBuilder::new(&dir)
                .hidden(false)
                .follow_links(false)
                .require_git(false)
                .git_global(false)
                .parents(true)
                .max_depth(Some(1))
                .filter_entry(|e| e.file_name() != ".git")
                .build()
                .flatten()
                .any(|e| e.path() == child);
            if !listed {
                return false;
            }
            dir = child;
        }
        path.is_dir()
            || relative
                .to_str()
                .is_some_and(|r| self.wanted(&r.replace(std::path::MAIN_SEPARATOR, "/")))
    }

    pub fn exists(&self) -> bool {
        self.path.is_dir()
    }
}

/// A caller's file name → the root it is under and the file on disk. Refused: an absolute
/// path, any `..`, a label that names no root, and a path whose resolution (symlinks
/// followed) ends outside its root. A file that does not exist is `Ok` (the caller says
/// "not found").
pub fn confine<'r>(
    roots: &'r [Root],
    kind: RootKind,
    name: &str,
) -> Result<(&'r Root, PathBuf), PathError> {
    let path = Path::new(name);
    if path.is_absolute() || name.starts_with('/') || name.starts_with('\\') {
        return Err(PathError::Absolute(name.to_owned()));
    }
    if path.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::Prefix(_) | Component::RootDir
        )
    }) {
        return Err(PathError::ParentDir(name.to_owned()));
    }
    let of_kind: Vec<&Root> = roots.iter().filter(|r| r.kind == kind).collect();
    let (root, relative) = match of_kind.as_slice() {
        [only] if only.label.is_empty() => (*only, name),
        _ => {
            let (label, rest) = name.split_once('/').unwrap_or((name, ""));
            let root = of_kind
                .iter()
                .find(|r| r.label == label)
                .ok_or_else(|| PathError::NoRoot(label.to_owned()))?;
            (*root, rest)
        }
    };
    let file = root.path.join(relative);
    // Symlinks: what the path really is must stay under the root.
    match std::fs::canonicalize(&file) {
        Ok(real) if !real.starts_with(&root.path) => Err(PathError::Escapes(name.to_owned())),
        Ok(real) => Ok((root, real)),
        Err(_) => {
            // A dangling link (or a missing file): judge the link's target by text.
            if let Ok(target) = std::fs::read_link(&file) {
                let target = normalize(&file.parent().unwrap_or(&root.path).join(target));
                if !target.starts_with(&root.path) {
                    return Err(PathError::Escapes(name.to_owned()));
                }
            }
            Ok((root, file))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(dir: &Path, kind: RootKind, include: &[&str], exclude: &[&str]) -> Vec<Root> {
        resolve(
            &[SearchRoot {
                path: dir.to_string_lossy().into_owned(),
                kind,
                include: include.iter().map(|s| s.to_string()).collect(),
                exclude: exclude.iter().map(|s| s.to_string()).collect(),
            }],
            Path::new("/"),
        )
        .unwrap()
    }

    #[test]
    fn walking_respects_gitignore_globs_and_skips_git() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::create_dir_all(d.join(".git")).unwrap();
        std::fs::create_dir_all(d.join("target")).unwrap();
        std::fs::write(d.join(".gitignore"), "target/\n*.log\n").unwrap();
        for f in [
            "src/a.rs",
            "src/b.log",
            "target/x.rs",
            ".git/config",
            "README.md",
            "gen.rs",
        ] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        let roots = root(d, RootKind::Code, &[], &["gen.rs"]);
        let mut names: Vec<String> = roots[0]
            .walk(&roots[0].path, true)
            .iter()
            .filter_map(|p| roots[0].name_of(p))
            .collect();
        names.sort();
        assert_eq!(names, [".gitignore", "README.md", "src/a.rs"]);
        let docs = root(d, RootKind::Docs, &[], &[]);
        let names: Vec<String> = docs[0]
            .walk(&docs[0].path, true)
            .iter()
            .filter_map(|p| docs[0].name_of(p))
            .collect();
        assert_eq!(names, ["README.md"]);
        // One path at a time, as read_file and the watcher ask.
        let code = &roots[0];
        assert!(code.admits(&d.join("src/a.rs")));
        assert!(code.admits(&d.join("src")));
        assert!(
            !code.admits(&d.join("target/x.rs")),
            "inside an ignored folder"
        );
        assert!(!code.admits(&d.join("target")));
        assert!(!code.admits(&d.join("src/b.log")));
        assert!(!code.admits(&d.join(".git/config")));
        assert!(!code.admits(&d.join("gen.rs")), "excluded by glob");
    }

    #[test]
    fn paths_are_confined_to_their_root() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::write(d.join("src/a.rs"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), d.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.join("dirlink")).unwrap();
        std::os::unix::fs::symlink(d.join("src/a.rs"), d.join("inner")).unwrap();
        let roots = root(d, RootKind::Code, &[], &[]);
        let ok = |n: &str| confine(&roots, RootKind::Code, n).map(|(_, p)| p);
        assert!(ok("src/a.rs").unwrap().ends_with("src/a.rs"));
        assert!(
            ok("inner").unwrap().ends_with("src/a.rs"),
            "a link inside stays inside"
        );
        assert!(matches!(ok("../x"), Err(PathError::ParentDir(_))));
        assert!(matches!(ok("src/../../x"), Err(PathError::ParentDir(_))));
        assert!(matches!(ok("/etc/passwd"), Err(PathError::Absolute(_))));
        assert!(matches!(ok("link"), Err(PathError::Escapes(_))));
        assert!(matches!(ok("dirlink/secret"), Err(PathError::Escapes(_))));
        assert!(
            ok("missing.rs").is_ok(),
            "not found is the caller's answer, not a refusal"
        );
    }

    #[test]
    fn several_roots_of_a_kind_are_named_by_folder() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(b.path().join("f.rs"), "x").unwrap();
        let joined = format!("{}:{}", a.path().display(), b.path().display());
        let roots = resolve(
            &[SearchRoot {
                path: joined,
                kind: RootKind::Code,
                include: vec![],
                exclude: vec![],
            }],
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(roots.len(), 2);
        let label = roots[1].label.clone();
        assert!(!label.is_empty());
        let (found, _) = confine(&roots, RootKind::Code, &format!("{label}/f.rs")).unwrap();
        assert_eq!(found.path, roots[1].path);
        assert!(matches!(
            confine(&roots, RootKind::Code, "nope/f.rs"),
            Err(PathError::NoRoot(_))
        ));
    }
}
