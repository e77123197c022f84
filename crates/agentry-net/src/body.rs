//! Reading a response body within a limit: chunk by chunk, never holding
//! more than the limit, refused at once when `Content-Length` is already over.

use reqwest::Response;

use super::NetError;

/// Most bytes of a body [`read_body`] and [`read_text`] are usually given:
/// 1 MiB, the most a tool result carries by default
/// ([`DEFAULT_MAX_RESULT_BYTES`](agentry_core::tool::DEFAULT_MAX_RESULT_BYTES)).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// The first `limit` bytes of `response`'s body, and whether more followed.
///
/// Reads chunk by chunk and stops at the limit, so an endless or huge body
/// costs no more than `limit` bytes here; the rest is never read (dropping
/// the response closes the connection).
pub async fn read_prefix(
    mut response: Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), NetError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// `response`'s whole body, or [`NetError::BodyTooLarge`] when it is over
/// `limit` bytes: refused before reading when `Content-Length` says so, else
/// as soon as the bytes read pass it.
pub async fn read_body(response: Response, limit: usize) -> Result<Vec<u8>, NetError> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(NetError::BodyTooLarge { limit });
    }
    match read_prefix(response, limit).await? {
        (body, false) => Ok(body),
        (_, true) => Err(NetError::BodyTooLarge { limit }),
    }
}

/// [`read_body`] as text (invalid UTF-8 replaced by U+FFFD).
pub async fn read_text(response: Response, limit: usize) -> Result<String, NetError> {
    let body = read_body(response, limit).await?;
    Ok(match String::from_utf8(body) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    })
}
