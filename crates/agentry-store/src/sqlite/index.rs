//! The SQLite store's recall index, one per session, in RAM.
//!
//! Every record has a [`Sketch`]: two bits a dimension of its unit vector,
//! the sign and whether the value is large (96 bytes for 384 dimensions),
//! persisted in the `memory.sketch` column and read through a covering
//! index, so opening a store reads about a hundred bytes a record instead
//! of its vector. A session of up to [`EXACT_LIMIT`] records also keeps its
//! exact vectors here and is scanned exactly. A larger one is scanned in
//! three stages: the Hamming distance between the signs keeps
//! [`COARSE_FACTOR`] × [`CANDIDATES`] records, the query's dot product
//! with their sketches, estimated ([`Estimator`]), keeps [`CANDIDATES`],
//! and those are re-scored exactly from the vectors in the file: recall
//! reads 48 bytes a record, a few thousand sketches, and a few dozen
//! vectors, not every vector.

use std::collections::BinaryHeap;

use agentry_core::embed::dot;

use super::sketch::{Estimator, Sketch, sketch};

/// Sessions up to this many records keep their vectors in RAM and are
/// scanned exactly (1.0 ms at 10,000 records; about 25 MB at 384 dimensions).
pub const EXACT_LIMIT: usize = 16_384;

/// For each record re-scored exactly, how many are first taken by Hamming
/// distance and ranked by the query against their sketches.
pub const COARSE_FACTOR: usize = 40;

/// The least number of a large session's records, best by sketch, that are
/// re-scored exactly by default (one in [`RECORDS_PER_CANDIDATE`] when
/// that is more). Chosen by measurement on real embeddings
/// (`BENCHMARKS.md`);
/// [`SqliteStore::set_rescore_candidates`](crate::SqliteStore::set_rescore_candidates)
/// changes it.
pub const CANDIDATES: usize = 64;

/// Past 384,000 records the default re-scores one record in this many
/// (166 at 1M), so recall@5 holds as the session grows.
pub const RECORDS_PER_CANDIDATE: usize = 6_000;

/// How many records of a session of `len` are re-scored by default.
pub fn default_candidates(len: usize) -> usize {
    CANDIDATES.max(len / RECORDS_PER_CANDIDATE)
}

/// One session's records as the index sees them.
pub struct SessionIndex {
    /// The highest record id loaded (rows above it are read on the next look).
    pub last_id: i64,
    ids: Vec<i64>,
    /// Words per sketch plane (0 until the first record).
    words: usize,
    /// Every record's sign plane, `words` words each, in `ids` order.
    signs: Vec<u64>,
    /// Every record's size plane, the same way.
    large: Vec<u64>,
    /// The exact unit vectors, `ids.len() * dims` values, while the session
    /// has at most [`EXACT_LIMIT`] records.
    exact: Option<Exact>,
}

struct Exact {
    dims: usize,
    values: Vec<f32>,
}

/// What a search found: a final ranking, or candidates to re-score.
#[derive(Debug, PartialEq)]
pub enum Found {
    /// `(score, id)`, best first, at most `limit`, each at least `min_score`.
    Ranked(Vec<(f32, i64)>),
    /// Ids to re-score exactly against the vectors in the file, in id order.
    Rescore(Vec<i64>),
}

/// An empty index keeps exact vectors until the session outgrows them.
impl Default for SessionIndex {
    fn default() -> Self {
        Self {
            last_id: 0,
            ids: Vec::new(),
            words: 0,
            signs: Vec::new(),
            large: Vec::new(),
            exact: Some(Exact {
                dims: 0,
                values: Vec::new(),
            }),
        }
    }
}

impl SessionIndex {
    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it still keeps exact vectors (and wants them for new records).
    pub fn wants_vectors(&self) -> bool {
        self.exact.is_some()
    }

    /// Stop keeping exact vectors (the session is too large for them).
    pub fn drop_vectors(&mut self) {
        self.exact = None;
    }

    /// Add a record's sketch, and its unit vector while exact vectors are
    /// kept (`None` gives them up). A sketch of another length than the
    /// session's is refused (`false`): it cannot be compared.
    pub fn push(&mut self, id: i64, sketch: &Sketch, vector: Option<&[f32]>) -> bool {
        self.push_planes(id, &sketch.signs, &sketch.large, vector)
    }

    /// [`push`](Self::push) with the sketch's two planes as they lie in a block.
    pub fn push_planes(
        &mut self,
        id: i64,
        signs: &[u64],
        large: &[u64],
        vector: Option<&[f32]>,
    ) -> bool {
        if self.ids.is_empty() {
            self.words = signs.len();
        }
        if signs.len() != self.words || large.len() != self.words {
            return false;
        }
        match (&mut self.exact, vector) {
            (Some(exact), Some(vector)) if self.ids.len() < EXACT_LIMIT => {
                if exact.values.is_empty() {
                    exact.dims = vector.len();
                }
                if vector.len() != exact.dims {
                    return false;
                }
                exact.values.extend_from_slice(vector);
            }
            _ => self.exact = None,
        }
        self.ids.push(id);
        self.signs.extend_from_slice(signs);
        self.large.extend_from_slice(large);
        self.last_id = self.last_id.max(id);
        true
    }

