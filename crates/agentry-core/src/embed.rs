//! The `Embedder` trait: text in, vectors out. Memory recall and skill search
//! rank by the cosine similarity of these vectors.

/// The future type [`Embedder::embed`] returns.
pub use futures_util::future::BoxFuture;

/// Why embedding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embedding failed: {0}")]
pub struct EmbedError(pub String);

/// Turns texts into fixed-size vectors.
pub trait Embedder: Send + Sync {
    /// The model's id, for traces and stored records.
    fn model_id(&self) -> &str;

    /// Length of every vector.
    fn dimensions(&self) -> usize;

    /// One vector per text, in order.
    fn embed<'a>(&'a self, texts: &'a [String])
    -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>;
}

/// Cosine similarity of two vectors (0 when either is all zeros or lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut norm_a, mut norm_b) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    if norm_a == 0.0 || norm_b == 0.0 {
        0.0
    } else {
        dot / (norm_a.sqrt() * norm_b.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert!((cosine(&[1.0, 1.0], &[-1.0, -1.0]) + 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }
}
