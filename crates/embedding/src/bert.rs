//! A BERT encoder's forward pass over one sequence, in f32: embeddings, then each layer's
//! self-attention and feed-forward block, each followed by a residual sum and layer norm
//! (post-norm, as BERT is). Weights come from a `model.safetensors` with BERT's tensor names;
//! the products go to `matrixmultiply`, which picks the CPU's vector instructions at run time.

use safetensors::{Dtype, SafeTensors};

use crate::LoadError;

/// The shape of the model, read from its `config.json`.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub positions: usize,
    pub layer_norm_eps: f32,
}

struct Linear {
    /// `[out, in]`, as PyTorch stores it.
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

pub struct Bert {
    shape: Shape,
    words: Vec<f32>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

impl Bert {
    pub fn from_safetensors(bytes: &[u8], shape: Shape) -> Result<Bert, LoadError> {
        let tensors = SafeTensors::deserialize(bytes)
            .map_err(|e| LoadError::Weights(format!("model.safetensors: {e}")))?;
        let read = |name: &str, dims: &[usize]| -> Result<Vec<f32>, LoadError> {
            // Checkpoints saved from `BertForMaskedLM` and the like carry a `bert.` prefix.
            let view = tensors
                .tensor(name)
                .or_else(|_| tensors.tensor(&format!("bert.{name}")))
                .map_err(|_| LoadError::Weights(format!("no tensor {name}")))?;
            if view.dtype() != Dtype::F32 || view.shape() != dims {
                return Err(LoadError::Weights(format!(
                    "{name} is {:?} {:?}, expected F32 {dims:?}",
                    view.dtype(),
                    view.shape()
                )));
            }
            Ok(view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect())
        };
        let h = shape.hidden;
        let linear = |name: &str, inputs: usize, outputs: usize| -> Result<Linear, LoadError> {
            Ok(Linear {
                weight: read(&format!("{name}.weight"), &[outputs, inputs])?,
                bias: read(&format!("{name}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };
        let norm = |name: &str| -> Result<Norm, LoadError> {
            Ok(Norm {
                weight: read(&format!("{name}.weight"), &[h])?,
                bias: read(&format!("{name}.bias"), &[h])?,
            })
        };
        let words = tensors
            .tensor("embeddings.word_embeddings.weight")
            .or_else(|_| tensors.tensor("bert.embeddings.word_embeddings.weight"))
            .map_err(|_| LoadError::Weights("no word embeddings".into()))?
            .shape()
            .first()
            .copied()
            .unwrap_or(0);
        let layers = (0..shape.layers)
            .map(|i| {
                let p = format!("encoder.layer.{i}");
                Ok(Layer {
                    query: linear(&format!("{p}.attention.self.query"), h, h)?,
                    key: linear(&format!("{p}.attention.self.key"), h, h)?,
                    value: linear(&format!("{p}.attention.self.value"), h, h)?,
                    attention_out: linear(&format!("{p}.attention.output.dense"), h, h)?,
                    attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                    intermediate: linear(
                        &format!("{p}.intermediate.dense"),
                        h,
                        shape.intermediate,
                    )?,
                    output: linear(&format!("{p}.output.dense"), shape.intermediate, h)?,
                    output_norm: norm(&format!("{p}.output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>, LoadError>>()?;
        Ok(Bert {
            words: read("embeddings.word_embeddings.weight", &[words, h])?,
            positions: read(
                "embeddings.position_embeddings.weight",
                &[shape.positions, h],
            )?,
            token_type: read("embeddings.token_type_embeddings.weight", &[2, h])?,
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            shape,
        })
    }

    pub fn vocabulary_size(&self) -> usize {
        self.words.len() / self.shape.hidden
    }

    pub fn max_positions(&self) -> usize {
        self.shape.positions
    }

    /// For each sequence of `sequences`, the mean of the last layer's token states, `hidden`
    /// long. The sequences go through the linear layers together, as one matrix (larger
    /// products run nearer the CPU's peak); each attends only within itself, with no padding.
    pub fn mean_pooled(&self, sequences: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let h = self.shape.hidden;
        let rows: usize = sequences.iter().map(Vec::len).sum();
        let mut x = Vec::with_capacity(rows * h);
        for ids in sequences {
            for (t, id) in ids.iter().enumerate() {
                let word = &self.words[*id as usize * h..(*id as usize + 1) * h];
                let position = &self.positions[t * h..(t + 1) * h];
                x.extend((0..h).map(|j| word[j] + position[j] + self.token_type[j]));
            }
        }
        layer_norm(&mut x, &self.embedding_norm, h, self.shape.layer_norm_eps);
        for layer in &self.layers {
            self.layer(layer, &mut x, sequences);
        }
        let mut start = 0;
        sequences
            .iter()
            .map(|ids| {
                let mut pooled = vec![0f32; h];
                for row in x[start * h..(start + ids.len()) * h].chunks_exact(h) {
                    pooled.iter_mut().zip(row).for_each(|(p, v)| *p += v);
                }
                pooled.iter_mut().for_each(|p| *p /= ids.len() as f32);
                start += ids.len();
                pooled
            })
            .collect()
    }

    fn layer(&self, layer: &Layer, x: &mut [f32], sequences: &[Vec<u32>]) {
        let Shape {
            hidden: h, heads, ..
        } = self.shape;
        let rows = x.len() / h;
        let d = h / heads;
        let q = apply(&layer.query, x, rows);
        let k = apply(&layer.key, x, rows);
        let v = apply(&layer.value, x, rows);
        let mut context = vec![0f32; rows * h];
        let longest = sequences.iter().map(Vec::len).max().unwrap_or(0);
        let mut scores = vec![0f32; longest * longest];
        let scale = 1.0 / (d as f32).sqrt();
        let mut start = 0;
        for n in sequences.iter().map(Vec::len) {
            let scores = &mut scores[..n * n];
            for head in 0..heads {
                let at = start * h + head * d;
                // scores = q_h · k_hᵀ over this sequence's rows, which lie `h` apart.
                // SAFETY: each matrix lies within its slice, by the dimensions and strides given.
                unsafe {
                    matrixmultiply::sgemm(
                        n,
                        d,
                        n,
                        scale,
                        q[at..].as_ptr(),
                        h as isize,
                        1,
                        k[at..].as_ptr(),
                        1,
                        h as isize,
                        0.0,
                        scores.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
                for row in scores.chunks_exact_mut(n) {
                    softmax(row);
                }
                // context_h = scores · v_h
                // SAFETY: as above.
                unsafe {
                    matrixmultiply::sgemm(
                        n,
                        n,
                        d,
                        1.0,
                        scores.as_ptr(),
                        n as isize,
                        1,
                        v[at..].as_ptr(),
                        h as isize,
                        1,
                        0.0,
                        context[at..].as_mut_ptr(),
                        h as isize,
                        1,
                    );
                }
            }
            start += n;
        }
        let attended = apply(&layer.attention_out, &context, rows);
        add_assign(x, &attended);
        layer_norm(x, &layer.attention_norm, h, self.shape.layer_norm_eps);
        let mut inner = apply(&layer.intermediate, x, rows);
        inner.iter_mut().for_each(|v| *v = gelu(*v));
        let out = apply(&layer.output, &inner, rows);
        add_assign(x, &out);
        layer_norm(x, &layer.output_norm, h, self.shape.layer_norm_eps);
    }
}

/// `x · Wᵀ + b` for `n` rows of `x`.
fn apply(linear: &Linear, x: &[f32], n: usize) -> Vec<f32> {
    let (i, o) = (linear.inputs, linear.outputs);
    debug_assert_eq!(x.len(), n * i);
    let mut out: Vec<f32> = (0..n).flat_map(|_| linear.bias.iter().copied()).collect();
    // SAFETY: x is n×i row-major, W is o×i row-major (read as its transpose, i×o), out is
    // n×o row-major: every index the product reads or writes lies within its slice.
    unsafe {
        matrixmultiply::sgemm(
            n,
            i,
            o,
            1.0,
            x.as_ptr(),
            i as isize,
            1,
            linear.weight.as_ptr(),
            1,
            i as isize,
            1.0,
            out.as_mut_ptr(),
            o as isize,
            1,
        );
    }
    out
}

fn add_assign(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

fn layer_norm(x: &mut [f32], norm: &Norm, h: usize, eps: f32) {
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = (*v - mean) * scale * w + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    row.iter_mut().for_each(|v| *v /= sum);
}

/// BERT's exact GELU, `x·Φ(x)`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function (std has none), from the Chebyshev fit of erfc in Numerical Recipes:
/// relative error below 1.2e-7 everywhere, computed in f64.
fn erf(x: f32) -> f32 {
    let x = f64::from(x);
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let y = t
        * (-x * x - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    (if x >= 0.0 { 1.0 - y } else { y - 1.0 }) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (-1.0, -0.842_700_8),
        ] {
            assert!((erf(x) - want).abs() < 1e-6, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_order() {
        let mut row = [1.0f32, 3.0, 2.0, 4.0];
        softmax(&mut row);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(row[3] > row[1] && row[1] > row[2] && row[2] > row[0]);
        // Large scores do not overflow: the largest is taken off first.
        let mut large = [1000.0f32, 0.0];
        softmax(&mut large);
        assert_eq!(large, [1.0, 0.0]);
    }

    #[test]
    fn a_linear_layer_is_x_times_w_transposed_plus_b() {
        let linear = Linear {
            weight: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], // 2 outputs × 3 inputs
            bias: vec![0.5, -0.5],
            inputs: 3,
            outputs: 2,
        };
        let out = apply(&linear, &[1.0, 0.0, -1.0, 2.0, 1.0, 0.0], 2);
        assert_eq!(
            out,
            [
                1.0 - 3.0 + 0.5,
                4.0 - 6.0 - 0.5,
                2.0 + 2.0 + 0.5,
                8.0 + 5.0 - 0.5
            ]
        );
    }
}
