//! [`ToolSearcher`]: how discovery's `search_tools` finds tools in a catalog
//! too big to list (`agentry_search::ToolSearch` is the hybrid BM25 and
//! embedding one).

use crate::BoxFuture;

/// Finds the tools that fit a query in an agent's catalog.
pub trait ToolSearcher: Send + Sync {
    /// The names of the best tools for `query`, best first, at most `limit`.
    fn search<'a>(&'a self, query: &'a str, limit: usize) -> BoxFuture<'a, Vec<String>>;
}

/// A shared searcher is a searcher.
impl<S: ToolSearcher + ?Sized> ToolSearcher for std::sync::Arc<S> {
    fn search<'a>(&'a self, query: &'a str, limit: usize) -> BoxFuture<'a, Vec<String>> {
        (**self).search(query, limit)
    }
}