    /// The records nearest to the unit vector `query`; a large session
    /// names its `candidates` nearest by sketch for re-scoring.
    pub fn search(&self, query: &[f32], limit: usize, min_score: f32, candidates: usize) -> Found {
        if self.ids.is_empty() || limit == 0 {
            return Found::Ranked(Vec::new());
        }
        if let Some(exact) = &self.exact {
            if exact.dims != query.len() {
                return Found::Ranked(Vec::new());
            }
            return Found::Ranked(self.scan_exact(exact, query, limit, min_score));
        }
        let target = sketch(query).signs;
        if target.len() != self.words {
            return Found::Ranked(Vec::new());
        }
        let wanted = candidates.max(limit);
        let coarse = self.nearest_by_sketch(&target, wanted.saturating_mul(COARSE_FACTOR));
        let chosen = if coarse.len() <= wanted {
            coarse
        } else {
            self.best_estimated(query, coarse, wanted)
        };
        let mut ids: Vec<i64> = chosen.iter().map(|&position| self.ids[position]).collect();
        ids.sort_unstable();
        Found::Rescore(ids)
    }

    /// The `wanted` of `positions` whose sketches score best against the
    /// query itself ([`Estimator`]: signs and sizes read as values along
    /// each dimension, much closer to the dot product than the Hamming
    /// distance between two sketches).
    fn best_estimated(&self, query: &[f32], positions: Vec<usize>, wanted: usize) -> Vec<usize> {
        let estimator = Estimator::new(query, self.words);
        let words = self.words;
        let mut estimated: Vec<(f32, usize)> = positions
            .into_iter()
            .map(|position| {
                let span = position * words..(position + 1) * words;
                let estimate = estimator.estimate(&self.signs[span.clone()], &self.large[span]);
                (estimate, position)
            })
            .collect();
        estimated.select_nth_unstable_by(wanted - 1, |a, b| b.0.total_cmp(&a.0));
        estimated.truncate(wanted);
        estimated
            .into_iter()
            .map(|(_, position)| position)
            .collect()
    }

    fn scan_exact(
        &self,
        exact: &Exact,
        query: &[f32],
        limit: usize,
        min_score: f32,
    ) -> Vec<(f32, i64)> {
        // Keep the best `limit` in a min-heap of (score, position).
        let mut best: BinaryHeap<std::cmp::Reverse<(Score, usize)>> = BinaryHeap::new();
        for (position, vector) in exact.values.chunks_exact(exact.dims).enumerate() {
            let score = dot(vector, query);
            if score < min_score {
                continue;
            }
            if best.len() < limit {
                best.push(std::cmp::Reverse((Score(score), position)));
            } else if best.peek().is_some_and(|worst| Score(score) > worst.0.0) {
                best.pop();
                best.push(std::cmp::Reverse((Score(score), position)));
            }
        }
        let mut ranked: Vec<(f32, i64)> = best
            .into_iter()
            .map(|std::cmp::Reverse((score, position))| (score.0, self.ids[position]))
            .collect();
        rank(&mut ranked);
        ranked
    }

    /// The positions of the `wanted` records nearest to `target` by Hamming
    /// distance (ties broken by insertion order), in insertion order.
    fn nearest_by_sketch(&self, target: &[u64], wanted: usize) -> Vec<usize> {
        if self.ids.len() <= wanted {
            return (0..self.ids.len()).collect();
        }
        let bits = self.words * 64;
        let mut histogram = vec![0usize; bits + 1];
        let distances = hamming_distances(&self.signs, self.words, target, &mut histogram);
        // The smallest distance `cut` with at least `wanted` records at or under it.
        let mut seen = 0;
        let mut cut = bits;
        for (distance, count) in histogram.iter().enumerate() {
            seen += count;
            if seen >= wanted {
                cut = distance;
                break;
            }
        }
        let below: usize = histogram[..cut].iter().sum();
        let mut at_cut = wanted - below;
        let mut chosen = Vec::with_capacity(wanted);
        for (position, distance) in distances.iter().enumerate() {
            let distance = *distance as usize;
            if distance < cut {
                chosen.push(position);
            } else if distance == cut && at_cut > 0 {
                at_cut -= 1;
                chosen.push(position);
            }
        }
        chosen
    }
}

