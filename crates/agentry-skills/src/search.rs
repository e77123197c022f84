//! Skill search better than substring matching: BM25 (the `bm25` crate, with
//! stemming and stop words) over name, description, trigger phrases and
//! body, optionally fused with embedding similarity by reciprocal rank
//! fusion. [`SkillSearch`] also serves as a searchable [`SkillResolver`].

use std::sync::Arc;

use agentry_core::BoxFuture;
use agentry_core::embed::{EmbedError, Embedder, cosine};
use agentry_core::skill::{
    ListContext, SearchOpts, SearchableResolver, Skill, SkillContext, SkillResolver, load_body,
    searchable_resolver,
};
use bm25::{Language, SearchEngine, SearchEngineBuilder};

/// The `k` of reciprocal rank fusion: each ranking adds `1 / (k + rank)`.
pub const RRF_K: f32 = 60.0;

/// How much the BM25 ranking counts in fusion, relative to the embedding
/// ranking's 1.0. Half: on MetaTool, equal weights let BM25's misses drag the
/// fused ranking below embeddings alone (see BENCHMARKS.md).
pub const DEFAULT_LEXICAL_WEIGHT: f32 = 0.5;

/// The text BM25 indexes for a skill: name (hyphens as spaces), description,
/// trigger phrases and body.
pub fn search_text(skill: &Skill) -> String {
    let body = load_body(skill, &SkillContext::new()).unwrap_or_default();
    format!(
        "{} {}\n{}\n{}\n{}",
        skill.name,
        skill.name.replace(['-', '_', ':'], " "),
        skill.description,
        skill.when.join("\n"),
        body
    )
}

/// The text embedded for a skill: what the model sees of it in the index.
pub fn embedding_text(skill: &Skill) -> String {
    let mut text = format!(
        "{}: {}",
        skill.name.replace(['-', '_'], " "),
        skill.description
    );
    if !skill.when.is_empty() {
        text.push_str(&format!(" (when: {})", skill.when.join(", ")));
    }
    text
}

/// The embedder and one vector per skill.
type SkillVectors = (Arc<dyn Embedder>, Vec<Vec<f32>>);

/// A search index over a fixed set of skills.
pub struct SkillSearch {
    /// The skills, and which are listed every turn (list and read delegate to it).
    listing: SearchableResolver,
    engine: SearchEngine<usize>,
    embeddings: Option<SkillVectors>,
    lexical_weight: f32,
}

impl std::fmt::Debug for SkillSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSearch")
            .field("skills", &self.skills().len())
            .field("fused", &self.embeddings.is_some())
            .finish()
    }
}

fn ranked(mut scored: Vec<(usize, f32)>) -> Vec<(usize, f32)> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

impl SkillSearch {
    /// A BM25 index over `skills`.
    pub fn bm25(skills: Vec<Skill>) -> Self {
        let documents: Vec<bm25::Document<usize>> = skills
            .iter()
            .enumerate()
            .map(|(i, skill)| bm25::Document::new(i, search_text(skill)))
            .collect();
        let engine =
            SearchEngineBuilder::<usize>::with_documents(Language::English, documents).build();
        Self {
            listing: searchable_resolver(skills, Vec::<String>::new()),
            engine,
            embeddings: None,
            lexical_weight: DEFAULT_LEXICAL_WEIGHT,
        }
    }

    /// Also rank by embedding similarity and fuse the two rankings.
    pub async fn with_embeddings(
        mut self,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, EmbedError> {
        let texts: Vec<String> = self.skills().iter().map(embedding_text).collect();
        let vectors = embedder.embed(&texts).await?;
        self.embeddings = Some((embedder, vectors));
        Ok(self)
    }

    /// How much BM25 counts in fusion relative to embeddings (default [`DEFAULT_LEXICAL_WEIGHT`]).
    pub fn lexical_weight(mut self, weight: f32) -> Self {
        self.lexical_weight = weight;
        self
    }

    /// As a resolver, list these skills every turn (default: none; the rest
    /// are found through `search_skills`).
    pub fn always_on<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.listing = searchable_resolver(self.listing.skills().to_vec(), names);
        self
    }

    /// The indexed skills.
    pub fn skills(&self) -> &[Skill] {
        self.listing.skills()
    }

    /// BM25 ranking: `(index, score)`, best first, ties in input order,
    /// only skills sharing a term with the query.
    pub fn rank_bm25(&self, query: &str) -> Vec<(usize, f32)> {
        ranked(
            self.engine
                .search(query, None)
                .into_iter()
                .map(|hit| (hit.document.id, hit.score))
                .collect(),
        )
    }

    /// Embedding ranking of every skill by cosine similarity to the query.
    pub async fn rank_embeddings(&self, query: &str) -> Result<Vec<(usize, f32)>, EmbedError> {
        let Some((embedder, vectors)) = &self.embeddings else {
            return Ok(Vec::new());
        };
        let query = embedder.embed(&[query.to_owned()]).await?;
        let query = query
            .first()
            .ok_or_else(|| EmbedError("no vector".into()))?;
        Ok(ranked(
            vectors
                .iter()
                .enumerate()
                .map(|(i, vector)| (i, cosine(query, vector)))
                .collect(),
        ))
    }

    /// The best matches: BM25 alone, or BM25 and embeddings fused by
    /// reciprocal rank fusion when embeddings are set (falling back to BM25
    /// if the query cannot be embedded).
    pub async fn rank(&self, query: &str) -> Vec<(usize, f32)> {
        let lexical = self.rank_bm25(query);
        if self.embeddings.is_none() {
            return lexical;
        }
        let semantic = match self.rank_embeddings(query).await {
            Ok(semantic) => semantic,
            Err(error) => {
                tracing::warn!(%error, "query embedding failed; ranking by BM25 alone");
                return lexical;
            }
        };
        let mut fused = vec![0.0f32; self.skills().len()];
        for (ranking, weight) in [(&lexical, self.lexical_weight), (&semantic, 1.0)] {
            for (rank, (index, _)) in ranking.iter().enumerate() {
                fused[*index] += weight / (RRF_K + rank as f32 + 1.0);
            }
        }
        ranked(
            fused
                .into_iter()
                .enumerate()
                .filter(|(_, score)| *score > 0.0)
                .collect(),
        )
    }

    /// The best `limit` skills for `query`.
    pub async fn search(&self, query: &str, limit: usize) -> Vec<Skill> {
        self.rank(query)
            .await
            .into_iter()
            .take(limit)
            .map(|(index, _)| self.skills()[index].clone())
            .collect()
    }
}

impl SkillResolver for SkillSearch {
    fn list<'a>(&'a self, ctx: ListContext<'a>) -> BoxFuture<'a, Vec<Skill>> {
        self.listing.list(ctx)
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Skill>> {
        self.listing.read(name)
    }

    fn can_search(&self) -> bool {
        true
    }

    fn search<'a>(&'a self, query: &'a str, opts: SearchOpts) -> BoxFuture<'a, Vec<Skill>> {
        Box::pin(SkillSearch::search(self, query, opts.limit))
    }
}
