//! The INHERITS and CALLS relationships, resolved by name once every definition and import is
//! known: a class's bases and a Rust impl's trait; a call's callee by its form (plain,
//! on self, qualified), never by a receiver whose type is unknown.

use super::{Binding, Builder, key};
use crate::facts::{Callee, DefKind, Owner};
use crate::graph::{Key, Label, Rel};
use crate::lang::Lang;

impl Builder<'_> {
    pub(super) fn inherits(&mut self) {
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

    pub(super) fn calls(&mut self) {
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
