//! From every file's facts to one graph in code-graph-rag's schema: qualified names, the
//! containment tree (Project → Package/Folder → Module/File), DEFINES / DEFINES_METHOD, and the
//! cross-file relationships, resolved by name:
//!
//! - IMPORTS: a Rust `use` path (`crate::`, `self::`, `super::`, or a crate of this workspace),
//!   a Python module (absolute from the root or by unique suffix, or relative with dots), an ES
//!   module specifier (relative only). Imports of code outside the project are not nodes.
//! - CALLS: `f()` → a function of the caller's module, then a name the module imports (or a
//!   glob it imports); `self.m()` / `this.m()` / `Self::m()` → a method of the caller's class
//!   (or of its bases); `T::f()` / `T.f()` → a method of class T, or a function of module T.
//!   A call on any other receiver (`x.m()`) is NOT linked: its type is unknown without type
//!   inference, and a guess by name alone would link `v.len()` to whatever `len` the project
//!   defines.
//! - INHERITS: a class's bases, a Rust `impl Trait for Type`, a trait's supertraits: by the
//!   imported name, else a class of the same module, else the one class of that name.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::facts::{Callee, DefKind, FileFacts, Owner};
use crate::graph::{Graph, Key, Label, Props, Rel};
use crate::lang::Lang;

/// One parsed file.
pub struct Input {
    /// Relative to the project root, `/`-separated.
    pub rel: String,
    pub lang: Lang,
    pub facts: FileFacts,
}

/// What a name imported into a file stands for.
#[derive(Debug, Clone)]
enum Binding {
    Module(String),
    Item { module: String, name: String },
}

/// A module's qualified name: the project, then the path without its extension, dotted.
pub fn module_qn(project: &str, rel: &str) -> String {
    let stem = rel.rsplit_once('.').map_or(rel, |(s, _)| s);
    format!("{project}.{}", stem.replace('/', "."))
}

fn parent_dir(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

fn file_name(rel: &str) -> &str {
    rel.rsplit_once('/').map_or(rel, |(_, f)| f)
}

fn key(label: Label, qn: &str) -> Key {
    (label, qn.to_owned())
}

/// The project's name and the folder it was read from.
pub struct Project<'a> {
    pub name: &'a str,
    pub root: &'a Path,
}

pub fn build(project: &Project, files: &[Input]) -> Graph {
    let mut b = Builder::new(project, files);
    b.containment();
    b.definitions();
    b.imports();
    b.inherits();
    b.calls();
    b.graph
}

struct Builder<'a> {
    project: &'a str,
    root: &'a Path,
    files: &'a [Input],
    graph: Graph,
    modules: Vec<String>,
    /// Per file, per definition: its node.
    defs: Vec<Vec<Key>>,
    /// (module, name) → functions of that module with that name (outermost first).
    functions: HashMap<(String, String), Vec<Key>>,
    /// (module, name) → the class of that module with that name.
    classes: HashMap<(String, String), String>,
    /// name → every class with that name.
    classes_by_name: HashMap<String, Vec<String>>,
    /// (class, method name) → the method.
    methods: HashMap<(String, String), Key>,
    /// Per file: the names its imports bind, and the modules it glob-imports.
    bindings: Vec<HashMap<String, Binding>>,
    globs: Vec<Vec<String>>,
    /// Per file, per definition: the class a method belongs to (resolved for Rust impls).
    class_of: Vec<Vec<Option<String>>>,
    /// Module → its file.
    file_of: HashMap<String, usize>,
    /// Per file: the names its imports bind to something outside the project (`use
    /// serde::de::Visitor`), which no project class of the same name may stand in for.
    external: Vec<HashSet<String>>,
}

