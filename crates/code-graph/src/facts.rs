//! What a parser finds in one file, before anything is known about the other files: the
//! definitions (with their place in the file), the calls each one makes, the imports, and the
//! bases a class names. Names are as written in the source; build/ resolves them.

/// The kind of a definition, as the code-graph-rag schema labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefKind {
    /// A class, struct, enum, union, trait or (TypeScript) interface.
    Class,
    /// A free function (also a nested one, and an arrow function bound to a name).
    Function,
    /// A function defined in a class body, an `impl` block or a trait.
    Method,
}

/// Who owns a definition: where its DEFINES / DEFINES_METHOD comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The file's module (top level, or an inline `mod` of it).
    Module,
    /// Another definition of the same file, by index (a class's method, a nested function).
    Def(usize),
    /// A type named in a Rust `impl NAME` block, which may be defined in another file.
    TypeName(String),
}

/// One definition.
#[derive(Debug, Clone)]
pub struct Def {
    pub kind: DefKind,
    pub name: String,
    /// The name within the module, dotted: `run`, `Order.total`, `tests.helper`.
    pub local_name: String,
    pub owner: Owner,
    /// 1-based, inclusive.
    pub start_line: usize,
    pub end_line: usize,
    /// For a class: the bases (superclasses, implemented interfaces, supertraits) as written,
    /// the last path segment only.
    pub bases: Vec<String>,
}

/// How a call names what it calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Callee {
    /// `name(…)`.
    Plain(String),
    /// `self.name(…)`, `this.name(…)`, `Self::name(…)`, `cls.name(…)`: a method of the caller's
    /// own class.
    OwnMethod(String),
    /// `Qualifier::name(…)` or `Qualifier.name(…)` where the qualifier is a plain name: a
    /// type (associated function, static method) or a module.
    Qualified { qualifier: String, name: String },
    /// `expr.name(…)` on any other receiver: its type is unknown here.
    Member(String),
}

/// One call, made inside the definition `caller` (index into `FileFacts::defs`).
#[derive(Debug, Clone)]
pub struct Call {
    pub caller: usize,
    pub callee: Callee,
}

/// One import: the module it names, and the names it binds in this file.
#[derive(Debug, Clone, Default)]
pub struct Import {
    /// Language-specific module reference, resolved by build/: a Rust path's segments
    /// (`crate`, `super`, …), a Python dotted name (leading dots for relative), or an ES module
    /// specifier (`./x`).
    pub module: Vec<String>,
    /// Local name → the imported item's name in that module (`None`: the module itself).
    pub names: Vec<(String, Option<String>)>,
}

/// Everything a parser found in one file.
#[derive(Debug, Clone, Default)]
pub struct FileFacts {
    pub defs: Vec<Def>,
    pub calls: Vec<Call>,
    pub imports: Vec<Import>,
    /// Rust `impl Trait for Type`: (Type, Trait), last path segments.
    pub impls: Vec<(String, String)>,
}
