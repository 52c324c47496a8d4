//! Python: functions (nested ones too), classes and their methods (decorated or not), base
//! classes, `import` / `from … import …` (relative ones with their leading dots), and calls.

use tree_sitter::Node;

use super::Scan;
use crate::facts::{Callee, DefKind, Import};

pub(super) fn scan(s: &mut Scan, root: Node) {
    s.children(root, visit);
}

/// The last name of an expression used as a base or a qualifier: `Base`, `mod.Base` → `Base`.
fn last_name<'s>(s: &Scan<'s>, node: Node) -> Option<&'s str> {
    match node.kind() {
        "identifier" => Some(s.text(node)),
        "attribute" => s.field_text(node, "attribute"),
        // Generic[T], Base[int]
        "subscript" => node
            .child_by_field_name("value")
            .and_then(|v| last_name(s, v)),
        _ => None,
    }
}

fn visit(s: &mut Scan, node: Node) {
    match node.kind() {
        "function_definition" => {
            let Some(name) = s.field_text(node, "name") else {
                return;
            };
            let kind = if s.in_class() {
                DefKind::Method
            } else {
                DefKind::Function
            };
            s.define_members(node, kind, name, Vec::new(), visit);
        }
        "class_definition" => {
            let Some(name) = s.field_text(node, "name") else {
                return;
            };
            let mut bases = Vec::new();
            if let Some(args) = node.child_by_field_name("superclasses") {
                let mut c = args.walk();
                for a in args.named_children(&mut c) {
                    // keyword arguments (metaclass=…) are not bases
                    if let Some(n) = last_name(s, a) {
                        bases.push(n.to_owned());
                    }
                }
            }
            s.define_members(node, DefKind::Class, name, bases, visit);
        }
        "call" => {
            if let Some(f) = node.child_by_field_name("function") {
                callee(s, f);
            }
            s.children(node, visit);
        }
        "import_statement" => {
            let mut c = node.walk();
            for n in node.children_by_field_name("name", &mut c) {
                let (module, alias) = match n.kind() {
                    "aliased_import" => (
                        s.field_text(n, "name").unwrap_or_default(),
                        s.field_text(n, "alias"),
                    ),
                    _ => (s.text(n), None),
                };
                // `import a.b` binds `a`; `import a.b as x` binds x to a.b.
                let local = alias.unwrap_or_else(|| module.split('.').next().unwrap_or(module));
                s.facts.imports.push(Import {
                    module: vec![module.to_owned()],
                    names: vec![(local.to_owned(), None)],
                });
            }
        }
        "import_from_statement" => {
            let module = s
                .field_text(node, "module_name")
                .unwrap_or_default()
                .replace(char::is_whitespace, "");
            let mut names = Vec::new();
            let mut c = node.walk();
            for n in node.children_by_field_name("name", &mut c) {
                match n.kind() {
                    "aliased_import" => {
                        if let (Some(name), Some(alias)) =
                            (s.field_text(n, "name"), s.field_text(n, "alias"))
                        {
                            names.push((alias.to_owned(), Some(name.to_owned())));
                        }
                    }
                    _ => {
                        let name = s.text(n);
                        names.push((name.to_owned(), Some(name.to_owned())));
                    }
                }
            }
            s.facts.imports.push(Import {
                module: vec![module],
                names,
            });
        }
        "decorated_definition" => s.children(node, visit),
        _ => s.children(node, visit),
    }
}

fn callee(s: &mut Scan, f: Node) {
    match f.kind() {
        "identifier" => s.call(Callee::Plain(s.text(f).to_owned())),
        "attribute" => {
            let Some(name) = s.field_text(f, "attribute") else {
                return;
            };
            let object = f.child_by_field_name("object");
            let c = match object.map(|o| (o.kind(), s.text(o))) {
                Some(("identifier", "self" | "cls")) => Callee::OwnMethod(name.to_owned()),
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

#[cfg(test)]
mod tests {
    use crate::facts::{Callee, DefKind, Owner};
    use crate::lang::{Lang, calls_of, defs_of, parse};

    const SRC: &str = r#"
import os.path
import json as j
from . import sibling
from ..pkg.mod import Base, helper as h

class Order(Base, mixins.Stamped, metaclass=Meta):
    @property
    def total(self):
        return self.sum() + h(1)

    def sum(self):
        def inner():
            return j.dumps(os.path.join("a"))
        return inner()

def place(order):
    Order.create(order).total
    order.save()
"#;

    #[test]
    fn definitions_bases_and_calls() {
        let f = parse(Lang::Python, SRC).unwrap();
        let defs = defs_of(&f);
        assert_eq!(
            defs,
            [
                ("Order", DefKind::Class),
                ("Order.total", DefKind::Method),
                ("Order.sum", DefKind::Method),
                ("Order.sum.inner", DefKind::Function),
                ("place", DefKind::Function),
            ]
        );
        assert_eq!(f.defs[0].bases, ["Base", "Stamped"]);
        assert_eq!(f.defs[3].owner, Owner::Def(2));
        assert_eq!(
            calls_of(&f, "Order.total"),
            [Callee::OwnMethod("sum".into()), Callee::Plain("h".into())]
        );
        assert_eq!(
            calls_of(&f, "Order.sum.inner"),
            [
                Callee::Qualified {
                    qualifier: "j".into(),
                    name: "dumps".into()
                },
                Callee::Member("join".into())
            ]
        );
        assert_eq!(
            calls_of(&f, "place"),
            [
                Callee::Qualified {
                    qualifier: "Order".into(),
                    name: "create".into()
                },
                Callee::Qualified {
                    qualifier: "order".into(),
                    name: "save".into()
                }
            ]
        );
    }

    #[test]
    fn imports() {
        let f = parse(Lang::Python, SRC).unwrap();
        let imports: Vec<_> = f
            .imports
            .iter()
            .map(|i| (i.module[0].as_str(), i.names.clone()))
            .collect();
        let n = |l: &str, r: Option<&str>| (l.to_owned(), r.map(str::to_owned));
        assert_eq!(
            imports,
            [
                ("os.path", vec![n("os", None)]),
                ("json", vec![n("j", None)]),
                (".", vec![n("sibling", Some("sibling"))]),
                (
                    "..pkg.mod",
                    vec![n("Base", Some("Base")), n("h", Some("helper"))]
                ),
            ]
        );
    }
}
