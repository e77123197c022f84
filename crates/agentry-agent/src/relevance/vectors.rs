//! The gate's embeddings: tool texts kept (least recently used dropped) so
//! a run's tools are embedded once, and the small-talk requests embedded
//! once per gate.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use hashlink::LruCache;

use agentry_core::embed::{EmbedError, Embedder};

/// Tool texts already embedded, at most `kept` of them.
pub(super) struct KnownVectors {
    known: Mutex<LruCache<String, Vec<f32>>>,
}

impl KnownVectors {
    pub(super) fn keeping(kept: usize) -> Self {
        Self {
            known: Mutex::new(LruCache::new(kept.max(1))),
        }
    }

    /// How many vectors are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The vector of each of `texts`, in order: those already known (marked
    /// as used), and each text not yet known embedded once (`dedup` alone
    /// would miss duplicates that are not next to each other).
    pub(super) async fn vectors(
        &self,
        embedder: &dyn Embedder,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let (mut vectors_of, missing) = {
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            let mut vectors_of: HashMap<&str, Vec<f32>> = HashMap::new();
            let mut missing = Vec::new();
            let mut seen = HashSet::new();
            for text in texts {
                if !seen.insert(text.as_str()) {
                    continue;
                }
                match known.get(text) {
                    Some(vector) => {
                        vectors_of.insert(text, vector.clone());
                    }
                    None => missing.push(text.clone()),
                }
            }
            (vectors_of, missing)
        };
        let fresh = if missing.is_empty() {
            Vec::new()
        } else {
            counted(embedder.embed(&missing).await?, missing.len())?
        };
        {
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            for (text, vector) in missing.iter().zip(&fresh) {
                known.insert(text.clone(), vector.clone());
            }
        }
        for (text, vector) in missing.iter().zip(fresh) {
            vectors_of.insert(text, vector);
        }
        Ok(texts
            .iter()
            .map(|text| vectors_of[text.as_str()].clone())
            .collect())
    }
}

/// `vectors`, when there is one for each of `asked` texts.
pub(super) fn counted(vectors: Vec<Vec<f32>>, asked: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    if vectors.len() == asked {
        Ok(vectors)
    } else {
        Err(EmbedError::failed(format!(
            "{} vectors for {asked} texts",
            vectors.len()
        )))
    }
}
