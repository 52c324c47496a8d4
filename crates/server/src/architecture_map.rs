//! docs/architecture.md's file map held to the source tree (test only): every source file of
//! `src/` is named in the map, and the map names no file or folder that does not exist, so the
//! page a newcomer reads first cannot drift from the code.
//!
//! How the map is read: a line of the map's text block whose first word is `name.rs` or
//! `name/` (or a list `a.rs, b.rs`) is an entry, inside the folder entry above it that is
//! indented less; any other line continues the description of the entry above. A folder's own
//! description may name its files inline (`upstream/  reaching the server: mod.rs (…), stdio.rs`);
//! a path with a slash in any description (`service/rate_limit.rs`) must exist, from `src/`,
//! from the folder of the entry it describes, or from the repository (`crates/server/assets/`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The heading above the map's text block.
const HEADING: &str = "## `crates/server/src`, by direction";

/// What the map says: each file and folder it names (paths from `src/`, folders ending in
/// `/`), with the line it names it on, and the slash paths its descriptions refer to.
#[derive(Debug, Default)]
struct Map {
    named: BTreeMap<String, Vec<usize>>,
    referred: Vec<(usize, String, String)>,
}

/// The words of `text` that look like a Rust file or a folder path: `[a-z0-9_/]+` ending in
/// `.rs`, or in `/` with at least one letter before it.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let is_part = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '/';
    let mut out = Vec::new();
    let mut start = None;
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(at, c)) in bytes.iter().enumerate() {
        let part = is_part(c) || (c == '.' && text[at..].starts_with(".rs"));
        match (start, part) {
            (None, true) => {
                // A word starts only after a character that cannot be in a path.
                let after_path_char = k > 0 && {
                    let p = bytes[k - 1].1;
                    p.is_ascii_alphanumeric() || p == '.' || p == '-'
                };
                if !after_path_char {
                    start = Some(at);
                }
            }
            (Some(s), false) => {
                out.push((s, &text[s..at]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out.into_iter()
        .filter(|(_, w)| (w.ends_with(".rs") && w.len() > 3) || (w.ends_with('/') && w.len() > 1))
}

/// The entry names a line starts with: `name.rs`, `name/`, or `a.rs, b.rs`, each followed by
/// a space, the line's end or `, ` and the next name; empty when the line continues a
/// description (`crates/server/…` is not an entry: a name is followed by neither).
fn entries(line: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = line.trim_start();
    loop {
        let stem = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(rest.len());
        let tail = &rest[stem..];
        let len = match () {
            _ if stem == 0 => return names,
            _ if tail.starts_with(".rs") => stem + 3,
            _ if tail.starts_with('/') => stem + 1,
            _ => return names,
        };
        let after = &rest[len..];
        if let Some(next) = after.strip_prefix(", ")
            && !entries(next).is_empty()
        {
            names.push(&rest[..len]);
            rest = next;
        } else if after.is_empty() || after.starts_with(char::is_whitespace) {
            names.push(&rest[..len]);
            return names;
        } else {
            return names;
        }
    }
}

fn read_map(doc: &str) -> Map {
    let after = doc
        .split_once(HEADING)
        .unwrap_or_else(|| panic!("docs/architecture.md has no heading {HEADING:?}"))
        .1;
    let (before, block) = after
        .split_once("```text\n")
        .expect("a ```text block under the heading");
    let block = block.split_once("\n```").expect("the block's end").0;
    // The line number of the block's first line, less one.
    let first_line = doc.len() - after.len();
    let first_line = doc[..first_line].lines().count() + before.lines().count();

    let mut map = Map::default();
    // (indent, folder) of the folder entries above, innermost last.
    let mut folders: Vec<(usize, String)> = Vec::new();
    // The folder whose own description the lines now being read continue, if any.
    let mut describing: Option<String> = None;
    // The folder a description's relative paths are read from.
    let mut here = String::new();
    for (k, line) in block.lines().enumerate() {
        let number = first_line + k + 1;
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let names = entries(line);
        let description = if names.is_empty() {
            line
        } else {
            while folders.last().is_some_and(|(i, _)| *i >= indent) {
                folders.pop();
            }
            let parent = folders.last().map_or(String::new(), |(_, f)| f.clone());
            describing = None;
            for name in &names {
                let path = format!("{parent}{name}");
                map.named.entry(path.clone()).or_default().push(number);
                if name.ends_with('/') {
                    folders.push((indent, path.clone()));
                    describing = Some(path);
                }
            }
            here = describing.clone().unwrap_or(parent);
            let skip = names.iter().map(|n| n.len()).sum::<usize>() + 2 * (names.len() - 1);
            &line.trim_start()[skip..]
        };
        for (at, word) in words(description) {
            // `/status/data` is a route, not a file.
            let route = description[..at].ends_with('/') || word.starts_with('/');
            if route {
                continue;
            }
            if word.contains('/') && !word.ends_with('/') || word.matches('/').count() > 1 {
                map.referred.push((number, here.clone(), word.to_owned()));
            } else if let (Some(folder), true) = (&describing, word.ends_with(".rs")) {
                let path = format!("{folder}{word}");
                map.named.entry(path).or_default().push(number);
            }
        }
    }
    map
}

/// Every `.rs` file under `dir`, as a path from `root`.
fn sources(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap();
            out.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// What is wrong between the map and the tree at `src`: files it does not name, names it gives
/// that do not exist, names it gives twice, paths it refers to that exist neither from `src`,
/// nor from the folder described, nor from the repository (`repo`).
fn disagreements(map: &Map, src: &Path, repo: &Path) -> Vec<String> {
    let mut found = BTreeSet::new();
    sources(src, src, &mut found);
    let mut problems = Vec::new();
    for file in &found {
        if !map.named.contains_key(file) {
            problems.push(format!("{file} is not in the map"));
        }
    }
    for (name, lines) in &map.named {
        if !src.join(name).exists() {
            problems.push(format!("line {}: {name} does not exist", lines[0]));
        }
        if lines.len() > 1 {
            problems.push(format!("{name} is named on lines {lines:?}"));
        }
    }
    for (line, here, path) in &map.referred {
        let path = path.trim_end_matches('/');
        let exists = [src.join(path), src.join(here).join(path), repo.join(path)];
        if !exists.iter().any(|p| p.exists()) {
            problems.push(format!("line {line}: {path} does not exist"));
        }
    }
    problems
}

#[test]
fn the_map_names_every_source_file_and_nothing_else() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(crate_dir.join("../../docs/architecture.md")).unwrap();
    let map = read_map(&doc);
    assert!(map.named.len() > 100, "the map was not read: {map:?}");
    let problems = disagreements(&map, &crate_dir.join("src"), &crate_dir.join("../.."));
    assert!(
        problems.is_empty(),
        "docs/architecture.md's file map disagrees with crates/server/src:\n{}",
        problems.join("\n")
    );
}

/// The reading itself, on a small map and tree: it has teeth both ways.
#[test]
fn a_missing_file_a_stale_name_and_a_name_given_twice_are_each_found() {
    let tree = tempfile::tempdir().unwrap();
    for file in [
        "lib.rs",
        "http/mod.rs",
        "http/auth.rs",
        "provider/up/mod.rs",
        "provider/up/stdio.rs",
    ] {
        let path = tree.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }
    let doc = |body: &str| format!("# A\n\n{HEADING}\n\n```text\n{body}```\n");
    let good = doc(
        "lib.rs  the module map\nhttp/  INCOMING\n  mod.rs, auth.rs  routes; see\n                 provider/up/stdio.rs\nprovider/\n  up/  reaching it: mod.rs (serve),\n       stdio.rs\n",
    );
    assert_eq!(
        disagreements(&read_map(&good), tree.path(), tree.path()),
        Vec::<String>::new()
    );

    let bad = doc(
        "lib.rs  the module map\nlib.rs  again\nhttp/  INCOMING\n  mod.rs  routes, see provider/gone.rs\n  old.rs  gone\nprovider/\n  up/  reaching it: mod.rs\n",
    );
    let problems = disagreements(&read_map(&bad), tree.path(), tree.path());
    for wanted in [
        "http/auth.rs is not in the map",
        "provider/up/stdio.rs is not in the map",
        "line 10: http/old.rs does not exist",
        "lib.rs is named on lines [6, 7]",
        "line 9: provider/gone.rs does not exist",
    ] {
        assert!(
            problems.iter().any(|p| p == wanted),
            "{wanted} not in {problems:#?}"
        );
    }
}
