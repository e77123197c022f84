//! [`PgStore`]: memory in PostgreSQL with pgvector, shared by any number of
//! processes. One table per embedding size (`agentry_memory_<dims>`), an HNSW
//! index for cosine distance, a full-text index of the words for keyword
//! search, durable runs' journals (`agentry_run_journal`), and schema setup
//! serialised by an advisory lock so many processes can start at once.

mod journal;
mod text;

use agentry_core::BoxFuture;
use agentry_core::memory::{
    Forget, ListOpts, MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts,
    SessionSummary, StoredRecord,
};
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::{AssertSqlSafe, Executor, Row};

/// A memory store in PostgreSQL.
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
    table: String,
    dimensions: usize,
    stats: text::StatsCache,
}

fn failed(error: impl std::error::Error + Send + Sync + 'static) -> MemoryError {
    MemoryError::backend("postgres", error)
}

impl PgStore {
    /// Connect to `url` and set up the table for `dimensions`-sized embeddings.
    pub async fn connect(url: &str, dimensions: usize) -> Result<Self, MemoryError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(std::time::Duration::from_secs(5))
            .after_connect(|conn, _| {
                Box::pin(async move {
                    // Filtered HNSW scans keep searching until enough rows of
                    // the session are found (pgvector 0.8).
                    conn.execute("SET hnsw.iterative_scan = strict_order")
                        .await?;
                    Ok(())
                })
            })
            .connect(url)
            .await
            .map_err(failed)?;
        Self::with_pool(pool, dimensions).await
    }

    /// Use an existing pool.
    pub async fn with_pool(pool: PgPool, dimensions: usize) -> Result<Self, MemoryError> {
        let table = format!("agentry_memory_{dimensions}");
        let mut tx = pool.begin().await.map_err(failed)?;
        sqlx::query("SELECT pg_advisory_xact_lock(7461627)")
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        for statement in [
            "CREATE EXTENSION IF NOT EXISTS vector".to_owned(),
            format!(
                "CREATE TABLE IF NOT EXISTS {table} (
                    id        BIGSERIAL PRIMARY KEY,
                    session   TEXT   NOT NULL,
                    role      TEXT   NOT NULL,
                    source    TEXT   NOT NULL,
                    text      TEXT   NOT NULL,
                    metadata  JSONB  NOT NULL,
                    timestamp BIGINT NOT NULL,
                    embedding vector({dimensions}) NOT NULL
                )"
            ),
            format!(
                "CREATE INDEX IF NOT EXISTS {table}_session_time ON {table} (session, timestamp, id)"
            ),
            format!(
                "CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)"
            ),
            // Keyword search: the text's words (English stemming), kept by
            // PostgreSQL itself, with a GIN index.
            format!(
                "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS words tsvector
                 GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED"
            ),
            format!("CREATE INDEX IF NOT EXISTS {table}_words ON {table} USING gin (words)"),
            // Durable runs' journals, whatever the embedding size.
            journal::SCHEMA.to_owned(),
        ] {
            sqlx::query(AssertSqlSafe(statement))
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
        }
        tx.commit().await.map_err(failed)?;
        Ok(Self {
            pool,
            table,
            dimensions,
            stats: Default::default(),
        })
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Rewrite the table without the space (and the bytes) of deleted
    /// records: `VACUUM FULL`, which locks the table while it runs. Plain
    /// deletes leave the rows' bytes in PostgreSQL's files until the space is
    /// reused; its write-ahead log and any backups keep them until recycled.
    /// A row that a still-open transaction could see survives the rewrite;
    /// the next vacuum after that transaction ends removes it.
    pub async fn vacuum(&self) -> Result<(), MemoryError> {
        sqlx::query(AssertSqlSafe(format!("VACUUM FULL {}", self.table)))
            .execute(&self.pool)
            .await
            .map_err(failed)?;
        Ok(())
    }

    /// The table records go to.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Keep many records in one transaction (all or none).
    async fn insert(&self, records: &[MemoryRecord]) -> Result<(), MemoryError> {
        let mut tx = self.pool.begin().await.map_err(failed)?;
        let sql = format!(
            "INSERT INTO {} (session, role, source, text, metadata, timestamp, embedding)
             VALUES ($1, $2, $3, $4, $5, $6, $7::vector)",
            self.table
        );
        for record in records {
            if record.embedding.len() != self.dimensions {
                return Err(MemoryError::refused(format!(
                    "postgres: this store holds {}-dimension embeddings, got {}",
                    self.dimensions,
                    record.embedding.len()
                )));
            }
            sqlx::query(AssertSqlSafe(sql.clone()))
                .bind(&record.session)
                .bind(&record.role)
                .bind(&record.source)
                .bind(&record.text)
                .bind(serde_json::Value::Object(record.metadata.clone()))
                .bind(record.timestamp)
                .bind(vector_text(&record.embedding))
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
        }
        tx.commit().await.map_err(failed)
    }
}

/// pgvector's text form: `[1,2,3]`.
fn vector_text(vector: &[f32]) -> String {
    let values: Vec<String> = vector.iter().map(f32::to_string).collect();
    format!("[{}]", values.join(","))
}

fn parse_vector(text: &str) -> Result<Vec<f32>, MemoryError> {
    text.trim_matches(['[', ']'])
        .split(',')
        .filter(|part| !part.is_empty())
        .map(|part| part.trim().parse::<f32>().map_err(failed))
        .collect()
}

