//! A listing (`tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list`) read page by page under caps: a server that
//! pages on without end, or lists without end, is stopped at the first cap
//! it passes, with an error naming the server and the cap, instead of
//! filling memory until the request times out.

use std::future::Future;

use rmcp::model::PaginatedRequestParams;
use rmcp::service::ServiceError;
use serde::Serialize;

/// Caps on one listing, all its pages together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListLimits {
    /// Most pages (requests) per listing.
    pub pages: usize,
    /// Most items (tools, prompts, resources, templates) per listing.
    pub items: usize,
    /// Most bytes of items per listing, counted as their JSON.
    pub bytes: usize,
}

impl ListLimits {
    /// 100 pages per listing unless told otherwise.
    pub const DEFAULT_PAGES: usize = 100;
    /// 1,000 items per listing unless told otherwise.
    pub const DEFAULT_ITEMS: usize = 1_000;
    /// 8 MiB of items per listing unless told otherwise.
    pub const DEFAULT_BYTES: usize = 8 * 1024 * 1024;
}

impl Default for ListLimits {
    fn default() -> Self {
        Self {
            pages: Self::DEFAULT_PAGES,
            items: Self::DEFAULT_ITEMS,
            bytes: Self::DEFAULT_BYTES,
        }
    }
}

/// One page: its items and the cursor of the next, if any.
pub(crate) type Page<T> = (Vec<T>, Option<String>);

/// Every page of a listing of `what` (`tools`, `prompts`…) from `server`,
/// `list_page` fetching one, until a page has no next cursor or a cap of
/// `limits` is passed. The outer error is the transport's or the server's;
/// the inner one names the cap that stopped the listing.
pub(crate) async fn all_pages<T, Fut>(
    server: &str,
    what: &str,
    limits: ListLimits,
    mut list_page: impl FnMut(PaginatedRequestParams) -> Fut,
) -> Result<Result<Vec<T>, String>, ServiceError>
where
    T: Serialize,
    Fut: Future<Output = Result<Page<T>, ServiceError>>,
{
    let mut items = Vec::new();
    let (mut pages, mut bytes) = (0usize, 0usize);
    let mut cursor = None;
    loop {
        if pages == limits.pages {
            return Ok(Err(format!(
                "the MCP server {server} still had more {what} to list after {pages} pages \
                 (the cap is {} pages per listing: max_list_pages); its {what} are left out",
                limits.pages
            )));
        }
        let (page, next) = list_page(PaginatedRequestParams::default().with_cursor(cursor)).await?;
        pages += 1;
        for item in page {
            bytes = bytes.saturating_add(json_len(&item));
            if items.len() == limits.items {
                return Ok(Err(format!(
                    "the MCP server {server} listed more than {} {what} \
                     (the cap per listing: max_list_items); its {what} are left out",
                    limits.items
                )));
            }
            if bytes > limits.bytes {
                return Ok(Err(format!(
                    "the MCP server {server} listed more than {} bytes of {what} \
                     (the cap per listing: max_list_bytes); its {what} are left out",
                    limits.bytes
                )));
            }
            items.push(item);
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(Ok(items)),
        }
    }
}

/// The length of `item`'s JSON, counted without writing it anywhere.
fn json_len(item: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, item);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listing of five pages, each `size` items of `width` characters.
    async fn list(limits: ListLimits, size: usize, width: usize) -> Result<Vec<String>, String> {
        all_pages("odd", "tools", limits, |params: PaginatedRequestParams| {
            let page: usize = params.cursor.as_deref().map_or(0, |c| c.parse().unwrap());
            let items = vec!["x".repeat(width); size];
            let next = (page < 4).then(|| (page + 1).to_string());
            async move { Ok((items, next)) }
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_listing_within_its_caps_is_read_whole() {
        let limits = ListLimits {
            pages: 5,
            items: 10,
            bytes: 10 * 5,
        };
        // 5 pages of 2 items of 3 bytes of JSON ("\"x\"" is 3 bytes).
        assert_eq!(list(limits, 2, 1).await.unwrap().len(), 10);
    }

    #[tokio::test]
    async fn each_cap_stops_the_listing_and_is_named() {
        let pages = ListLimits {
            pages: 4,
            ..ListLimits::default()
        };
        assert_eq!(
            list(pages, 1, 1).await.unwrap_err(),
            "the MCP server odd still had more tools to list after 4 pages (the cap is 4 pages \
             per listing: max_list_pages); its tools are left out"
        );
        let items = ListLimits {
            items: 9,
            ..ListLimits::default()
        };
        assert_eq!(
            list(items, 2, 1).await.unwrap_err(),
            "the MCP server odd listed more than 9 tools (the cap per listing: max_list_items); \
             its tools are left out"
        );
        let bytes = ListLimits {
            bytes: 100,
            ..ListLimits::default()
        };
        assert_eq!(
            list(bytes, 1, 60).await.unwrap_err(),
            "the MCP server odd listed more than 100 bytes of tools (the cap per listing: \
             max_list_bytes); its tools are left out"
        );
    }
}
