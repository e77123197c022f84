//! A record's sketch: two bits a dimension of its unit vector, the sign
//! and whether the value is large, kept in RAM by the recall index and in
//! the `memory.sketch` column.
//!
//! The signs alone rank records by Hamming distance (one pass over every
//! record). Signs and sizes together estimate the dot product with a query
//! far more closely: each dimension read as ±1 when small and ±[`LARGE_RATIO`]
//! when large. On real MiniLM embeddings the estimate keeps the exact top
//! five among 64 candidates as often as signs alone did among 200
//! (`BENCHMARKS.md`), so recall re-scores a third as many vectors.

/// The format byte that opens a stored sketch. Sketches of the first
/// format (signs only, a whole number of 8-byte words, no format byte) are
/// computed again from the record's vector.
pub const FORMAT: u8 = 2;

/// SQL that holds for a `memory` row whose sketch must be computed again
/// from its vector: none stored, or one of the first format (a whole number
/// of 8-byte words). An empty sketch marks an unsearchable record.
pub const OUTDATED_SQL: &str =
    "(sketch IS NULL OR (length(sketch) > 0 AND length(sketch) % 8 = 0))";

/// A value of a unit vector of `d` dimensions is large when its magnitude is
/// over this many times `1 / sqrt(d)`: the median magnitude of a Gaussian
/// value of that spread, so about half of a vector's values are large.
pub const LARGE_THRESHOLD: f32 = 0.6745;

/// How much a large value counts against a small one in the estimate: the
/// mean magnitude of a Gaussian value above its median magnitude over the
/// mean below it (1.271 / 0.325). Measured on real text, 3 to 5 rank alike.
pub const LARGE_RATIO: f32 = 3.9;

/// Two bit planes, each `u64` words (bit `i % 64` of word `i / 64` is dimension `i`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sketch {
    /// Set where the value is positive.
    pub signs: Vec<u64>,
    /// Set where the value's magnitude is over the threshold.
    pub large: Vec<u64>,
}

/// The sketch of the unit vector `vector`.
pub fn sketch(vector: &[f32]) -> Sketch {
    let words = vector.len().div_ceil(64);
    let threshold = LARGE_THRESHOLD / (vector.len().max(1) as f32).sqrt();
    let mut sketch = Sketch {
        signs: vec![0; words],
        large: vec![0; words],
    };
    for (i, value) in vector.iter().enumerate() {
        if *value > 0.0 {
            sketch.signs[i / 64] |= 1 << (i % 64);
        }
        if value.abs() > threshold {
            sketch.large[i / 64] |= 1 << (i % 64);
        }
    }
    sketch
}

impl Sketch {
    /// As stored: the format byte, then the signs' and the sizes' words as
    /// little-endian bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(1 + 16 * self.signs.len());
        bytes.push(FORMAT);
        for word in self.signs.iter().chain(&self.large) {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    /// A stored sketch; `None` when it is of the first format or malformed
    /// (the caller computes it from the vector).
    pub fn from_bytes(bytes: &[u8]) -> Option<Sketch> {
        let (&format, planes) = bytes.split_first()?;
        if format != FORMAT || planes.is_empty() || !planes.len().is_multiple_of(16) {
            return None;
        }
        let mut words = planes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")));
        let half = planes.len() / 16;
        let signs = words.by_ref().take(half).collect();
        let large = words.collect();
        Some(Sketch { signs, large })
    }
}

/// The dot product of a query with sketches, estimated through a table of
/// the query's partial sums: eight dimensions a lookup.
pub struct Estimator {
    /// `sums[j * 256 + b]`: the query's values at the bits set in byte `b` of byte slot `j`.
    sums: Vec<f32>,
}

impl Estimator {
    /// For the unit vector `query` against sketches of `words` words a plane.
    pub fn new(query: &[f32], words: usize) -> Self {
        let bytes = words * 8;
        let mut sums = vec![0f32; bytes * 256];
        for j in 0..bytes {
            for b in 1..256usize {
                let low = b.trailing_zeros() as usize;
                let value = query.get(j * 8 + low).copied().unwrap_or(0.0);
                sums[j * 256 + b] = sums[j * 256 + (b & (b - 1))] + value;
            }
        }
        Self { sums }
    }

