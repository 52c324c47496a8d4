//! What each file's imports bind: a name to a module or to an item of a module, a glob to a
//! module, or a name to something outside the project; and the IMPORTS relationships.

use super::{Binding, Builder, key};
use crate::graph::{Label, Rel};
use crate::lang::Lang;

impl Builder<'_> {
    pub(super) fn imports(&mut self) {
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

    pub(super) fn resolve_imports(&mut self, i: usize) {
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
}
