//! Rust: functions, structs/enums/unions/traits (as Class), `impl` methods (owned by the type
//! they implement, wherever it is defined), `impl Trait for Type` and supertraits (INHERITS),
//! inline modules (a scope of the file's module), `use` paths, and calls, including those
//! inside macro arguments (which tree-sitter leaves as token trees: a name followed by a
//! parenthesised group is read as a call there).

use tree_sitter::Node;

use super::Scan;
use crate::facts::{Callee, DefKind, Import, Owner};

pub(super) fn scan(s: &mut Scan, root: Node) {
    s.children(root, item);
}

/// The last type name in a type expression: `Foo`, `a::Foo`, `Foo<T>`, `&mut Foo` → `Foo`.
fn type_name<'s>(s: &Scan<'s>, node: Node) -> Option<&'s str> {
    match node.kind() {
        "type_identifier" | "identifier" => Some(s.text(node)),
        "scoped_type_identifier" | "scoped_identifier" => node
            .child_by_field_name("name")
            .and_then(|n| type_name(s, n)),
        "generic_type" => node
            .child_by_field_name("type")
            .and_then(|n| type_name(s, n)),
        "reference_type" | "pointer_type" => node
            .child_by_field_name("type")
            .and_then(|n| type_name(s, n)),
        _ => None,
    }
}

fn item(s: &mut Scan, node: Node) {
    match node.kind() {
        "function_item" | "function_signature_item" => {
            let Some(name) = s.field_text(node, "name") else {
                return;
            };
            let kind = if s.in_class() {
                DefKind::Method
            } else {
                DefKind::Function
            };
            let owner = s.owner();
            s.define(node, kind, name, owner, Vec::new(), |s| {
                if let Some(body) = node.child_by_field_name("body") {
                    expr(s, body);
                }
            });
        }
        "struct_item" | "enum_item" | "union_item" => {
            if let Some(name) = s.field_text(node, "name") {
                let owner = s.owner();
                s.define(node, DefKind::Class, name, owner, Vec::new(), |_| {});
            }
        }
        "trait_item" => {
            let Some(name) = s.field_text(node, "name") else {
                return;
            };
            let mut bases = Vec::new();
            if let Some(bounds) = node.child_by_field_name("bounds") {
                let mut c = bounds.walk();
                for b in bounds.named_children(&mut c) {
                    if let Some(t) = type_name(s, b) {
                        bases.push(t.to_owned());
                    }
                }
            }
            s.define_members(node, DefKind::Class, name, bases, item);
        }
        "impl_item" => {
            let Some(ty) = node
                .child_by_field_name("type")
                .and_then(|t| type_name(s, t))
            else {
                return;
            };
            if let Some(tr) = node
                .child_by_field_name("trait")
                .and_then(|t| type_name(s, t))
            {
                s.facts.impls.push((ty.to_owned(), tr.to_owned()));
            }
            let Some(body) = node.child_by_field_name("body") else {
                return;
            };
            // Methods are named Type.method, and owned by Type wherever it is defined.
            s.within(ty, None, |s| {
                let mut c = body.walk();
                for f in body.named_children(&mut c) {
                    if f.kind() != "function_item" {
                        continue;
                    }
                    let Some(name) = s.field_text(f, "name") else {
                        continue;
                    };
                    let owner = Owner::TypeName(ty.to_owned());
                    s.define(f, DefKind::Method, name, owner, Vec::new(), |s| {
                        if let Some(b) = f.child_by_field_name("body") {
                            expr(s, b);
                        }
                    });
                }
            });
        }
        "mod_item" => {
            if let (Some(name), Some(body)) =
                (s.field_text(node, "name"), node.child_by_field_name("body"))
            {
                let current = s.current();
                s.within(name, current, |s| s.children(body, item));
            }
        }
        "use_declaration" => {
            if let Some(arg) = node.child_by_field_name("argument") {
                let mut out = Vec::new();
                use_tree(s, arg, &[], &mut out);
                s.facts.imports.extend(out);
            }
        }
        // Attributes, macros at item level, consts, statics: calls in their bodies have no
        // definition to belong to unless inside one.
        _ => expr(s, node),
    }
}

/// The segments of a path (`a::b::c`, `crate`, `super::x`).
fn path_segments(s: &Scan, node: Node, out: &mut Vec<String>) {
    match node.kind() {
        "scoped_identifier" => {
            if let Some(p) = node.child_by_field_name("path") {
                path_segments(s, p, out);
            }
            if let Some(n) = node.child_by_field_name("name") {
                out.push(s.text(n).to_owned());
            }
        }
        _ => out.push(s.text(node).to_owned()),
    }
}

