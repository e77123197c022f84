//! Skill search better than substring matching: the shared hybrid index of
//! `agentry-search` (BM25 with stemming and stop words, optionally fused
//! with embedding similarity by reciprocal rank fusion) over name,
//! description, trigger phrases and body. [`SkillSearch`] also serves as a
//! searchable [`SkillResolver`].

use std::sync::Arc;

use agentry_core::BoxFuture;
use agentry_core::embed::{EmbedError, Embedder};
use agentry_core::skill::{
    ListContext, SearchOpts, SearchableResolver, Skill, SkillContext, SkillResolver, load_body,
};
use agentry_search::HybridIndex;

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

/// A search index over a fixed set of skills.
pub struct SkillSearch {
    /// The skills, and which are listed every turn (list and read delegate to it).
    listing: SearchableResolver,
    index: HybridIndex,
}

impl std::fmt::Debug for SkillSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSearch")
            .field("skills", &self.skills().len())
            .field("index", &self.index)
            .finish()
    }
}

impl SkillSearch {
    /// A BM25 index over `skills`.
    pub fn bm25(skills: Vec<Skill>) -> Self {
        let index = HybridIndex::bm25(skills.iter().map(search_text).collect());
        Self {
            listing: SearchableResolver::new(skills, Vec::<String>::new()),
            index,
        }
    }

    /// Also rank by embedding similarity and fuse the two rankings.
    pub async fn with_embeddings(
        mut self,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, EmbedError> {
        let texts: Vec<String> = self.skills().iter().map(embedding_text).collect();
        self.index = self.index.with_embeddings(embedder, &texts).await?;
        Ok(self)
    }

    /// How much BM25 counts in fusion relative to embeddings (default
    /// [`DEFAULT_LEXICAL_WEIGHT`](crate::DEFAULT_LEXICAL_WEIGHT)).
    pub fn lexical_weight(mut self, weight: f32) -> Self {
        self.index = self.index.lexical_weight(weight);
        self
    }

    /// As a resolver, list these skills every turn (default: none; the rest
    /// are found through `search_skills`).
    pub fn always_on<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.listing = SearchableResolver::new(self.listing.skills().to_vec(), names);
        self
    }

    /// The indexed skills.
    pub fn skills(&self) -> &[Skill] {
        self.listing.skills()
    }

    /// BM25 ranking: `(index, score)`, best first, ties in input order,
    /// only skills sharing a term with the query.
    pub fn rank_bm25(&self, query: &str) -> Vec<(usize, f32)> {
        self.index.rank_bm25(query)
    }

    /// Embedding ranking of every skill by cosine similarity to the query.
    pub async fn rank_embeddings(&self, query: &str) -> Result<Vec<(usize, f32)>, EmbedError> {
        self.index.rank_embeddings(query).await
    }

    /// The best matches: BM25 alone, or BM25 and embeddings fused by
    /// reciprocal rank fusion when embeddings are set (falling back to BM25
    /// if the query cannot be embedded).
    pub async fn rank(&self, query: &str) -> Vec<(usize, f32)> {
        self.index.rank(query).await
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
