//! The languages this indexer parses, each with tree-sitter's maintained grammar, and what they
//! share: reading a file into a syntax tree and the bookkeeping of definitions while a parser
//! walks it (the scope it is in, the definition that makes the calls it meets).

mod ecmascript;
mod python;
mod rust;

use std::path::Path;

use tree_sitter::{Node, Parser};

use crate::facts::{Call, Callee, Def, DefKind, FileFacts, Owner};

/// A language, chosen by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
}

impl Lang {
    pub fn of(path: &Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "rs" => Some(Lang::Rust),
            "py" | "pyi" => Some(Lang::Python),
            "ts" | "mts" | "cts" => Some(Lang::TypeScript),
            "tsx" => Some(Lang::Tsx),
            "js" | "jsx" | "mjs" | "cjs" => Some(Lang::JavaScript),
            _ => None,
        }
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("the {0:?} grammar could not be loaded: {1}")]
    Grammar(Lang, String),
    #[error("tree-sitter gave no tree")]
    NoTree,
}

/// Parses one file's text. A file with syntax errors still yields what tree-sitter recovered.
pub fn parse(lang: Lang, source: &str) -> Result<FileFacts, ParseError> {
    let mut parser = Parser::new();
    parser
        .set_language(&lang.grammar())
        .map_err(|e| ParseError::Grammar(lang, e.to_string()))?;
    let tree = parser.parse(source, None).ok_or(ParseError::NoTree)?;
    let mut s = Scan::new(source);
    match lang {
        Lang::Rust => rust::scan(&mut s, tree.root_node()),
        Lang::Python => python::scan(&mut s, tree.root_node()),
        Lang::TypeScript | Lang::Tsx | Lang::JavaScript => {
            ecmascript::scan(&mut s, tree.root_node())
        }
    }
    Ok(s.facts)
}

/// A parser's state while it walks one tree.
pub(crate) struct Scan<'s> {
    src: &'s str,
    pub facts: FileFacts,
    /// The dotted names of the enclosing scopes within the module (classes, inline modules,
    /// functions).
    prefix: Vec<String>,
    /// The innermost enclosing definition: the caller of any call met now.
    current: Option<usize>,
}

impl<'s> Scan<'s> {
    fn new(src: &'s str) -> Scan<'s> {
        Scan {
            src,
            facts: FileFacts::default(),
            prefix: Vec::new(),
            current: None,
        }
    }

    pub fn text(&self, node: Node) -> &'s str {
        &self.src[node.byte_range()]
    }

    pub fn field_text(&self, node: Node, field: &str) -> Option<&'s str> {
        node.child_by_field_name(field).map(|n| self.text(n))
    }

    /// Records a definition spanning `node`, and runs `body` inside its scope.
    pub fn define(
        &mut self,
        node: Node,
        kind: DefKind,
        name: &str,
        owner: Owner,
        bases: Vec<String>,
        body: impl FnOnce(&mut Self),
    ) {
        let mut local = self.prefix.clone();
        local.push(name.to_owned());
        let index = self.facts.defs.len();
        self.facts.defs.push(Def {
            kind,
            name: name.to_owned(),
            local_name: local.join("."),
            owner,
            start_line: node.start_position().row + 1,
            end_line: node.end_position().row + 1,
            bases,
        });
        self.within(name, Some(index), body);
    }

    /// Records a definition owned by the enclosing one (else the module) whose members sit in
    /// its `body` field, and walks them with `visit` inside its scope.
    pub fn define_members(
        &mut self,
        node: Node,
        kind: DefKind,
        name: &str,
        bases: Vec<String>,
        visit: fn(&mut Self, Node),
    ) {
        let owner = self.owner();
        self.define(node, kind, name, owner, bases, |s| {
            if let Some(body) = node.child_by_field_name("body") {
                s.children(body, visit);
            }
        });
    }

    /// Runs `body` inside a named scope (an inline module: no definition of its own), with
    /// `current` as the caller of the calls met there.
    pub fn within(&mut self, name: &str, current: Option<usize>, body: impl FnOnce(&mut Self)) {
        let saved = self.current;
        self.prefix.push(name.to_owned());
        self.current = current;
        body(self);
        self.prefix.pop();
        self.current = saved;
    }

    /// The innermost enclosing definition, if any.
    pub fn current(&self) -> Option<usize> {
        self.current
    }

    /// The owner for a definition met now: the enclosing definition, else the module.
    pub fn owner(&self) -> Owner {
        self.current.map(Owner::Def).unwrap_or(Owner::Module)
    }

    /// The enclosing definition is a class (so a function met now is a method).
    pub fn in_class(&self) -> bool {
        self.current
            .is_some_and(|i| self.facts.defs[i].kind == DefKind::Class)
    }

    /// Records a call made by the current definition (calls at module level have no caller in
    /// the schema and are dropped).
    pub fn call(&mut self, callee: Callee) {
        if let Some(caller) = self.current {
            self.facts.calls.push(Call { caller, callee });
        }
    }

    /// Walks the children of `node` with `visit`.
    pub fn children(&mut self, node: Node, visit: fn(&mut Self, Node)) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            visit(self, child);
        }
    }
}

/// Each definition's local name and kind, in order.
#[cfg(test)]
pub(crate) fn defs_of(facts: &FileFacts) -> Vec<(&str, DefKind)> {
    facts
        .defs
        .iter()
        .map(|d| (d.local_name.as_str(), d.kind))
        .collect()
}

#[cfg(test)]
pub(crate) fn calls_of(facts: &FileFacts, local_name: &str) -> Vec<Callee> {
    let index = facts
        .defs
        .iter()
        .position(|d| d.local_name == local_name)
        .unwrap_or_else(|| panic!("no definition {local_name}: {:#?}", facts.defs));
    facts
        .calls
        .iter()
        .filter(|c| c.caller == index)
        .map(|c| c.callee.clone())
        .collect()
}