fn read_record(row: &PgRow) -> Result<MemoryRecord, MemoryError> {
    let metadata: serde_json::Value = row.try_get("metadata").map_err(failed)?;
    let embedding: String = row.try_get("embedding").map_err(failed)?;
    Ok(MemoryRecord {
        session: row.try_get("session").map_err(failed)?,
        role: row.try_get("role").map_err(failed)?,
        source: row.try_get("source").map_err(failed)?,
        text: row.try_get("text").map_err(failed)?,
        metadata: match metadata {
            serde_json::Value::Object(map) => map,
            _ => Default::default(),
        },
        timestamp: row.try_get("timestamp").map_err(failed)?,
        embedding: parse_vector(&embedding)?,
    })
}

impl MemoryStore for PgStore {
    fn add<'a>(&'a self, record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move { self.insert(std::slice::from_ref(&record)).await })
    }

    fn recall<'a>(
        &'a self,
        session: &'a str,
        query: &'a [f32],
        opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        Box::pin(async move {
            if query.len() != self.dimensions || opts.limit == 0 {
                return Ok(Vec::new());
            }
            let sql = format!(
                "SELECT session, role, source, text, metadata, timestamp, embedding::text AS embedding,
                        1 - (embedding <=> $2::vector) AS score
                 FROM {} WHERE session = $1
                 ORDER BY embedding <=> $2::vector, id LIMIT $3",
                self.table
            );
            let rows = sqlx::query(AssertSqlSafe(sql.clone()))
                .bind(session)
                .bind(vector_text(query))
                .bind(opts.limit as i64)
                .fetch_all(&self.pool)
                .await
                .map_err(failed)?;
            let mut hits = Vec::with_capacity(rows.len());
            for row in &rows {
                let score: f64 = row.try_get("score").map_err(failed)?;
                let score = score as f32;
                if score >= opts.min_score {
                    hits.push(Recalled {
                        record: read_record(row)?,
                        score,
                    });
                }
            }
            Ok(hits)
        })
    }

    fn recent<'a>(
        &'a self,
        session: &'a str,
        opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT session, role, source, text, metadata, timestamp, embedding::text AS embedding FROM {}
                 WHERE session = $1
                   AND (cardinality($2::text[]) = 0 OR role = ANY($2))
                   AND NOT (role = ANY($3))
                 ORDER BY timestamp DESC, id DESC
                 LIMIT $4",
                self.table
            );
            let rows = sqlx::query(AssertSqlSafe(sql.clone()))
                .bind(session)
                .bind(&opts.include_roles)
                .bind(&opts.exclude_roles)
                .bind(opts.limit.map(|l| l as i64))
                .fetch_all(&self.pool)
                .await
                .map_err(failed)?;
            let mut records = rows
                .iter()
                .map(read_record)
                .collect::<Result<Vec<_>, _>>()?;
            records.reverse();
            Ok(records)
        })
    }

    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64, MemoryError>> {
        Box::pin(async move {
            let sql = format!("DELETE FROM {} WHERE session = $1", self.table);
            let done = sqlx::query(AssertSqlSafe(sql))
                .bind(session)
                .execute(&self.pool)
                .await
                .map_err(failed)?;
            Ok(done.rows_affected())
        })
    }

    fn search_text<'a>(
        &'a self,
        session: &'a str,
        text: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        Box::pin(self.search_words(session, text, limit))
    }

    fn add_many<'a>(
        &'a self,
        records: &'a [MemoryRecord],
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(self.insert(records))
    }

    fn sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionSummary>, MemoryError>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT session, count(*) AS records, min(timestamp) AS first, max(timestamp) AS last
                 FROM {} GROUP BY session ORDER BY session",
                self.table
            );
            let rows = sqlx::query(AssertSqlSafe(sql))
                .fetch_all(&self.pool)
                .await
                .map_err(failed)?;
            rows.iter()
                .map(|row| {
                    Ok(SessionSummary {
                        session: row.try_get("session").map_err(failed)?,
                        records: row.try_get::<i64, _>("records").map_err(failed)? as u64,
                        first: row.try_get("first").map_err(failed)?,
                        last: row.try_get("last").map_err(failed)?,
                    })
                })
                .collect()
        })
    }

    fn list<'a>(
        &'a self,
        session: &'a str,
        opts: ListOpts,
    ) -> BoxFuture<'a, Result<Vec<StoredRecord>, MemoryError>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT id, session, role, source, text, metadata, timestamp, embedding::text AS embedding
                 FROM {} WHERE session = $1 AND id > $2 ORDER BY id LIMIT $3",
                self.table
            );
            let rows = sqlx::query(AssertSqlSafe(sql))
                .bind(session)
                .bind(opts.after.unwrap_or(i64::MIN))
                .bind(opts.limit.map(|l| l.min(i64::MAX as usize) as i64))
                .fetch_all(&self.pool)
                .await
                .map_err(failed)?;
            rows.iter()
                .map(|row| {
                    Ok(StoredRecord {
                        id: row.try_get("id").map_err(failed)?,
                        record: read_record(row)?,
                    })
                })
                .collect()
        })
    }

    fn forget<'a>(&'a self, what: &'a Forget) -> BoxFuture<'a, Result<u64, MemoryError>> {
        Box::pin(async move {
            let table = &self.table;
            let query = match what {
                Forget::Session(session) => sqlx::query(AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE session = $1"
                )))
                .bind(session),
                Forget::Record { session, id } => sqlx::query(AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE session = $1 AND id = $2"
                )))
                .bind(session)
                .bind(id),
                Forget::Before {
                    session: Some(session),
                    timestamp,
                } => sqlx::query(AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE session = $1 AND timestamp < $2"
                )))
                .bind(session)
                .bind(timestamp),
                Forget::Before {
                    session: None,
                    timestamp,
                } => sqlx::query(AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE timestamp < $1"
                )))
                .bind(timestamp),
            };
            let done = query.execute(&self.pool).await.map_err(failed)?;
            Ok(done.rows_affected())
        })
    }
}