/// One `use` tree → one Import per imported path: `module` = the path without its last
/// segment, bound to a local name (the last segment, or the alias). A glob binds nothing.
fn use_tree(s: &Scan, node: Node, base: &[String], out: &mut Vec<Import>) {
    let mut path = base.to_vec();
    match node.kind() {
        "use_as_clause" => {
            if let Some(p) = node.child_by_field_name("path") {
                path_segments(s, p, &mut path);
            }
            let alias = s.field_text(node, "alias").unwrap_or_default().to_owned();
            push_use(path, Some(alias), out);
        }
        "scoped_use_list" => {
            if let Some(p) = node.child_by_field_name("path") {
                path_segments(s, p, &mut path);
            }
            if let Some(list) = node.child_by_field_name("list") {
                use_tree(s, list, &path, out);
            }
        }
        "use_list" => {
            let mut c = node.walk();
            for child in node.named_children(&mut c) {
                use_tree(s, child, &path, out);
            }
        }
        "use_wildcard" => {
            let mut c = node.walk();
            for child in node.named_children(&mut c) {
                path_segments(s, child, &mut path);
            }
            out.push(Import {
                module: path,
                names: Vec::new(),
            });
        }
        _ => {
            path_segments(s, node, &mut path);
            push_use(path, None, out);
        }
    }
}

fn push_use(mut path: Vec<String>, alias: Option<String>, out: &mut Vec<Import>) {
    let Some(last) = path.pop() else { return };
    if last == "self" {
        // `use a::b::{self}` imports the module a::b itself.
        let Some(name) = path.last().cloned() else {
            return;
        };
        let local = alias.unwrap_or(name.clone());
        path.pop();
        out.push(Import {
            module: path,
            names: vec![(local, Some(name))],
        });
        return;
    }
    let local = alias.unwrap_or_else(|| last.clone());
    out.push(Import {
        module: path,
        names: vec![(local, Some(last))],
    });
}

/// Expressions and statements: calls, nested definitions, closures (their calls belong to the
/// enclosing function).
fn expr(s: &mut Scan, node: Node) {
    match node.kind() {
        "function_item" | "struct_item" | "enum_item" | "union_item" | "trait_item"
        | "impl_item" | "mod_item" | "use_declaration" => item(s, node),
        "call_expression" => {
            if let Some(f) = node.child_by_field_name("function") {
                callee(s, f);
            }
            s.children(node, expr);
        }
        "macro_invocation" => {
            let mut c = node.walk();
            for child in node.named_children(&mut c) {
                if child.kind() == "token_tree" {
                    token_calls(s, child);
                }
            }
        }
        _ => s.children(node, expr),
    }
}

fn callee(s: &mut Scan, f: Node) {
    match f.kind() {
        "identifier" => s.call(Callee::Plain(s.text(f).to_owned())),
        "scoped_identifier" => {
            let Some(name) = s.field_text(f, "name") else {
                return;
            };
            let qualifier = f
                .child_by_field_name("path")
                .and_then(|p| type_name(s, p).or(Some(s.text(p))))
                .unwrap_or_default();
            let c = if qualifier == "Self" {
                Callee::OwnMethod(name.to_owned())
            } else {
                Callee::Qualified {
                    qualifier: qualifier.to_owned(),
                    name: name.to_owned(),
                }
            };
            s.call(c);
        }
        "field_expression" => {
            let Some(field) = s.field_text(f, "field") else {
                return;
            };
            let on_self = f
                .child_by_field_name("value")
                .is_some_and(|v| v.kind() == "self");
            s.call(if on_self {
                Callee::OwnMethod(field.to_owned())
            } else {
                Callee::Member(field.to_owned())
            });
        }
        "generic_function" => {
            if let Some(inner) = f.child_by_field_name("function") {
                callee(s, inner);
            }
        }
        _ => {}
    }
}

