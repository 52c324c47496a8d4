//! The graph to write: nodes keyed by (label, qualified_name), each once, and relationships
//! between them, each once. Adding what is already there is a no-op, which is what keeps a
//! re-index free of duplicates before anything reaches the database.

use std::collections::{BTreeMap, BTreeSet};

/// The node labels of the code-graph-rag schema that this indexer writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    Project,
    Package,
    Folder,
    File,
    Module,
    Class,
    Function,
    Method,
}

impl Label {
    pub const ALL: [Label; 8] = [
        Label::Project,
        Label::Package,
        Label::Folder,
        Label::File,
        Label::Module,
        Label::Class,
        Label::Function,
        Label::Method,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Label::Project => "Project",
            Label::Package => "Package",
            Label::Folder => "Folder",
            Label::File => "File",
            Label::Module => "Module",
            Label::Class => "Class",
            Label::Function => "Function",
            Label::Method => "Method",
        }
    }
}

/// The relationship types this indexer writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rel {
    ContainsPackage,
    ContainsFolder,
    ContainsFile,
    ContainsModule,
    Defines,
    DefinesMethod,
    Calls,
    Inherits,
    Imports,
}

impl Rel {
    pub fn as_str(self) -> &'static str {
        match self {
            Rel::ContainsPackage => "CONTAINS_PACKAGE",
            Rel::ContainsFolder => "CONTAINS_FOLDER",
            Rel::ContainsFile => "CONTAINS_FILE",
            Rel::ContainsModule => "CONTAINS_MODULE",
            Rel::Defines => "DEFINES",
            Rel::DefinesMethod => "DEFINES_METHOD",
            Rel::Calls => "CALLS",
            Rel::Inherits => "INHERITS",
            Rel::Imports => "IMPORTS",
        }
    }
}

/// A node's properties beyond its label and qualified name; the shipped queries read `name`,
/// `path`, `start_line` and `end_line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Props {
    pub name: String,
    /// Relative to the project root, `/`-separated (`.` for the project itself).
    pub path: String,
    /// Definitions only: 1-based, inclusive.
    pub lines: Option<(usize, usize)>,
    /// Files only: `.rs`, `.py`, …
    pub extension: Option<String>,
}

/// A node's identity.
pub type Key = (Label, String);

#[derive(Debug, Default)]
pub struct Graph {
    pub nodes: BTreeMap<Key, Props>,
    pub rels: BTreeSet<(Rel, Key, Key)>,
}

impl Graph {
    /// Adds a node; the first properties given for a key are kept.
    pub fn node(&mut self, label: Label, qualified_name: &str, props: Props) {
        self.nodes
            .entry((label, qualified_name.to_owned()))
            .or_insert(props);
    }

    /// Adds a relationship between two nodes already added; one between nodes that were not
    /// added is dropped (the database would have nothing to attach it to).
    pub fn rel(&mut self, rel: Rel, from: Key, to: Key) {
        if self.nodes.contains_key(&from) && self.nodes.contains_key(&to) {
            self.rels.insert((rel, from, to));
        }
    }

    pub fn count(&self, label: Label) -> usize {
        self.nodes.keys().filter(|(l, _)| *l == label).count()
    }

    pub fn count_rel(&self, rel: Rel) -> usize {
        self.rels.iter().filter(|(r, _, _)| *r == rel).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(name: &str) -> Props {
        Props {
            name: name.into(),
            path: "a.py".into(),
            lines: Some((1, 2)),
            extension: None,
        }
    }

    #[test]
    fn nodes_and_relationships_are_kept_once() {
        let mut g = Graph::default();
        g.node(Label::Function, "p.a.f", props("f"));
        g.node(Label::Function, "p.a.f", props("other"));
        g.node(Label::Function, "p.a.g", props("g"));
        let f = (Label::Function, "p.a.f".to_owned());
        let g_ = (Label::Function, "p.a.g".to_owned());
        g.rel(Rel::Calls, f.clone(), g_.clone());
        g.rel(Rel::Calls, f.clone(), g_.clone());
        g.rel(Rel::Calls, f.clone(), (Label::Function, "p.nowhere".into()));
        assert_eq!(g.nodes.len(), 2);
        assert_eq!(g.nodes[&f].name, "f", "the first properties stay");
        assert_eq!(g.rels.len(), 1, "a repeat and a dangling end add nothing");
    }
}