    /// The estimate for one sketch, up to a scale and a term shared by every
    /// sketch (so it only ranks): with `s` the signs as ±1 and `l` the sizes
    /// as 0/1, `Σ q·s·(1 + (R − 1)·l)` = `2·T(s) + (R − 1)·(2·T(s ∧ l) − T(l))`
    /// less `Σ q`, where `T(x)` sums the query over the bits set in `x`.
    pub fn estimate(&self, signs: &[u64], large: &[u64]) -> f32 {
        let mut positive = 0.0f32;
        let mut large_positive = 0.0f32;
        let mut large_all = 0.0f32;
        for (w, (sign, size)) in signs.iter().zip(large).enumerate() {
            let (sign, size) = (sign.to_le_bytes(), size.to_le_bytes());
            for k in 0..8 {
                let slot = &self.sums[(w * 8 + k) * 256..(w * 8 + k + 1) * 256];
                positive += slot[sign[k] as usize];
                large_positive += slot[(sign[k] & size[k]) as usize];
                large_all += slot[size[k] as usize];
            }
        }
        2.0 * positive + (LARGE_RATIO - 1.0) * (2.0 * large_positive - large_all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sketch_has_a_sign_and_a_size_bit_per_dimension_and_round_trips_through_bytes() {
        // Four dimensions: the threshold is 0.6745 / 2.
        let sketch = sketch(&[0.5, -0.1, 0.0, -0.9]);
        assert_eq!(sketch.signs, [0b0001]);
        assert_eq!(sketch.large, [0b1001]);
        let bytes = sketch.to_bytes();
        assert_eq!(bytes.len(), 17);
        assert_eq!(bytes[0], FORMAT);
        assert_eq!(Sketch::from_bytes(&bytes), Some(sketch));

        let long: Vec<f32> = (0..130)
            .map(|i| if i % 2 == 0 { 0.5 } else { -0.01 })
            .collect();
        let long = super::sketch(&long);
        assert_eq!((long.signs.len(), long.large.len()), (3, 3));
        assert_eq!(long.signs[2], 0b01);
        assert_eq!(Sketch::from_bytes(&long.to_bytes()), Some(long));
    }

    #[test]
    fn a_sketch_of_the_first_format_or_a_malformed_one_is_not_read() {
        assert_eq!(Sketch::from_bytes(&[0u8; 48]), None, "signs only");
        assert_eq!(Sketch::from_bytes(&[]), None);
        assert_eq!(Sketch::from_bytes(&[FORMAT]), None);
        assert_eq!(Sketch::from_bytes(&[FORMAT; 9]), None, "one plane");
        assert_eq!(Sketch::from_bytes(&[3; 17]), None, "another format");
    }

    #[test]
    fn the_estimate_follows_the_dot_product_and_weighs_large_values_more() {
        let query = [0.8f32, -0.6];
        let estimator = Estimator::new(&query, 1);
        let estimate = |v: &[f32]| {
            let s = sketch(v);
            estimator.estimate(&s.signs, &s.large)
        };
        // Same signs as the query: the larger values along its larger dimension score higher.
        let close = estimate(&[0.9, -0.1]);
        let closer = estimate(&[0.9, -0.9]);
        let opposite = estimate(&[-0.9, 0.9]);
        assert!(closer > close && close > opposite);
        // Exactly: with T(x) over the set bits, 2·T(s) + (R − 1)·(2·T(s ∧ l) − T(l)).
        let r = LARGE_RATIO - 1.0;
        assert_eq!(closer, 2.0 * 0.8 + r * (2.0 * 0.8 - (0.8 - 0.6)));
    }
}
