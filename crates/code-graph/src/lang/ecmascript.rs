//! TypeScript, TSX and JavaScript (one walker: the grammars share their node kinds): function
//! declarations, functions bound to a name (`const f = () => …`), classes, interfaces (as
//! Class), methods, `extends`/`implements`, ES `import`s, and calls.

use tree_sitter::Node;

use super::Scan;
use crate::facts::{Callee, DefKind, Import};

pub(super) fn scan(s: &mut Scan, root: Node) {
    s.children(root, visit);
}

/// The last name of a heritage expression: `Base`, `ns.Base`, `Base<T>` → `Base`.
fn last_name<'s>(s: &Scan<'s>, node: Node) -> Option<&'s str> {
    match node.kind() {
        "identifier" | "type_identifier" => Some(s.text(node)),
        "member_expression" => s.field_text(node, "property"),
        "nested_type_identifier" => s.field_text(node, "name"),
        "generic_type" => node
            .child_by_field_name("name")
            .and_then(|n| last_name(s, n)),
        _ => None,
    }
}

fn is_heritage(kind: &str) -> bool {
    matches!(
        kind,
        "class_heritage" | "extends_clause" | "implements_clause" | "extends_type_clause"
    )
}

/// Every name in a class's heritage clause(s), or an interface's `extends`.
fn heritage(s: &Scan, node: Node, out: &mut Vec<String>) {
    let mut c = node.walk();
    for child in node.named_children(&mut c) {
        if is_heritage(child.kind()) {
            clause(s, child, out);
        }
    }
}

fn clause(s: &Scan, node: Node, out: &mut Vec<String>) {
    let mut c = node.walk();
    for child in node.named_children(&mut c) {
        if is_heritage(child.kind()) {
            clause(s, child, out);
        } else if let Some(n) = last_name(s, child) {
            out.push(n.to_owned());
        }
    }
}

fn function(s: &mut Scan, node: Node, name: &str, body: Option<Node>) {
    let kind = if s.in_class() {
        DefKind::Method
    } else {
        DefKind::Function
    };
    let owner = s.owner();
    s.define(node, kind, name, owner, Vec::new(), |s| {
        if let Some(b) = body {
            s.children(b, visit);
        }
    });
}

fn visit(s: &mut Scan, node: Node) {
    match node.kind() {
        "function_declaration"
        | "generator_function_declaration"
        | "method_definition"
        | "method_signature"
        | "abstract_method_signature"
        | "function_signature" => {
            if let Some(name) = s.field_text(node, "name") {
                function(s, node, name, node.child_by_field_name("body"));
            }
        }
        "variable_declarator" => {
            let value = node.child_by_field_name("value");
            let is_fn = value.is_some_and(|v| {
                matches!(
                    v.kind(),
                    "arrow_function" | "function_expression" | "function" | "generator_function"
                )
            });
            match (s.field_text(node, "name"), value) {
                (Some(name), Some(v)) if is_fn && !s.in_class() => {
                    function(s, node, name, v.child_by_field_name("body"))
                }
                _ => s.children(node, visit),
            }
        }
        "class_declaration" | "abstract_class_declaration" | "class" | "interface_declaration" => {
            let Some(name) = s.field_text(node, "name") else {
                return s.children(node, visit);
            };
            let mut bases = Vec::new();
            heritage(s, node, &mut bases);
            s.define_members(node, DefKind::Class, name, bases, visit);
        }
        "call_expression" => {
            if let Some(f) = node.child_by_field_name("function") {
                callee(s, f);
            }
            s.children(node, visit);
        }
        "import_statement" => import(s, node),
        _ => s.children(node, visit),
    }
}

fn callee(s: &mut Scan, f: Node) {
    match f.kind() {
        "identifier" => s.call(Callee::Plain(s.text(f).to_owned())),
        "member_expression" => {
            let Some(name) = s.field_text(f, "property") else {
                return;
            };
            let c = match f
                .child_by_field_name("object")
                .map(|o| (o.kind(), s.text(o)))
            {
                Some(("this", _)) => Callee::OwnMethod(name.to_owned()),
                Some(("identifier", q)) => Callee::Qualified {
                    qualifier: q.to_owned(),
                    name: name.to_owned(),
                },
                _ => Callee::Member(name.to_owned()),
            };
            s.call(c);
        }
        _ => {}
    }
}