impl<'a> Builder<'a> {
    fn new(project: &'a Project, files: &'a [Input]) -> Builder<'a> {
        Builder {
            project: project.name,
            root: project.root,
            files,
            graph: Graph::default(),
            modules: files
                .iter()
                .map(|f| module_qn(project.name, &f.rel))
                .collect(),
            defs: Vec::new(),
            functions: HashMap::new(),
            classes: HashMap::new(),
            classes_by_name: HashMap::new(),
            methods: HashMap::new(),
            bindings: vec![HashMap::new(); files.len()],
            globs: vec![Vec::new(); files.len()],
            class_of: Vec::new(),
            external: vec![HashSet::new(); files.len()],
            file_of: files
                .iter()
                .enumerate()
                .map(|(i, f)| (module_qn(project.name, &f.rel), i))
                .collect(),
        }
    }

    /// Project → folders/packages → files and modules.
    fn containment(&mut self) {
        let p = self.project;
        self.graph.node(
            Label::Project,
            p,
            Props {
                name: p.to_owned(),
                path: ".".into(),
                lines: None,
                extension: None,
            },
        );
        let packages: HashSet<&str> = self
            .files
            .iter()
            .filter(|f| file_name(&f.rel) == "__init__.py")
            .map(|f| parent_dir(&f.rel))
            .collect();
        let container = |dir: &str| -> Key {
            if dir.is_empty() {
                key(Label::Project, p)
            } else if packages.contains(dir) {
                (Label::Package, format!("{p}.{}", dir.replace('/', ".")))
            } else {
                (Label::Folder, format!("{p}/{dir}"))
            }
        };
        let mut dirs: Vec<&str> = Vec::new();
        for f in self.files {
            let mut d = parent_dir(&f.rel);
            while !d.is_empty() && !dirs.contains(&d) {
                dirs.push(d);
                d = parent_dir(d);
            }
        }
        dirs.sort();
        for d in &dirs {
            let (label, qn) = container(d);
            self.graph.node(
                label,
                &qn,
                Props {
                    name: file_name(d).to_owned(),
                    path: (*d).to_owned(),
                    lines: None,
                    extension: None,
                },
            );
        }
        for d in &dirs {
            let child = container(d);
            let rel = if child.0 == Label::Package {
                Rel::ContainsPackage
            } else {
                Rel::ContainsFolder
            };
            self.graph.rel(rel, container(parent_dir(d)), child);
        }
        for (i, f) in self.files.iter().enumerate() {
            let name = file_name(&f.rel);
            let file_qn = format!("{p}/{}", f.rel);
            self.graph.node(
                Label::File,
                &file_qn,
                Props {
                    name: name.to_owned(),
                    path: f.rel.clone(),
                    lines: None,
                    extension: name.rsplit_once('.').map(|(_, e)| format!(".{e}")),
                },
            );
            let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
            self.graph.node(
                Label::Module,
                &self.modules[i],
                Props {
                    name: stem.to_owned(),
                    path: f.rel.clone(),
                    lines: None,
                    extension: None,
                },
            );
            let dir = container(parent_dir(&f.rel));
            self.graph
                .rel(Rel::ContainsFile, dir.clone(), key(Label::File, &file_qn));
            self.graph.rel(
                Rel::ContainsModule,
                dir,
                key(Label::Module, &self.modules[i]),
            );
        }
    }

    /// Class, Function and Method nodes, and the lookup tables the resolution uses.
    fn definitions(&mut self) {
        for (i, f) in self.files.iter().enumerate() {
            let module = &self.modules[i];
            let mut keys = Vec::new();
            for d in &f.facts.defs {
                let label = match d.kind {
                    DefKind::Class => Label::Class,
                    DefKind::Function => Label::Function,
                    DefKind::Method => Label::Method,
                };
                let qn = format!("{module}.{}", d.local_name);
                self.graph.node(
                    label,
                    &qn,
                    Props {
                        name: d.name.clone(),
                        path: f.rel.clone(),
                        lines: Some((d.start_line, d.end_line)),
                        extension: None,
                    },
                );
                match d.kind {
                    DefKind::Class => {
                        self.classes
                            .entry((module.clone(), d.name.clone()))
                            .or_insert_with(|| qn.clone());
                        self.classes_by_name
                            .entry(d.name.clone())
                            .or_default()
                            .push(qn.clone());
                    }
                    DefKind::Function => {
                        let list = self
                            .functions
                            .entry((module.clone(), d.name.clone()))
                            .or_default();
                        if !list.iter().any(|(_, q)| *q == qn) {
                            list.push(key(label, &qn));
                        }
                    }
                    DefKind::Method => {}
                }
                keys.push(key(label, &qn));
            }
            self.defs.push(keys);
        }
        // Imports are needed to find the class of a Rust impl in another file.
        for i in 0..self.files.len() {
            self.resolve_imports(i);
        }
        for (i, f) in self.files.iter().enumerate() {
            let module = self.modules[i].clone();
            let mut class_of = Vec::new();
            for (j, d) in f.facts.defs.iter().enumerate() {
                let class = match &d.owner {
                    Owner::Def(o) if f.facts.defs[*o].kind == DefKind::Class => {
                        Some(self.defs[i][*o].1.clone())
                    }
                    Owner::TypeName(t) => self.class_named(i, t),
                    _ => None,
                };
                let node = self.defs[i][j].clone();
                let owner: Key = match (&d.owner, &class) {
                    (_, Some(c)) if d.kind == DefKind::Method => {
                        self.methods
                            .entry((c.clone(), d.name.clone()))
                            .or_insert_with(|| node.clone());
                        key(Label::Class, c)
                    }
                    (Owner::Def(o), _) => self.defs[i][*o].clone(),
                    _ => key(Label::Module, &module),
                };
                let rel = if owner.0 == Label::Class && d.kind == DefKind::Method {
                    Rel::DefinesMethod
                } else {
                    Rel::Defines
                };
                self.graph.rel(rel, owner, node);
                class_of.push(class);
            }
            self.class_of.push(class_of);
        }
    }

    /// The class a name stands for in file `i`: imported, else of the same module, else the
    /// only class with that name in the project.
    fn class_named(&self, i: usize, name: &str) -> Option<String> {
        if let Some(Binding::Item { module, name: item }) = self.bindings[i].get(name)
            && let Some(c) = self.through(module, item, 0, &|m, n| {
                self.classes.get(&(m.to_owned(), n.to_owned())).cloned()
            })
        {
            return Some(c);
        }
        if self.external[i].contains(name) {
            return None;
        }
        if let Some(c) = self
            .classes
            .get(&(self.modules[i].clone(), name.to_owned()))
        {
            return Some(c.clone());
        }
        for g in &self.globs[i] {
            if let Some(c) = self.classes.get(&(g.clone(), name.to_owned())) {
                return Some(c.clone());
            }
        }
        match self.classes_by_name.get(name).map(Vec::as_slice) {
            Some([only]) => Some(only.clone()),
            _ => None,
        }
    }

    fn imports(&mut self) {
        for i in 0..self.files.len() {
            let from = key(Label::Module, &self.modules[i]);
            let mut targets: Vec<String> = self.globs[i].clone();
            for b in self.bindings[i].values() {
                match b {
                    Binding::Module(m) => targets.push(m.clone()),
                    Binding::Item { module, .. } => targets.push(module.clone()),
                }
            }
            for t in targets {
                if t != from.1 {
                    self.graph
                        .rel(Rel::Imports, from.clone(), key(Label::Module, &t));
                }
            }
        }
    }

    fn resolve_imports(&mut self, i: usize) {
        let f = &self.files[i];
        for imp in &f.facts.imports {
            let base: Option<String> = match f.lang {
                Lang::Rust => self.rust_module(i, &imp.module),
                Lang::Python => self.python_module(i, imp.module.first().map_or("", |s| s)),
                _ => self.es_module(i, imp.module.first().map_or("", |s| s)),
            };
            if imp.names.is_empty() {
                if let Some(m) = base {
                    self.globs[i].push(m);
                }
                continue;
            }
            for (local, item) in &imp.names {
                let binding = match (item, &base) {
                    (None, Some(m)) => Some(Binding::Module(m.clone())),
                    (Some(name), Some(m)) => {
                        // `from pkg import mod` / `use crate::a::b` where b is a module
                        let sub = format!("{m}.{name}");
                        if self.modules.contains(&sub) && f.lang != Lang::Rust {
                            Some(Binding::Module(sub))
                        } else {
                            Some(Binding::Item {
                                module: m.clone(),
                                name: name.clone(),
                            })
                        }
                    }
                    (Some(name), None) if f.lang == Lang::Rust => {
                        // `use crate::a::b` where the whole path is a module
                        let mut full = imp.module.clone();
                        full.push(name.clone());
                        self.rust_module(i, &full).map(Binding::Module)
                    }
                    _ => None,
                };
                match binding {
                    Some(b) => {
                        self.bindings[i].insert(local.clone(), b);
                    }
                    None => {
                        self.external[i].insert(local.clone());
                    }
                }
            }
            // A Rust path naming a module is a module import, not an item of its parent.
            if f.lang == Lang::Rust {
                for (local, item) in &imp.names {
                    if let Some(name) = item {
                        let mut full = imp.module.clone();
                        full.push(name.clone());
                        if let Some(m) = self.rust_module(i, &full) {
                            self.external[i].remove(local);
                            self.bindings[i].insert(local.clone(), Binding::Module(m));
                        }
                    }
                }
            }
        }
    }

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
    fn rust_module(&self, i: usize, path: &[String]) -> Option<String> {
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
    fn python_module(&self, i: usize, name: &str) -> Option<String> {
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
    fn es_module(&self, i: usize, spec: &str) -> Option<String> {
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

    fn inherits(&mut self) {
        for (i, f) in self.files.iter().enumerate() {
            for (j, d) in f.facts.defs.iter().enumerate() {
                if d.kind != DefKind::Class {
                    continue;
                }
                for b in &d.bases {
                    if let Some(base) = self.class_named(i, b)
                        && base != self.defs[i][j].1
                    {
                        self.graph.rel(
                            Rel::Inherits,
                            self.defs[i][j].clone(),
                            key(Label::Class, &base),
                        );
                    }
                }
            }
            for (ty, tr) in &f.facts.impls {
                if let (Some(t), Some(r)) = (self.class_named(i, ty), self.class_named(i, tr))
                    && t != r
                {
                    self.graph
                        .rel(Rel::Inherits, key(Label::Class, &t), key(Label::Class, &r));
                }
            }
        }
    }

    fn calls(&mut self) {
        let mut found = Vec::new();
        for (i, f) in self.files.iter().enumerate() {
            for c in &f.facts.calls {
                let caller = self.defs[i][c.caller].clone();
                for target in self.resolve_call(i, c.caller, &c.callee) {
                    found.push((caller.clone(), target));
                }
            }
        }
        for (from, to) in found {
            self.graph.rel(Rel::Calls, from, to);
        }
    }

    /// A method of a class or of its bases (nearest first, at most 5 levels up).
    fn method_of(&self, class: &str, name: &str) -> Option<Key> {
        let mut level = vec![class.to_owned()];
        for _ in 0..5 {
            let mut next = Vec::new();
            for c in &level {
                if let Some(m) = self.methods.get(&(c.clone(), name.to_owned())) {
                    return Some(m.clone());
                }
                for (rel, from, to) in &self.graph.rels {
                    if *rel == Rel::Inherits && from.1 == *c {
                        next.push(to.1.clone());
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        None
    }

    /// `find(module, name)`, else through what that module re-exports under `name` (Rust
    /// `pub use`, Python `from x import y` in an `__init__`) or glob-imports, at most 5 hops.
    fn through<T>(
        &self,
        module: &str,
        name: &str,
        depth: usize,
        find: &dyn Fn(&str, &str) -> Option<T>,
    ) -> Option<T> {
        if let Some(t) = find(module, name) {
            return Some(t);
        }
        if depth >= 5 {
            return None;
        }
        let file = *self.file_of.get(module)?;
        if let Some(Binding::Item { module: m, name: n }) = self.bindings[file].get(name) {
            return self.through(m, n, depth + 1, find);
        }
        self.globs[file]
            .iter()
            .find_map(|g| self.through(g, name, depth + 1, find))
    }

    /// The function called `name` in `module`: one defined at the module's top level, else
    /// the only one of that name in it.
    fn function_in(&self, module: &str, name: &str) -> Option<Key> {
        let list = self.functions.get(&(module.to_owned(), name.to_owned()))?;
        let top = format!("{module}.{name}");
        list.iter()
            .find(|(_, q)| *q == top)
            .or(if list.len() == 1 { list.first() } else { None })
            .cloned()
    }

    /// The class whose methods `caller` may call as its own: its class, or the class of the
    /// definition it is nested in.
    fn own_class(&self, i: usize, mut j: usize) -> Option<String> {
        loop {
            if let Some(c) = &self.class_of[i][j] {
                return Some(c.clone());
            }
            match &self.files[i].facts.defs[j].owner {
                Owner::Def(o) => {
                    if self.files[i].facts.defs[*o].kind == DefKind::Class {
                        return Some(self.defs[i][*o].1.clone());
                    }
                    j = *o;
                }
                _ => return None,
            }
        }
    }

    fn resolve_call(&self, i: usize, caller: usize, callee: &Callee) -> Vec<Key> {
        let module = &self.modules[i];
        let caller_qn = &self.defs[i][caller].1;
        match callee {
            Callee::Plain(name) => {
                let nested = format!("{caller_qn}.{name}");
                if let Some(list) = self.functions.get(&(module.clone(), name.clone()))
                    && let Some(k) = list.iter().find(|(_, q)| *q == nested)
                {
                    return vec![k.clone()];
                }
                if let Some(k) = self.function_in(module, name) {
                    return vec![k];
                }
                let find = |m: &str, n: &str| self.function_in(m, n);
                if let Some(b) = self.bindings[i].get(name) {
                    return match b {
                        Binding::Item { module, name } => {
                            self.through(module, name, 0, &find).into_iter().collect()
                        }
                        Binding::Module(_) => Vec::new(),
                    };
                }
                self.globs[i]
                    .iter()
                    .find_map(|g| self.through(g, name, 0, &find))
                    .into_iter()
                    .collect()
            }
            Callee::OwnMethod(name) => self
                .own_class(i, caller)
                .and_then(|c| self.method_of(&c, name))
                .into_iter()
                .collect(),
            Callee::Qualified { qualifier, name } => {
                let find = |m: &str, n: &str| self.function_in(m, n);
                if let Some(Binding::Module(m)) = self.bindings[i].get(qualifier) {
                    return self.through(m, name, 0, &find).into_iter().collect();
                }
                if let Some(c) = self.class_named(i, qualifier) {
                    return self.method_of(&c, name).into_iter().collect();
                }
                // Rust `super::f()`, `crate::f()`, `child::f()`, `other_crate::f()`.
                if self.files[i].lang == Lang::Rust
                    && let Some(m) = self.rust_module(i, std::slice::from_ref(qualifier))
                {
                    return self.through(&m, name, 0, &find).into_iter().collect();
                }
                Vec::new()
            }
            Callee::Member(_) => Vec::new(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::parse;

    fn graph(files: &[(&str, &str)]) -> Graph {
        let dir = tempfile::tempdir().unwrap();
        let inputs: Vec<Input> = files
            .iter()
            .filter_map(|(rel, src)| {
                let path = dir.path().join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, src).unwrap();
                let lang = Lang::of(Path::new(rel))?;
                Some(Input {
                    rel: (*rel).to_owned(),
                    lang,
                    facts: parse(lang, src).unwrap(),
                })
            })
            .collect();
        build(
            &Project {
                name: "p",
                root: dir.path(),
            },
            &inputs,
        )
    }

    fn rels(g: &Graph, rel: Rel) -> Vec<(String, String)> {
        g.rels
            .iter()
            .filter(|(r, _, _)| *r == rel)
            .map(|(_, a, b)| (a.1.clone(), b.1.clone()))
            .collect()
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_owned(), b.to_owned())
    }

    #[test]
    fn rust_calls_imports_and_impls_across_files_and_crates() {
        let g = graph(&[
            ("util/Cargo.toml", "[package]\nname = \"my-util\"\n"),
            ("util/src/lib.rs", "pub mod ports;\npub use ports::free;\n"),
            ("util/src/ports.rs", "pub fn free() -> u16 { 0 }\n"),
            (
                "util/tests/it.rs",
                "mod common;\nuse my_util::free;\nfn t() { free(); crate::local(); common::setup(); }\nfn local() {}\n",
            ),
            ("util/tests/common/mod.rs", "pub fn setup() {}\n"),
            (
                "app/src/main.rs",
                "mod shape;\nuse my_util::free;\nuse serde::de::Visitor;\nuse crate::shape::{Shape, Square};\n\
                 fn main() { let s = Square::new(); s.area(); free(); shape::helper(); }\n\
                 struct Local;\nimpl Visitor for Local {}\n",
            ),
            (
                "app/src/shape.rs",
                "pub trait Shape { fn area(&self) -> u8; }\npub struct Square;\n\
                 impl Square { pub fn new() -> Self { Self::make() } fn make() -> Self { helper(); Square } }\n\
                 impl Shape for Square { fn area(&self) -> u8 { 1 } }\npub fn helper() {}\n\
                 #[cfg(test)] mod tests { use super::*; fn t() { helper(); } }\n",
            ),
        ]);
        let mut calls = rels(&g, Rel::Calls);
        calls.sort();
        assert_eq!(
            calls,
            [
                pair("p.app.src.main.main", "p.app.src.shape.Square.new"),
                pair("p.app.src.main.main", "p.app.src.shape.helper"),
                pair("p.app.src.main.main", "p.util.src.ports.free"),
                pair("p.app.src.shape.Square.make", "p.app.src.shape.helper"),
                pair("p.app.src.shape.Square.new", "p.app.src.shape.Square.make"),
                pair("p.app.src.shape.tests.t", "p.app.src.shape.helper"),
                pair("p.util.tests.it.t", "p.util.src.ports.free"),
                pair("p.util.tests.it.t", "p.util.tests.common.mod.setup"),
                pair("p.util.tests.it.t", "p.util.tests.it.local"),
            ],
            "s.area() (receiver of unknown type) is not linked"
        );
        assert_eq!(
            rels(&g, Rel::Inherits),
            [pair("p.app.src.shape.Square", "p.app.src.shape.Shape")],
            "serde's Visitor is not a project class"
        );
        let imports = rels(&g, Rel::Imports);
        assert!(imports.contains(&pair("p.app.src.main", "p.util.src.lib")));
        assert!(imports.contains(&pair("p.app.src.main", "p.app.src.shape")));
        assert!(imports.contains(&pair("p.util.src.lib", "p.util.src.ports")));
        assert!(
            g.rels.contains(&(
                Rel::DefinesMethod,
                (Label::Class, "p.app.src.shape.Square".into()),
                (Label::Method, "p.app.src.shape.Square.area".into())
            )),
            "a trait impl's method belongs to the type"
        );
        assert!(g.rels.contains(&(
            Rel::ContainsFolder,
            (Label::Project, "p".into()),
            (Label::Folder, "p/app".into())
        )));
    }

    #[test]
    fn python_and_typescript_calls_bases_and_packages() {
        let g = graph(&[
            ("shop/__init__.py", ""),
            (
                "shop/models.py",
                "class Base:\n    def save(self):\n        pass\n\nclass Order(Base):\n    def place(self):\n        self.save()\n",
            ),
            (
                "shop/api.py",
                "from .models import Order\nfrom . import models as m\nimport json\n\ndef handle():\n    Order.place(None)\n    m.Base()\n    json.dumps(1)\n",
            ),
            (
                "web/app.ts",
                "import { helper, Base } from './lib/util';\nexport class App extends Base { run() { helper(); this.stop(); } stop() {} }\n",
            ),
            (
                "web/lib/util.ts",
                "export function helper() {}\nexport class Base {}\n",
            ),
        ]);
        let mut calls = rels(&g, Rel::Calls);
        calls.sort();
        assert_eq!(
            calls,
            [
                pair("p.shop.api.handle", "p.shop.models.Order.place"),
                pair("p.shop.models.Order.place", "p.shop.models.Base.save"),
                pair("p.web.app.App.run", "p.web.app.App.stop"),
                pair("p.web.app.App.run", "p.web.lib.util.helper"),
            ]
        );
        let mut inherits = rels(&g, Rel::Inherits);
        inherits.sort();
        assert_eq!(
            inherits,
            [
                pair("p.shop.models.Order", "p.shop.models.Base"),
                pair("p.web.app.App", "p.web.lib.util.Base"),
            ]
        );
        assert!(g.nodes.contains_key(&(Label::Package, "p.shop".into())));
        assert!(g.rels.contains(&(
            Rel::ContainsModule,
            (Label::Package, "p.shop".into()),
            (Label::Module, "p.shop.api".into())
        )));
        let imports = rels(&g, Rel::Imports);
        assert!(imports.contains(&pair("p.shop.api", "p.shop.models")));
        assert!(imports.contains(&pair("p.web.app", "p.web.lib.util")));
    }
}