/// Calls inside a macro's token tree: `name (`, `a::name (`, `x.name (`, `self.name (`.
fn token_calls(s: &mut Scan, tree: Node) {
    let mut c = tree.walk();
    let kids: Vec<Node> = tree.children(&mut c).collect();
    for (i, k) in kids.iter().enumerate() {
        match k.kind() {
            "token_tree" => token_calls(s, *k),
            "identifier" => {
                let opens = kids
                    .get(i + 1)
                    .is_some_and(|n| n.kind() == "token_tree" && s.text(*n).starts_with('('));
                if !opens {
                    continue;
                }
                let name = s.text(*k).to_owned();
                let before = |j: usize| i.checked_sub(j).map(|j| kids[j]);
                let call = match before(1).map(|n| s.text(n)) {
                    Some("::") => match before(2) {
                        Some(q) if s.text(q) == "Self" => Callee::OwnMethod(name),
                        Some(q) => Callee::Qualified {
                            qualifier: s.text(q).to_owned(),
                            name,
                        },
                        None => Callee::Plain(name),
                    },
                    Some(".") => match before(2) {
                        Some(q) if s.text(q) == "self" => Callee::OwnMethod(name),
                        _ => Callee::Member(name),
                    },
                    _ => Callee::Plain(name),
                };
                s.call(call);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::facts::{Callee, DefKind, Owner};
    use crate::lang::{Lang, calls_of, defs_of, parse};

    const SRC: &str = r#"
use crate::a::{b, c::D as E};
use super::*;
use std::io;

pub trait Shape: Named + std::fmt::Debug {
    fn area(&self) -> f64;
    fn twice(&self) -> f64 { self.area() * 2.0 }
}

struct Square(f64);

impl Shape for Square {
    fn area(&self) -> f64 { helper(self.0) }
}

impl Square {
    pub fn new(x: f64) -> Self {
        let s = Self::build(x);
        assert_eq!(compute(1), other::thing(2));
        s.area();
        E::make();
        s
    }
    fn build(x: f64) -> Self { Square(x) }
}

fn helper(x: f64) -> f64 {
    fn inner() {}
    inner();
    x
}

mod tests {
    fn t() { super::helper(1.0); }
}
"#;

    #[test]
    fn definitions_owners_and_bases() {
        let f = parse(Lang::Rust, SRC).unwrap();
        let defs = defs_of(&f);
        assert_eq!(
            defs,
            [
                ("Shape", DefKind::Class),
                ("Shape.area", DefKind::Method),
                ("Shape.twice", DefKind::Method),
                ("Square", DefKind::Class),
                ("Square.area", DefKind::Method),
                ("Square.new", DefKind::Method),
                ("Square.build", DefKind::Method),
                ("helper", DefKind::Function),
                ("helper.inner", DefKind::Function),
                ("tests.t", DefKind::Function),
            ]
        );
        assert_eq!(f.defs[0].bases, ["Named", "Debug"]);
        assert_eq!(f.defs[4].owner, Owner::TypeName("Square".into()));
        assert_eq!(f.defs[8].owner, Owner::Def(7));
        assert_eq!(f.impls, [("Square".to_owned(), "Shape".to_owned())]);
        let h = &f.defs[7];
        let line = |needle: &str| SRC.lines().position(|l| l.contains(needle)).unwrap() + 1;
        assert_eq!(
            (h.start_line, h.end_line),
            (line("fn helper"), line("fn helper") + 4)
        );
    }

    #[test]
    fn calls_including_macro_arguments() {
        let f = parse(Lang::Rust, SRC).unwrap();
        assert_eq!(
            calls_of(&f, "Square.new"),
            [
                Callee::OwnMethod("build".into()),
                Callee::Plain("compute".into()),
                Callee::Qualified {
                    qualifier: "other".into(),
                    name: "thing".into()
                },
                Callee::Member("area".into()),
                Callee::Qualified {
                    qualifier: "E".into(),
                    name: "make".into()
                },
            ]
        );
        assert_eq!(
            calls_of(&f, "Shape.twice"),
            [Callee::OwnMethod("area".into())]
        );
        assert_eq!(calls_of(&f, "helper"), [Callee::Plain("inner".into())]);
        assert_eq!(
            calls_of(&f, "tests.t"),
            [Callee::Qualified {
                qualifier: "super".into(),
                name: "helper".into()
            }]
        );
    }

    #[test]
    fn use_paths() {
        let f = parse(Lang::Rust, SRC).unwrap();
        let imports: Vec<_> = f
            .imports
            .iter()
            .map(|i| (i.module.join("::"), i.names.clone()))
            .collect();
        assert_eq!(
            imports,
            [
                (
                    "crate::a".to_owned(),
                    vec![("b".to_owned(), Some("b".to_owned()))]
                ),
                (
                    "crate::a::c".to_owned(),
                    vec![("E".to_owned(), Some("D".to_owned()))]
                ),
                ("super".to_owned(), vec![]),
                (
                    "std".to_owned(),
                    vec![("io".to_owned(), Some("io".to_owned()))]
                ),
            ]
        );
    }
}
