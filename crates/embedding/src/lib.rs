//! Sentence embeddings from a BERT-family model on disk, in plain Rust: the directory of a
//! sentence-transformers model (`config.json`, `vocab.txt`, `model.safetensors`, as
//! all-MiniLM-L6-v2 ships), its uncased WordPiece tokenizer, the encoder, mean pooling and
//! unit length — what `SentenceTransformer(dir).encode(text)` answers. Used by tool discovery
//! to match a need to a tool by meaning where they share no word.
//!
//! Nothing is fetched: the model is read from the path given, once.

mod bert;
mod wordpiece;

use std::path::{Path, PathBuf};

use bert::{Bert, Shape};
use wordpiece::WordPiece;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config.json: {0}")]
    Config(String),
    #[error("vocab.txt: {0}")]
    Vocabulary(String),
    #[error("{0}")]
    Weights(String),
}

/// A loaded model: encodes texts to unit vectors whose dot product is their cosine similarity.
pub struct SentenceEncoder {
    tokenizer: WordPiece,
    model: Bert,
    max_tokens: usize,
}

/// The most word pieces of a text read (all-MiniLM-L6-v2 was trained on 128; what follows is
/// cut). Tool descriptions say what a tool does first.
pub const MAX_TOKENS: usize = 128;

/// Word pieces encoded in one pass of the model (whole texts; one longer text alone).
const BATCH_ROWS: usize = 512;

impl SentenceEncoder {
    /// Reads the model in `dir`.
    pub fn load(dir: &Path) -> Result<SentenceEncoder, LoadError> {
        let read = |file: &str| {
            let path = dir.join(file);
            std::fs::read(&path).map_err(|source| LoadError::Read { path, source })
        };
        let config: serde_json::Value = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| LoadError::Config(e.to_string()))?;
        let number = |key: &str| {
            config[key]
                .as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| LoadError::Config(format!("no {key}")))
        };
        if config["model_type"].as_str().is_some_and(|t| t != "bert") {
            return Err(LoadError::Config(format!(
                "model_type {} is not bert",
                config["model_type"]
            )));
        }
        let shape = Shape {
            hidden: number("hidden_size")?,
            heads: number("num_attention_heads")?,
            intermediate: number("intermediate_size")?,
            layers: number("num_hidden_layers")?,
            positions: number("max_position_embeddings")?,
            layer_norm_eps: config["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32,
        };
        if shape.heads == 0 || !shape.hidden.is_multiple_of(shape.heads) {
            return Err(LoadError::Config(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                shape.hidden, shape.heads
            )));
        }
        let vocabulary = String::from_utf8(read("vocab.txt")?)
            .map_err(|_| LoadError::Vocabulary("not UTF-8".into()))?;
        let tokenizer = WordPiece::from_vocab(&vocabulary)?;
        let model = Bert::from_safetensors(&read("model.safetensors")?, shape)?;
        if tokenizer.vocabulary_size() > model.vocabulary_size() {
            return Err(LoadError::Vocabulary(format!(
                "{} pieces, but the model embeds {}",
                tokenizer.vocabulary_size(),
                model.vocabulary_size()
            )));
        }
        Ok(SentenceEncoder {
            max_tokens: MAX_TOKENS.min(model.max_positions()),
            tokenizer,
            model,
        })
    }

    /// `text` as a unit vector.
    pub fn encode(&self, text: &str) -> Vec<f32> {
        self.encode_all(&[text]).pop().unwrap_or_default()
    }

    /// Each of `texts` as a unit vector, in order: a few hundred word pieces at a time through
    /// the model, spread over the CPU's cores (`std::thread::available_parallelism`).
    pub fn encode_all(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let sequences: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| self.tokenizer.encode(t, self.max_tokens))
            .collect();
        let mut batches: Vec<&[Vec<u32>]> = Vec::new();
        let mut rest = &sequences[..];
        while !rest.is_empty() {
            let mut rows = 0;
            let take = rest
                .iter()
                .take_while(|s| {
                    rows += s.len();
                    rows <= BATCH_ROWS
                })
                .count()
                .max(1);
            batches.push(&rest[..take]);
            rest = &rest[take..];
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut out: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
        for wave in batches.chunks(threads) {
            let encoded: Vec<Vec<Vec<f32>>> = std::thread::scope(|scope| {
                let running: Vec<_> = wave
                    .iter()
                    .skip(1)
                    .map(|batch| scope.spawn(|| self.model.mean_pooled(batch)))
                    .collect();
                let mut done = vec![self.model.mean_pooled(wave[0])];
                done.extend(
                    running
                        .into_iter()
                        .map(|r| r.join().expect("encoding panicked")),
                );
                done
            });
            out.extend(encoded.into_iter().flatten());
        }
        for v in &mut out {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|x| *x /= norm);
        }
        out
    }
}

/// The dot product: the cosine similarity of two unit vectors.
pub fn similarity(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model the project installs (scripts/install-discovery-model.sh), or the one
    /// `EMBEDDING_MODEL` names.
    fn model_dir() -> PathBuf {
        std::env::var_os("EMBEDDING_MODEL").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/models/all-MiniLM-L6-v2"),
            PathBuf::from,
        )
    }

    /// The similarities sentence-transformers' own documentation prints for these three
    /// sentences with all-MiniLM-L6-v2: tokenizer, encoder, pooling and normalisation all have
    /// to match it to the fourth decimal.
    #[test]
    fn reproduces_the_similarities_sentence_transformers_documents() {
        let encoder =
            SentenceEncoder::load(&model_dir()).expect("the discovery model is installed");
        let e: Vec<Vec<f32>> = [
            "The weather is lovely today.",
            "It's so sunny outside!",
            "He drove to the stadium.",
        ]
        .iter()
        .map(|s| encoder.encode(s))
        .collect();
        let expected = [
            [1.0, 0.6660, 0.1046],
            [0.6660, 1.0, 0.1411],
            [0.1046, 0.1411, 1.0],
        ];
        for i in 0..3 {
            assert_eq!(e[i].len(), 384);
            for j in 0..3 {
                let got = similarity(&e[i], &e[j]);
                assert!(
                    (got - expected[i][j]).abs() < 5e-4,
                    "similarity[{i}][{j}] = {got:.4}, documented {:.4}",
                    expected[i][j]
                );
            }
        }
    }

    #[test]
    fn a_missing_or_broken_model_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = SentenceEncoder::load(dir.path()).err().unwrap();
        assert!(err.to_string().contains("config.json"), "{err}");
        std::fs::write(dir.path().join("config.json"), r#"{"model_type": "gpt2"}"#).unwrap();
        let err = SentenceEncoder::load(dir.path()).err().unwrap();
        assert!(err.to_string().contains("not bert"), "{err}");
    }
}