fn import(s: &mut Scan, node: Node) {
    let Some(source) = node.child_by_field_name("source") else {
        return;
    };
    let spec = s
        .text(source)
        .trim_matches(|c| c == '"' || c == '\'' || c == '`');
    let mut names = Vec::new();
    let mut c = node.walk();
    for clause in node.named_children(&mut c) {
        if clause.kind() != "import_clause" {
            continue;
        }
        let mut cc = clause.walk();
        for part in clause.named_children(&mut cc) {
            match part.kind() {
                "identifier" => names.push((s.text(part).to_owned(), Some("default".to_owned()))),
                "namespace_import" => {
                    let mut nc = part.walk();
                    if let Some(id) = part
                        .named_children(&mut nc)
                        .find(|n| n.kind() == "identifier")
                    {
                        names.push((s.text(id).to_owned(), None));
                    }
                }
                "named_imports" => {
                    let mut nc = part.walk();
                    for spec in part.named_children(&mut nc) {
                        if spec.kind() != "import_specifier" {
                            continue;
                        }
                        let Some(name) = s.field_text(spec, "name") else {
                            continue;
                        };
                        let local = s.field_text(spec, "alias").unwrap_or(name);
                        names.push((local.to_owned(), Some(name.to_owned())));
                    }
                }
                _ => {}
            }
        }
    }
    s.facts.imports.push(Import {
        module: vec![spec.to_owned()],
        names,
    });
}

#[cfg(test)]
mod tests {
    use crate::facts::{Callee, DefKind};
    use crate::lang::{Lang, calls_of, defs_of, parse};

    const SRC: &str = r#"
import { render, parse as p } from "./text";
import * as util from '../util';
import React from "react";

export interface Shape extends Named { area(): number; }

export class Square extends Base implements Shape, Other {
  area() { return this.side() * helper(2); }
  side() { return util.pick(p("x")).trim(); }
}

export function helper(x) { return render(x); }
const arrow = async (y) => { await helper(y); };
"#;

    #[test]
    fn typescript_definitions_heritage_calls_imports() {
        let f = parse(Lang::TypeScript, SRC).unwrap();
        let defs = defs_of(&f);
        assert_eq!(
            defs,
            [
                ("Shape", DefKind::Class),
                ("Shape.area", DefKind::Method),
                ("Square", DefKind::Class),
                ("Square.area", DefKind::Method),
                ("Square.side", DefKind::Method),
                ("helper", DefKind::Function),
                ("arrow", DefKind::Function),
            ]
        );
        assert_eq!(f.defs[0].bases, ["Named"]);
        assert_eq!(f.defs[2].bases, ["Base", "Shape", "Other"]);
        assert_eq!(
            calls_of(&f, "Square.area"),
            [
                Callee::OwnMethod("side".into()),
                Callee::Plain("helper".into())
            ]
        );
        assert_eq!(
            calls_of(&f, "Square.side"),
            [
                Callee::Member("trim".into()),
                Callee::Qualified {
                    qualifier: "util".into(),
                    name: "pick".into()
                },
                Callee::Plain("p".into()),
            ]
        );
        assert_eq!(calls_of(&f, "arrow"), [Callee::Plain("helper".into())]);
        let imports: Vec<_> = f
            .imports
            .iter()
            .map(|i| (i.module[0].as_str(), i.names.len()))
            .collect();
        assert_eq!(imports, [("./text", 2), ("../util", 1), ("react", 1)]);
        assert_eq!(
            f.imports[0].names[1],
            ("p".to_owned(), Some("parse".to_owned()))
        );
    }

    #[test]
    fn javascript_parses_with_its_own_grammar() {
        let src = "class A extends B { m() { go(); } }\nfunction go() {}\n";
        let f = parse(Lang::JavaScript, src).unwrap();
        assert_eq!(f.defs.len(), 3);
        assert_eq!(f.defs[0].bases, ["B"]);
        assert_eq!(calls_of(&f, "A.m"), [Callee::Plain("go".into())]);
    }
}