/// The Hamming distance of each sketch in `sketches` (`words` words each)
/// to `target`, counted into `histogram` as well. With the CPU's population
/// count instruction where it has one (the portable build counts bits in
/// software, about twice as slow).
fn hamming_distances(
    sketches: &[u64],
    words: usize,
    target: &[u64],
    histogram: &mut [usize],
) -> Vec<u16> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has POPCNT, checked just above.
        return unsafe { hamming_distances_popcnt(sketches, words, target, histogram) };
    }
    hamming_distances_portable(sketches, words, target, histogram)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn hamming_distances_popcnt(
    sketches: &[u64],
    words: usize,
    target: &[u64],
    histogram: &mut [usize],
) -> Vec<u16> {
    hamming_distances_portable(sketches, words, target, histogram)
}

#[inline(always)]
fn hamming_distances_portable(
    sketches: &[u64],
    words: usize,
    target: &[u64],
    histogram: &mut [usize],
) -> Vec<u16> {
    // 384 dimensions (MiniLM, the default): six words, unrolled.
    if let Ok(target) = <&[u64; 6]>::try_from(target) {
        return sketches
            .chunks_exact(6)
            .map(|sketch| {
                let mut distance = 0;
                for i in 0..6 {
                    distance += (sketch[i] ^ target[i]).count_ones();
                }
                histogram[distance as usize] += 1;
                distance as u16
            })
            .collect();
    }
    sketches
        .chunks_exact(words)
        .map(|sketch| {
            let distance: u32 = sketch
                .iter()
                .zip(target)
                .map(|(a, b)| (a ^ b).count_ones())
                .sum();
            histogram[distance as usize] += 1;
            distance as u16
        })
        .collect()
}

/// Best first; equal scores by id, oldest first.
pub fn rank(ranked: &mut [(f32, i64)]) {
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
}

/// An `f32` ordered for the heap (NaN-free by construction: cosine of finite vectors).
#[derive(Clone, Copy, PartialEq)]
struct Score(f32);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }

    #[test]
    fn a_small_session_is_ranked_exactly_and_a_large_one_gives_candidates_nearest_by_sketch() {
        let mut index = SessionIndex::default();
        let vectors = [unit(&[1.0, 0.1]), unit(&[0.9, 0.5]), unit(&[-1.0, 0.2])];
        for (id, v) in vectors.iter().enumerate() {
            assert!(index.push(id as i64 + 1, &sketch(v), Some(v)));
        }
        let Found::Ranked(ranked) = index.search(&unit(&[1.0, 0.0]), 2, 0.3, CANDIDATES) else {
            panic!("a small session is ranked exactly");
        };
        assert_eq!(ranked.iter().map(|r| r.1).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(
            index.search(&[1.0, 0.0, 0.0], 2, 0.3, CANDIDATES),
            Found::Ranked(vec![])
        );

        index.drop_vectors();
        assert!(!index.wants_vectors());
        // Fewer records than candidates: every one is re-scored.
        assert_eq!(
            index.search(&unit(&[1.0, 0.0]), 2, 0.3, CANDIDATES),
            Found::Rescore(vec![1, 2, 3])
        );
    }

    #[test]
    fn the_candidates_are_the_nearest_by_hamming_distance_ties_in_insertion_order() {
        let mut index = SessionIndex::default();
        index.drop_vectors();
        // 64-dimension signs at distance (id % 5) from the all-ones target,
        // every value large.
        let wanted = 200;
        for id in 0..(wanted as i64 * 3) {
            let flipped = (id % 5) as u32;
            let sketch = Sketch {
                signs: vec![u64::MAX << flipped],
                large: vec![u64::MAX],
            };
            assert!(index.push(id, &sketch, None));
        }
        let Found::Rescore(chosen) = index.search(&[1.0; 64], 5, 0.0, wanted) else {
            panic!("a large session gives candidates");
        };
        assert_eq!(chosen.len(), wanted);
        // A fifth of the records are at distance 0 and a fifth at 1, together
        // more than the candidates: every one at distance 0 (the query scores
        // them highest too), the rest at distance 1.
        assert!(chosen.iter().filter(|id| *id % 5 == 0).count() == wanted * 3 / 5);
        assert!(chosen.iter().all(|id| id % 5 <= 1));
        assert!(chosen.windows(2).all(|w| w[0] < w[1]), "in id order");
    }

    #[test]
    fn a_sketch_of_another_length_is_refused() {
        let mut index = SessionIndex::default();
        let planes = |signs: Vec<u64>, large: Vec<u64>| Sketch { signs, large };
        assert!(index.push(1, &planes(vec![1], vec![0]), Some(&[1.0, 0.0])));
        assert!(!index.push(2, &planes(vec![1, 2], vec![0, 0]), Some(&[1.0; 70])));
        assert!(
            !index.push(2, &planes(vec![1], vec![0, 0]), None),
            "planes of two lengths"
        );
        assert!(
            !index.push(3, &planes(vec![1], vec![0]), Some(&[1.0, 0.0, 0.0])),
            "another vector length"
        );
        assert_eq!(index.len(), 1);
    }
}
