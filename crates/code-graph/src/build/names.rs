//! What a name stands for, seen from a file: the class it names, the function of a module
//! (followed through re-exports and globs), the method of a class or of its bases.

use super::{Binding, Builder};
use crate::graph::{Key, Rel};

impl Builder<'_> {
    /// The class a name stands for in file `i`: imported, else of the same module, else the
    /// only class with that name in the project.
    pub(super) fn class_named(&self, i: usize, name: &str) -> Option<String> {
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

    /// A method of a class or of its bases (nearest first, at most 5 levels up).
    pub(super) fn method_of(&self, class: &str, name: &str) -> Option<Key> {
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
    pub(super) fn through<T>(
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
    pub(super) fn function_in(&self, module: &str, name: &str) -> Option<Key> {
        let list = self.functions.get(&(module.to_owned(), name.to_owned()))?;
        let top = format!("{module}.{name}");
        list.iter()
            .find(|(_, q)| *q == top)
            .or(if list.len() == 1 { list.first() } else { None })
            .cloned()
    }
}
