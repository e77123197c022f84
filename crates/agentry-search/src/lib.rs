//! # agentry-search
//!
//! One search index for everything an agent looks things up in: skills and
//! tool catalogs. [`HybridIndex`] ranks documents by BM25 (the `bm25` crate's
//! tokens and weights, with stemming and stop words, over posting lists),
//! optionally fused with embedding
//! similarity by reciprocal rank fusion; [`ToolSearch`] is that index over
//! tools, for discovery's `search_tools` built-in.
//!
//! ```
//! use agentry_core::tool::{ToolSearcher, function};
//! use agentry_search::ToolSearch;
//! use serde_json::Value;
//!
//! let tool = |name: &str, description: &str| {
//!     let description = description.to_owned();
//!     function(name)
//!         .namespace("weather")
//!         .description(description)
//!         .handler(|_: Value| Ok::<_, String>("…"))
//!         .build()
//!         .unwrap()
//! };
//! let search = ToolSearch::bm25(&[
//!     tool("forecast", "The weather forecast for a city, day by day."),
//!     tool("alerts", "Severe weather alerts in force for a region."),
//! ]);
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! assert_eq!(search.search("Will it rain in Lima tomorrow? forecast", 1).await, ["weather.forecast"]);
//! # });
//! ```

mod index;
mod lexical;
mod tools;

pub use index::{DEFAULT_LEXICAL_WEIGHT, FUSION_DEPTH, HybridIndex, RRF_K};
pub use tools::{
    TOOL_LEXICAL_WEIGHT, ToolSearch, name_words, tool_embedding_text, tool_passages,
    tool_search_text,
};
