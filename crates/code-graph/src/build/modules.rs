//! Which module of the project an import names: a Rust path (`crate::`, `self::`, `super::`,
//! a child module, or a crate of this workspace by its Cargo.toml), a Python module (absolute,
//! by unique suffix, or relative), an ES module specifier (relative only).

use super::{Builder, file_name, parent_dir};

impl Builder<'_> {
    /// A Rust file's crate: the nearest folder above it (or its own) holding lib.rs or main.rs,
    /// and its module path within that crate.
    fn rust_place(&self, rel: &str) -> Option<(String, Vec<String>)> {
        let mut dir = parent_dir(rel);
        // Each file directly in tests/, examples/, benches/ or src/bin/ is a crate root of
        // its own: its module path is empty, and `crate::` is the file itself.
        if matches!(file_name(dir), "tests" | "examples" | "benches") || dir.ends_with("src/bin") {
            return Some((dir.to_owned(), Vec::new()));
        }
        loop {
            let has_root = |f: &str| {
                let p = if dir.is_empty() {
                    f.to_owned()
                } else {
                    format!("{dir}/{f}")
                };
                self.files.iter().any(|x| x.rel == p)
            };
            if has_root("lib.rs") || has_root("main.rs") {
                let inner = if dir.is_empty() {
                    rel
                } else {
                    &rel[dir.len() + 1..]
                };
                let stem = inner.strip_suffix(".rs").unwrap_or(inner);
                let mut segs: Vec<String> = stem.split('/').map(str::to_owned).collect();
                if segs.last().is_some_and(|s| s == "mod") {
                    segs.pop();
                }
                if segs.len() == 1 && (segs[0] == "lib" || segs[0] == "main") {
                    segs.clear();
                }
                return Some((dir.to_owned(), segs));
            }
            if dir.is_empty() {
                return None;
            }
            dir = parent_dir(dir);
        }
    }

    /// The module a Rust path names, from file `i`; None outside the project.
    pub(super) fn rust_module(&self, i: usize, path: &[String]) -> Option<String> {
        let rel = &self.files[i].rel;
        let (mut dir, here) = self.rust_place(rel)?;
        let mut own_root = here.is_empty()
            && !rel.ends_with("/lib.rs")
            && !rel.ends_with("/main.rs")
            && rel != "lib.rs"
            && rel != "main.rs";
        let mut segs: Vec<String>;
        let mut rest = path;
        match path.first().map(String::as_str) {
            Some("crate") => {
                segs = Vec::new();
                rest = &path[1..];
            }
            Some("self") => {
                segs = here;
                rest = &path[1..];
            }
            Some("super") => {
                segs = here;
                while rest.first().is_some_and(|s| s == "super") {
                    segs.pop();
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                if let Some(d) = self.crate_dir(first) {
                    dir = d;
                    own_root = false;
                    segs = Vec::new();
                    rest = &path[1..];
                } else {
                    // a child module (`mod x;` then `x::f`), else outside the project
                    segs = here;
                }
            }
            None => segs = here,
        }
        let same_crate = segs.is_empty() && rest.is_empty();
        segs.extend(rest.iter().cloned());
        if own_root && same_crate {
            return Some(self.modules[i].clone());
        }
        self.rust_file(&dir, &segs)
    }

    /// The module of crate folder `dir` at module path `segs`.
    fn rust_file(&self, dir: &str, segs: &[String]) -> Option<String> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let candidates: Vec<String> = if segs.is_empty() {
            vec![format!("{prefix}lib.rs"), format!("{prefix}main.rs")]
        } else {
            let s = segs.join("/");
            vec![format!("{prefix}{s}.rs"), format!("{prefix}{s}/mod.rs")]
        };
        candidates.iter().find_map(|c| {
            self.files
                .iter()
                .position(|f| f.rel == *c)
                .map(|i| self.modules[i].clone())
        })
    }

    /// The source folder of a crate of this workspace, by the name `use` gives it
    /// (`mcp_http_gateway` for package `mcp-http-gateway`), read from its Cargo.toml.
    fn crate_dir(&self, ident: &str) -> Option<String> {
        for f in self.files {
            let Some(pkg) = f.rel.strip_suffix("src/lib.rs") else {
                continue;
            };
            let manifest = self.root.join(pkg).join("Cargo.toml");
            let Ok(text) = std::fs::read_to_string(manifest) else {
                continue;
            };
            if package_name(&text).is_some_and(|n| n.replace('-', "_") == ident) {
                return Some(format!("{pkg}src"));
            }
        }
        None
    }

    /// A Python module by its import name (leading dots: relative to the file's package).
    pub(super) fn python_module(&self, i: usize, name: &str) -> Option<String> {
        let dots = name.chars().take_while(|c| *c == '.').count();
        let rest = &name[dots..];
        let as_path = rest.replace('.', "/");
        let lookup = |path: &str| -> Option<String> {
            for cand in [format!("{path}.py"), format!("{path}/__init__.py")] {
                let cand = cand.trim_start_matches('/').to_owned();
                if let Some(j) = self.files.iter().position(|f| f.rel == cand) {
                    return Some(self.modules[j].clone());
                }
            }
            None
        };
        if dots > 0 {
            let mut dir = parent_dir(&self.files[i].rel).to_owned();
            for _ in 1..dots {
                dir = parent_dir(&dir).to_owned();
            }
            let path = match (dir.is_empty(), as_path.is_empty()) {
                (_, true) => return lookup(&dir).or_else(|| Some(self.package_module(&dir))),
                (true, false) => as_path,
                (false, false) => format!("{dir}/{as_path}"),
            };
            return lookup(&path);
        }
        if let Some(m) = lookup(&as_path) {
            return Some(m);
        }
        // A source root below the project root (src/, lib/): the one module ending so.
        let tail_py = format!("/{as_path}.py");
        let tail_init = format!("/{as_path}/__init__.py");
        let found: Vec<usize> = (0..self.files.len())
            .filter(|j| {
                let r = &self.files[*j].rel;
                r.ends_with(&tail_py) || r.ends_with(&tail_init)
            })
            .collect();
        match found.as_slice() {
            [only] => Some(self.modules[*only].clone()),
            _ => None,
        }
    }

    /// `from . import x` in a folder without __init__.py: the folder itself is no module.
    fn package_module(&self, dir: &str) -> String {
        format!("{}.{}", self.project, dir.replace('/', "."))
    }

    /// An ES module by a relative specifier (`./x`, `../y/index.js`); bare ones are packages.
    pub(super) fn es_module(&self, i: usize, spec: &str) -> Option<String> {
        if !spec.starts_with('.') {
            return None;
        }
        let mut parts: Vec<&str> = parent_dir(&self.files[i].rel)
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        for seg in spec.split('/') {
            match seg {
                "." | "" => {}
                ".." => {
                    parts.pop()?;
                }
                s => parts.push(s),
            }
        }
        let path = parts.join("/");
        let stem = [".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx"]
            .iter()
            .find_map(|e| path.strip_suffix(e))
            .unwrap_or(&path);
        let exts = ["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"];
        let mut candidates = vec![path.clone()];
        candidates.extend(exts.iter().map(|e| format!("{stem}.{e}")));
        candidates.extend(exts.iter().map(|e| format!("{path}/index.{e}")));
        candidates.iter().find_map(|c| {
            self.files
                .iter()
                .position(|f| f.rel == *c)
                .map(|j| self.modules[j].clone())
        })
    }
}

/// `name = "…"` of a Cargo.toml's [package] table.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if in_package
            && let Some(v) = line.strip_prefix("name")
            && let Some(v) = v.trim_start().strip_prefix('=')
        {
            return Some(v.trim().trim_matches('"').to_owned());
        }
    }
    None
}
