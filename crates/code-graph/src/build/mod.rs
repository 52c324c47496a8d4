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
//!
//! One file per step of the build:
//!
//! ```text
//! mod.rs        the inputs, build(), and the Builder's tables
//! nodes.rs      containment and definitions: every node, CONTAINS_* and DEFINES*
//! imports.rs    what each import binds, and the IMPORTS relationships
//! modules.rs    which module of the project an import path names (Rust, Python, ES)
//! names.rs      what a name stands for: a class, a function of a module, a method
//! relations.rs  INHERITS and CALLS
//! ```

mod imports;
mod modules;
mod names;
mod nodes;
mod relations;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::facts::FileFacts;
use crate::graph::{Graph, Key, Label};
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Rel;
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
