//! code-graph-index: a repository's code graph in code-graph-rag's schema, for the gateway's
//! code-graph-rag tools (config/code-graph-rag.yaml). Separate from the gateway on purpose: the
//! gateway only reads the graph; this writes it.
//!
//! ```text
//! walk.rs       which files: .gitignore respected, source extensions only, size-capped
//! lang/         one parser per language (tree-sitter) → FileFacts: definitions, calls,
//!               imports, bases; no cross-file knowledge
//! facts.rs      FileFacts, the language-neutral record a parser fills
//! build/        all FileFacts → Graph: qualified names, containment, and the name-based
//!               resolution of CALLS, IMPORTS and INHERITS across files
//! graph.rs      Graph: the nodes and relationships to write
//! write.rs      Graph → Bolt: the project's old graph deleted, then batched UNWIND creates
//! ```

pub mod build;
pub mod facts;
pub mod graph;
pub mod lang;
pub mod walk;
pub mod write;
