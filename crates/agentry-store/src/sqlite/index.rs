//! The SQLite store's recall index, one per session, in RAM.
//!
//! Every record has a sign sketch: one bit a dimension, set where the
//! unit vector is positive (48 bytes for 384 dimensions), persisted in the
//! `memory.sketch` column and read through a covering index, so opening a
//! store reads 56 bytes a record instead of its vector. A session of up to
//! [`EXACT_LIMIT`] records also keeps its exact vectors here and is scanned
//! exactly. A larger one is scanned in three stages: the Hamming distance
//! between sketches keeps [`COARSE_FACTOR`] × [`CANDIDATES`] records, the
//! query scored against their sketches (each bit as ±1 along its dimension)
//! keeps [`CANDIDATES`], and those are re-scored exactly from the vectors in
//! the file: recall reads 48 bytes a record and a few hundred vectors, not
//! every vector.

use std::collections::BinaryHeap;

use agentry_core::embed::dot;

/// Sessions up to this many records keep their vectors in RAM and are
/// scanned exactly (1.0 ms at 10,000 records; about 25 MB at 384 dimensions).
pub const EXACT_LIMIT: usize = 16_384;

/// For each record re-scored exactly, how many are first taken by Hamming
/// distance and ranked by the query against their sketches.
pub const COARSE_FACTOR: usize = 40;

/// The least number of a large session's records, best by sketch, that are
/// re-scored exactly by default (one in [`RECORDS_PER_CANDIDATE`] when that is more). Chosen by measurement on real embeddings
/// (`BENCHMARKS.md`); [`SqliteStore::set_rescore_candidates`](crate::SqliteStore::set_rescore_candidates) changes it.
pub const CANDIDATES: usize = 200;

/// Past 400,000 records the default re-scores one record in this many
/// (500 at 1M), so recall@5 holds as the session grows.
pub const RECORDS_PER_CANDIDATE: usize = 2_000;

/// How many records of a session of `len` are re-scored by default.
pub fn default_candidates(len: usize) -> usize {
    CANDIDATES.max(len / RECORDS_PER_CANDIDATE)
}

/// The sign sketch of `vector`, as `u64` words (bit `i % 64` of word `i / 64`).
pub fn sketch(vector: &[f32]) -> Vec<u64> {
    let mut words = vec![0u64; vector.len().div_ceil(64)];
    for (i, value) in vector.iter().enumerate() {
        if *value > 0.0 {
            words[i / 64] |= 1 << (i % 64);
        }
    }
    words
}

/// A sketch as the little-endian bytes stored in the file.
pub fn sketch_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The words of a stored sketch; `None` when its length is not whole words.
pub fn sketch_words(bytes: &[u8]) -> Option<Vec<u64>> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(8) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")))
            .collect(),
    )
}

/// One session's records as the index sees them.
pub struct SessionIndex {
    /// The highest record id loaded (rows above it are read on the next look).
    pub last_id: i64,
    ids: Vec<i64>,
    /// Words per sketch (0 until the first record).
    words: usize,
    sketches: Vec<u64>,
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
            sketches: Vec::new(),
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
    pub fn push(&mut self, id: i64, words: &[u64], vector: Option<&[f32]>) -> bool {
        if self.ids.is_empty() {
            self.words = words.len();
        }
        if words.len() != self.words {
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
        self.sketches.extend_from_slice(words);
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
        let target = sketch(query);
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
    /// query itself: each bit read as +1 or -1 along its dimension, summed
    /// with the query's values (an asymmetric estimate of the dot product,
    /// much closer than the Hamming distance between two sketches). Eight
    /// dimensions at a time through a table of the query's partial sums.
    fn best_estimated(&self, query: &[f32], positions: Vec<usize>, wanted: usize) -> Vec<usize> {
        let bytes = self.words * 8;
        // sums[j * 256 + b]: the query's values at the bits set in byte `b` of byte slot `j`.
        let mut sums = vec![0f32; bytes * 256];
        for j in 0..bytes {
            for b in 1..256usize {
                let low = b.trailing_zeros() as usize;
                let value = query.get(j * 8 + low).copied().unwrap_or(0.0);
                sums[j * 256 + b] = sums[j * 256 + (b & (b - 1))] + value;
            }
        }
        let mut estimated: Vec<(f32, usize)> = positions
            .into_iter()
            .map(|position| {
                let words = &self.sketches[position * self.words..(position + 1) * self.words];
                let mut total = 0.0f32;
                for (w, word) in words.iter().enumerate() {
                    for (k, byte) in word.to_le_bytes().iter().enumerate() {
                        total += sums[(w * 8 + k) * 256 + *byte as usize];
                    }
                }
                (total, position)
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
        let distances = hamming_distances(&self.sketches, self.words, target, &mut histogram);
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
    fn a_sketch_has_one_bit_per_dimension_and_round_trips_through_bytes() {
        let words = sketch(&[0.5, -0.1, 0.0, 2.0]);
        assert_eq!(words, [0b1001]);
        let long: Vec<f32> = (0..130)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let words = sketch(&long);
        assert_eq!(words.len(), 3);
        assert_eq!(words[2], 0b01);
        assert_eq!(sketch_words(&sketch_bytes(&words)).unwrap(), words);
        assert_eq!(sketch_words(&[1, 2, 3]), None);
        assert_eq!(sketch_words(&[]), None);
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
        // 64-dimension sketches at distance (id % 5) from the all-ones target.
        for id in 0..(CANDIDATES as i64 * 3) {
            let flipped = (id % 5) as u32;
            let word = u64::MAX << flipped;
            assert!(index.push(id, &[word], None));
        }
        let Found::Rescore(chosen) = index.search(&[1.0; 64], 5, 0.0, CANDIDATES) else {
            panic!("a large session gives candidates");
        };
        assert_eq!(chosen.len(), CANDIDATES);
        // A fifth of the records are at distance 0 and a fifth at 1, together
        // more than the candidates: every one at distance 0 (the query scores
        // them highest too), the rest at distance 1.
        assert!(chosen.iter().filter(|id| *id % 5 == 0).count() == CANDIDATES * 3 / 5);
        assert!(chosen.iter().all(|id| id % 5 <= 1));
        assert!(chosen.windows(2).all(|w| w[0] < w[1]), "in id order");
    }

    #[test]
    fn a_sketch_of_another_length_is_refused() {
        let mut index = SessionIndex::default();
        assert!(index.push(1, &[1], Some(&[1.0, 0.0])));
        assert!(!index.push(2, &[1, 2], Some(&[1.0; 70])));
        assert!(
            !index.push(3, &[1], Some(&[1.0, 0.0, 0.0])),
            "another vector length"
        );
        assert_eq!(index.len(), 1);
    }
}
