//! BERT's uncased tokenizer: text cleaned, lowercased, accents stripped, split at whitespace,
//! punctuation and CJK characters, then each word cut into the longest pieces of the model's
//! vocabulary (`vocab.txt`: one piece per line, its line number its id).

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::LoadError;

/// A word longer than this (in characters) is one unknown piece, as in BERT's own tokenizer.
const MAX_WORD_CHARS: usize = 100;

pub struct WordPiece {
    ids: HashMap<String, u32>,
    unknown: u32,
    pub(crate) cls: u32,
    pub(crate) sep: u32,
}

impl WordPiece {
    pub fn from_vocab(text: &str) -> Result<WordPiece, LoadError> {
        let ids: HashMap<String, u32> = text
            .lines()
            .enumerate()
            .map(|(i, piece)| (piece.to_owned(), i as u32))
            .collect();
        let special = |piece: &str| {
            ids.get(piece)
                .copied()
                .ok_or_else(|| LoadError::Vocabulary(format!("no {piece} in vocab.txt")))
        };
        Ok(WordPiece {
            unknown: special("[UNK]")?,
            cls: special("[CLS]")?,
            sep: special("[SEP]")?,
            ids,
        })
    }

    pub fn vocabulary_size(&self) -> usize {
        self.ids.len()
    }

    /// The ids of `text`'s pieces between `[CLS]` and `[SEP]`, at most `max` in all (the rest
    /// is cut, as the model was trained to read).
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let mut out = vec![self.cls];
        'words: for word in words(text) {
            for id in self.pieces(&word) {
                if out.len() + 1 >= max {
                    break 'words;
                }
                out.push(id);
            }
        }
        out.push(self.sep);
        out
    }

    /// Greedy longest-match-first, continuation pieces prefixed `##`; a word with a part no
    /// piece matches is one `[UNK]`.
    fn pieces(&self, word: &str) -> Vec<u32> {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > MAX_WORD_CHARS {
            return vec![self.unknown];
        }
        let mut out = Vec::new();
        let mut start = 0;
        let mut candidate = String::with_capacity(word.len() + 2);
        while start < chars.len() {
            let mut end = chars.len();
            let found = loop {
                if end == start {
                    break None;
                }
                candidate.clear();
                if start > 0 {
                    candidate.push_str("##");
                }
                candidate.extend(&chars[start..end]);
                if let Some(id) = self.ids.get(&candidate) {
                    break Some(*id);
                }
                end -= 1;
            };
            match found {
                Some(id) => out.push(id),
                None => return vec![self.unknown],
            }
            start = end;
        }
        out
    }
}

/// The words of `text` as BERT's basic tokenizer splits them: control characters dropped,
/// lowercased and without accents, each punctuation mark and CJK character a word of its own.
fn words(text: &str) -> Vec<String> {
    let mut spaced = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) {
            continue;
        }
        if is_cjk(c) {
            spaced.push(' ');
            spaced.push(c);
            spaced.push(' ');
        } else {
            spaced.push(c);
        }
    }
    let mut out = Vec::new();
    for word in spaced.split_whitespace() {
        let plain: String = word
            .to_lowercase()
            .nfd()
            .filter(|c| !is_combining_mark(*c))
            .collect();
        let mut current = String::new();
        for c in plain.chars() {
            if is_punctuation(c) {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                out.push(c.to_string());
            } else {
                current.push(c);
            }
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

/// ASCII's non-alphanumeric printable characters (BERT counts `$`, `^`, `` ` `` among them),
/// and beyond ASCII what is neither a letter, a digit nor space. BERT asks Unicode's P*
/// categories there; the difference is symbols (`€`, emoji), which its vocabulary mostly
/// lacks either way.
fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_punctuation()
    } else {
        !c.is_alphanumeric() && !c.is_whitespace() && !is_combining_mark(c)
    }
}

/// The CJK Unified Ideograph blocks BERT's tokenizer splits character by character.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> WordPiece {
        let pieces = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "get", "file", "##s", "content", "cafe", "un",
            "##want", "##ed", ",", "runn", "##ing", "中",
        ];
        WordPiece::from_vocab(&pieces.join("\n")).unwrap()
    }

    #[test]
    fn words_split_at_punctuation_and_lose_case_and_accents() {
        assert_eq!(
            words("Get_File\tCONTENTS, Café!"),
            ["get", "_", "file", "contents", ",", "cafe", "!"]
        );
        assert_eq!(words("中文x"), ["中", "文", "x"]);
        assert_eq!(words("a\u{7}b"), ["ab"]);
    }

    #[test]
    fn pieces_are_the_longest_in_the_vocabulary() {
        let v = vocab();
        // [CLS] un ##want ##ed , runn ##ing [SEP]
        assert_eq!(
            v.encode("unwanted, running", 64),
            [2, 9, 10, 11, 12, 13, 14, 3]
        );
        // A word with a part no piece matches is one [UNK]; so is an overlong one.
        assert_eq!(v.encode("files xyz", 64), [2, 5, 6, 1, 3]);
        assert_eq!(v.encode(&"a".repeat(101), 64), [2, 1, 3]);
        // Cut to `max` with [SEP] kept last.
        assert_eq!(v.encode("get get get get", 4), [2, 4, 4, 3]);
    }

    #[test]
    fn a_vocabulary_without_its_special_pieces_is_refused() {
        assert!(WordPiece::from_vocab("[PAD]\n[UNK]\nget").is_err());
    }
}
