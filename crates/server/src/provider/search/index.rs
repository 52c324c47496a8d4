//! The on-disk index: its schema (one document per code chunk or doc section), where it lives
//! (under the user's cache folder unless configured), the manifest of indexed files that lets
//! a restart reuse it (only files whose size or mtime changed are read again), and the
//! writing of one file's documents. Everything here blocks: it runs on the indexer thread or
//! inside `spawn_blocking`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::roots::Root;
use super::sections::{Format, sections};
use super::tokenize::{CODE_TOKENIZER, CodeTokenizer, language};
use crate::config::RootKind;
use crate::sync::Unpoisoned;

/// Bumped when the schema or the way files become documents changes: an index of another
/// version is rebuilt, not reused.
const VERSION: u32 = 1;
/// Lines per code document: a hit names a span this size at most before its snippet narrows it.
pub const CHUNK_LINES: usize = 50;
/// A file with a NUL byte in its first this-many bytes is binary.
const BINARY_SNIFF: usize = 8192;

/// The fields of every document.
#[derive(Clone, Copy)]
pub struct Fields {
    /// `code:NAME` or `docs:NAME`: the unit that is deleted and re-added.
    pub id: Field,
    /// The file's name in answers.
    pub path: Field,
    /// The name again, tokenized, so a query matches file names too.
    pub path_text: Field,
    pub kind: Field,
    pub lang: Field,
    pub start_line: Field,
    pub end_line: Field,
    /// A doc section's heading path, joined with ` > `.
    pub heading: Field,
    pub body: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = |stored: bool| {
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(CODE_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        let options = TextOptions::default().set_indexing_options(indexing);
        if stored {
            options.set_stored()
        } else {
            options
        }
    };
    let number = NumericOptions::default().set_stored();
    let fields = Fields {
        id: b.add_text_field("id", STRING),
        path: b.add_text_field("path", STRING | STORED),
        path_text: b.add_text_field("path_text", text(false)),
        kind: b.add_text_field("kind", STRING),
        lang: b.add_text_field("lang", STRING | STORED),
        start_line: b.add_u64_field("start_line", number.clone()),
        end_line: b.add_u64_field("end_line", number),
        heading: b.add_text_field("heading", text(true)),
        body: b.add_text_field("body", text(true)),
    };
    (b.build(), fields)
}

/// What the manifest knows of one indexed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    pub size: u64,
    pub mtime_ns: u128,
    pub language: Option<String>,
    /// For docs: the first heading, its format and its number of sections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default)]
    pub sections: usize,
}

#[derive(Serialize, Deserialize)]
struct Manifest {
    version: u32,
    files: BTreeMap<String, FileEntry>,
}

/// Why a file was not indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    Binary,
    Unreadable,
    TooLarge,
}

/// What became of one file.
#[derive(Debug)]
pub enum Outcome {
    Indexed,
    Unchanged,
    Skipped(Skip),
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index at {path}: {message}")]
    Open { path: String, message: String },
    #[error("index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("index manifest: {0}")]
    Io(#[from] std::io::Error),
}

/// The index of one provider.
pub struct SearchIndex {
    pub location: PathBuf,
    pub fields: Fields,
    pub reader: IndexReader,
    writer: Mutex<IndexWriter>,
    /// By id (`code:NAME`): what is in the index as of the last commit plus pending changes.
    files: std::sync::RwLock<BTreeMap<String, FileEntry>>,
}

/// The id of a file's documents.
pub fn id(kind: RootKind, name: &str) -> String {
    format!("{}:{name}", kind.as_str())
}

/// `$XDG_CACHE_HOME` (or `~/.cache`) `/mcp-http-gateway/search/<service>-<provider>-<hash>`;
/// the hash is of the roots' folders and kinds, so another set of roots gets another index
/// (changed globs reuse it: the first pass reconciles).
pub fn default_location(service: &str, provider: &str, roots: &[Root]) -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let mut hash = Sha256::new();
    for root in roots {
        hash.update(root.path.to_string_lossy().as_bytes());
        hash.update(root.kind.as_str().as_bytes());
    }
    let digest = hash.finalize();
    let short: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    cache
        .join("mcp-http-gateway")
        .join("search")
        .join(format!("{service}-{provider}-{short}"))
}

