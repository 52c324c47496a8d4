//! The nodes of the graph and the tree that holds them: Project → Package/Folder → File and
//! Module (CONTAINS_*), then each file's classes, functions and methods (DEFINES,
//! DEFINES_METHOD), with the lookup tables the resolution by name reads.

use std::collections::HashSet;

use super::{Builder, file_name, key, parent_dir};
use crate::facts::{DefKind, Owner};
use crate::graph::{Key, Label, Props, Rel};

impl Builder<'_> {
    /// Project → folders/packages → files and modules.
    pub(super) fn containment(&mut self) {
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
    pub(super) fn definitions(&mut self) {
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
}
