//! Documents split into sections by heading: Markdown (ATX `#` and setext underlines, not
//! inside fenced code), reStructuredText (a title underlined, optionally overlined, by a
//! punctuation character; levels in the order the styles first appear) and plain text (one
//! section). A section runs from its heading to the next heading of any level; its heading
//! path is the chain of headings above it (`Configuration > search > roots`).

use std::path::Path;

/// The text before the first heading has this empty path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Outermost heading first.
    pub heading_path: Vec<String>,
    /// 1-based, inclusive; the heading's line.
    pub start_line: usize,
    pub end_line: usize,
    pub text: String,
}

/// How a document is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Rst,
    Text,
}

impl Format {
    pub fn of(path: &Path) -> Format {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .as_deref()
        {
            Some("md" | "markdown" | "mdx") => Format::Markdown,
            Some("rst") => Format::Rst,
            _ => Format::Text,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Rst => "rst",
            Format::Text => "text",
        }
    }
}

/// A heading found at a line: its level (1 = outermost), its text, and how many lines it
/// takes (2 for an underlined one, 3 for an overlined one).
struct Heading {
    line: usize,
    level: usize,
    title: String,
}

/// The sections of `text`, in order; sections without any text but their heading are kept
/// (a heading is something to find).
pub fn sections(text: &str, format: Format) -> Vec<Section> {
    let lines: Vec<&str> = text.lines().collect();
    let headings = match format {
        Format::Markdown => markdown_headings(&lines),
        Format::Rst => rst_headings(&lines),
        Format::Text => Vec::new(),
    };
    let mut out = Vec::new();
    let first = headings.first().map_or(lines.len(), |h| h.line);
    if first > 0 && lines[..first].iter().any(|l| !l.trim().is_empty()) {
        out.push(section(&lines, Vec::new(), 0, first));
    }
    let mut path: Vec<(usize, String)> = Vec::new();
    for (i, h) in headings.iter().enumerate() {
        path.retain(|(level, _)| *level < h.level);
        path.push((h.level, h.title.clone()));
        let end = headings.get(i + 1).map_or(lines.len(), |n| n.line);
        let names = path.iter().map(|(_, t)| t.clone()).collect();
        out.push(section(&lines, names, h.line, end));
    }
    out
}

fn section(lines: &[&str], heading_path: Vec<String>, from: usize, to: usize) -> Section {
    Section {
        heading_path,
        start_line: from + 1,
        end_line: to.max(from + 1),
        text: lines[from..to].join("\n"),
    }
}

fn markdown_headings(lines: &[&str]) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        for marker in ["```", "~~~"] {
            if trimmed.starts_with(marker) {
                fence = match fence {
                    None => Some(marker),
                    Some(open) if open == marker => None,
                    other => other,
                };
            }
        }
        if fence.is_some() || trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            continue;
        }
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes)
            && line.len() - trimmed.len() < 4
            && trimmed[hashes..].starts_with([' ', '\t'])
        {
            let title = trimmed[hashes..].trim().trim_end_matches('#').trim();
            out.push(Heading {
                line: i,
                level: hashes,
                title: title.to_owned(),
            });
            continue;
        }
        // Setext: a text line underlined by === (1) or --- (2).
        if let Some(next) = lines.get(i + 1) {
            let under = next.trim();
            let text = line.trim();
            if !text.is_empty()
                && !under.is_empty()
                && !text.starts_with(['-', '*', '>', '|'])
                && (under.chars().all(|c| c == '=')
                    || (under.chars().all(|c| c == '-') && under.len() >= 2))
            {
                out.push(Heading {
                    line: i,
                    level: if under.starts_with('=') { 1 } else { 2 },
                    title: text.to_owned(),
                });
            }
        }
    }
    out
}

const RST_ADORNMENT: &str = "=-~^\"'`#*+:.,_<>";

fn rst_adornment(line: &str) -> Option<char> {
    let line = line.trim_end();
    let c = line.chars().next()?;
    (line.len() >= 3 && RST_ADORNMENT.contains(c) && line.chars().all(|x| x == c)).then_some(c)
}

fn rst_headings(lines: &[&str]) -> Vec<Heading> {
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let over = rst_adornment(lines[i]);
        let (title_line, under_line, overlined) = match over {
            Some(_) if i + 2 < lines.len() => (i + 1, i + 2, true),
            _ => (i, i + 1, false),
        };
        let title = lines[title_line].trim();
        let under = rst_adornment(lines[under_line]);
        let fits = under.is_some()
            && !title.is_empty()
            && rst_adornment(title).is_none()
            && lines[under_line].trim_end().len() >= title.chars().count()
            && (!overlined || over == under);
        if fits {
            let style = (under.unwrap_or('='), overlined);
            let level = match styles.iter().position(|s| *s == style) {
                Some(p) => p + 1,
                None => {
                    styles.push(style);
                    styles.len()
                }
            };
            out.push(Heading {
                line: i,
                level,
                title: title.to_owned(),
            });
            i = under_line + 1;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str, format: Format) -> Vec<(String, usize, usize)> {
        sections(text, format)
            .into_iter()
            .map(|s| (s.heading_path.join(" > "), s.start_line, s.end_line))
            .collect()
    }

    #[test]
    fn markdown_by_heading_not_inside_code() {
        let md = "intro\n# Title\ntext\n## Setup\n```\n# not a heading\n```\nSub\n---\nx\n# Next\n";
        assert_eq!(
            paths(md, Format::Markdown),
            [
                ("".into(), 1, 1),
                ("Title".into(), 2, 3),
                ("Title > Setup".into(), 4, 7),
                ("Title > Sub".into(), 8, 10),
                ("Next".into(), 11, 11),
            ]
        );
    }

    #[test]
    fn rst_levels_follow_first_use() {
        let rst = "=====\nGuide\n=====\n\nIntro\n-----\ntext\n\nMore\n----\nx\n\nAgain\n=====\n";
        assert_eq!(
            paths(rst, Format::Rst),
            [
                ("Guide".into(), 1, 4),
                ("Guide > Intro".into(), 5, 8),
                ("Guide > More".into(), 9, 12),
                // `=` underlined only is a new style: one level deeper than the ones before.
                ("Guide > More > Again".into(), 13, 14),
            ]
        );
    }

    #[test]
    fn plain_text_is_one_section() {
        assert_eq!(paths("a\nb\n", Format::Text), [("".into(), 1, 2)]);
    }
}