impl SearchIndex {
    /// Opens the index at `location`, reusing it when its manifest is of this version, else
    /// starting it afresh there.
    pub fn open(location: &Path) -> Result<SearchIndex, IndexError> {
        let failed = |message: String| IndexError::Open {
            path: location.display().to_string(),
            message,
        };
        std::fs::create_dir_all(location).map_err(|e| failed(e.to_string()))?;
        let (schema, fields) = schema();
        let manifest = std::fs::read(location.join("manifest.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Manifest>(&bytes).ok())
            .filter(|m| m.version == VERSION);
        let reused = match manifest {
            Some(m) => Index::open_in_dir(location)
                .ok()
                .filter(|i| i.schema() == schema)
                .map(|i| (i, m.files)),
            None => None,
        };
        let (index, files) = match reused {
            Some(found) => found,
            None => {
                // Whatever is there is not ours to keep: start empty.
                for entry in std::fs::read_dir(location).map_err(|e| failed(e.to_string()))? {
                    let path = entry.map_err(|e| failed(e.to_string()))?.path();
                    let _ = if path.is_dir() {
                        std::fs::remove_dir_all(&path)
                    } else {
                        std::fs::remove_file(&path)
                    };
                }
                let index =
                    Index::create_in_dir(location, schema).map_err(|e| failed(e.to_string()))?;
                (index, BTreeMap::new())
            }
        };
        index.tokenizers().register(CODE_TOKENIZER, CodeTokenizer);
        // One indexing thread: the gateway's cores belong to serving calls.
        let writer = index
            .writer_with_num_threads(1, 40_000_000)
            .map_err(|e| failed(format!("{e} (is another gateway using this index?)")))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e: tantivy::TantivyError| failed(e.to_string()))?;
        Ok(SearchIndex {
            location: location.to_owned(),
            fields,
            reader,
            writer: Mutex::new(writer),
            files: std::sync::RwLock::new(files),
        })
    }

    /// The indexed files (by id) as of now.
    pub fn files(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, FileEntry>> {
        self.files.read_unpoisoned()
    }

    /// Indexes `file` of `root` unless the manifest already has it at this size and mtime.
    pub fn index_file(&self, root: &Root, file: &Path, max_bytes: u64) -> Outcome {
        let Some(name) = root.name_of(file) else {
            return Outcome::Skipped(Skip::Unreadable);
        };
        let id = id(root.kind, &name);
        let Ok(meta) = std::fs::metadata(file) else {
            self.remove(&id);
            return Outcome::Skipped(Skip::Unreadable);
        };
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        if let Some(known) = self.files.read_unpoisoned().get(&id)
            && known.size == meta.len()
            && known.mtime_ns == mtime_ns
        {
            return Outcome::Unchanged;
        }
        let skip = |why| {
            self.remove(&id);
            Outcome::Skipped(why)
        };
        if meta.len() > max_bytes {
            return skip(Skip::TooLarge);
        }
        let Ok(bytes) = std::fs::read(file) else {
            return skip(Skip::Unreadable);
        };
        if bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0) {
            return skip(Skip::Binary);
        }
        let Ok(text) = String::from_utf8(bytes) else {
            return skip(Skip::Binary);
        };
        let f = self.fields;
        let lang = language(file);
        let mut entry = FileEntry {
            size: meta.len(),
            mtime_ns,
            language: lang.map(str::to_owned),
            title: None,
            format: None,
            sections: 0,
        };
        let mut docs = Vec::new();
        let base = |start: usize, end: usize| {
            let mut doc = TantivyDocument::new();
            doc.add_text(f.id, &id);
            doc.add_text(f.path, &name);
            doc.add_text(f.path_text, &name);
            doc.add_text(f.kind, root.kind.as_str());
            doc.add_text(f.lang, lang.unwrap_or("other"));
            doc.add_u64(f.start_line, start as u64);
            doc.add_u64(f.end_line, end as u64);
            doc
        };
        match root.kind {
            RootKind::Code => {
                let lines: Vec<&str> = text.lines().collect();
                for (i, chunk) in lines.chunks(CHUNK_LINES).enumerate() {
                    let start = i * CHUNK_LINES + 1;
                    let mut doc = base(start, start + chunk.len() - 1);
                    doc.add_text(f.body, chunk.join("\n"));
                    docs.push(doc);
                }
                if lines.is_empty() {
                    docs.push(base(1, 1));
                }
            }
            RootKind::Docs => {
                let format = Format::of(file);
                let found = sections(&text, format);
                entry.format = Some(format.as_str().to_owned());
                entry.sections = found.len();
                entry.title = found
                    .iter()
                    .find_map(|s| s.heading_path.first().cloned())
                    .or_else(|| file.file_name().map(|n| n.to_string_lossy().into_owned()));
                for s in found {
                    let mut doc = base(s.start_line, s.end_line);
                    doc.add_text(f.heading, s.heading_path.join(" > "));
                    doc.add_text(f.body, s.text);
                    docs.push(doc);
                }
            }
        }
        {
            let writer = self.writer.write_unpoisoned();
            writer.delete_term(Term::from_field_text(f.id, &id));
            for doc in docs {
                if writer.add_document(doc).is_err() {
                    return Outcome::Skipped(Skip::Unreadable);
                }
            }
        }
        self.files.write_unpoisoned().insert(id, entry);
        Outcome::Indexed
    }

    /// Removes a file's documents (a no-op for a file not indexed).
    pub fn remove(&self, id: &str) {
        if self.files.write_unpoisoned().remove(id).is_some() {
            let writer = self.writer.write_unpoisoned();
            writer.delete_term(Term::from_field_text(self.fields.id, id));
        }
    }

    /// Makes the pending changes searchable and durable, and writes the manifest that lets a
    /// restart reuse them. Returns the index's documents and bytes on disk.
    pub fn commit(&self) -> Result<(u64, u64), IndexError> {
        self.writer.write_unpoisoned().commit()?;
        self.reader.reload()?;
        let manifest = Manifest {
            version: VERSION,
            files: self.files.read_unpoisoned().clone(),
        };
        let tmp = self.location.join("manifest.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(&manifest).unwrap_or_default())?;
        std::fs::rename(&tmp, self.location.join("manifest.json"))?;
        let documents = self.reader.searcher().num_docs();
        Ok((documents, dir_bytes(&self.location)))
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Whether a file's first bytes say binary (NUL), for `read_file`.
pub fn looks_binary(file: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = vec![0; BINARY_SNIFF];
    let mut f = std::fs::File::open(file)?;
    let n = f.read(&mut head)?;
    Ok(head[..n].contains(&0))
}
