//! `agentry memory list|search|forget|export|import`: what chat sessions
//! remember, from the command line, in the store `agentry chat` and
//! `agentry serve` use (`[memory] store` in `agentry.toml`, or `--memory`).

use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentry::agent::durable::RunJournal;
use agentry::memory::{
    Forget, ListOpts, Memory, MemoryRecord, MemoryStore, RecallOpts, export_session, import_records,
};
use agentry_store::{PgStore, SqliteStore};
use clap::Subcommand;

use crate::config::Loaded;
use crate::definition::MemoryArgs;

/// Memory commands.
#[derive(Subcommand)]
pub enum MemoryCommand {
    /// List the sessions (with no SESSION), or one session's records with their ids.
    List {
        /// The session to list.
        session: Option<String>,
        /// Only records with an id above this one.
        #[arg(long)]
        after: Option<i64>,
        /// Most records shown.
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        place: Place,
    },
    /// The records of a session most similar to a text (what a chat turn would recall).
    Search {
        /// The session to search.
        session: String,
        /// The text to look for.
        query: String,
        /// Most records.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Records less similar than this are left out (except those found by their words).
        #[arg(long, default_value_t = 0.3)]
        min_score: f32,
        /// Search the words too (hybrid recall: keyword matches fused with the
        /// vector ranking), whatever `[memory.ranking]` says. Scores shown are
        /// then fused ranks (1.000: first in both rankings).
        #[arg(long)]
        keywords: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Delete a session, one record of it (`--id`), or everything older than a date (`--before`).
    Forget {
        /// The session (with `--before`, only this session; without, every session).
        session: Option<String>,
        /// Delete only this record (an id from `agentry memory list SESSION`).
        #[arg(long, requires = "session", conflicts_with = "before")]
        id: Option<i64>,
        /// Delete records older than this: a date (`2026-01-31`, midnight UTC) or a
        /// timestamp (`2026-01-31T12:00:00Z`).
        #[arg(long)]
        before: Option<String>,
        /// Then rebuild the storage so the deleted rows' space (and, on PostgreSQL,
        /// their bytes) is gone: SQLite `VACUUM`, PostgreSQL `VACUUM FULL`.
        #[arg(long)]
        vacuum: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Write a session as JSON lines (one record a line, embedding included).
    Export {
        /// The session to export.
        session: String,
        /// The file to write [default: standard output].
        #[arg(long, short)]
        out: Option<PathBuf>,
        #[command(flatten)]
        place: Place,
    },
    /// Read JSON lines written by `export` back in; a bad line imports nothing.
    Import {
        /// The file to read (`-` for standard input).
        file: PathBuf,
        /// Put every record in this session instead of its own.
        #[arg(long)]
        into: Option<String>,
        #[command(flatten)]
        place: Place,
    },
}

/// Which store: the definition file's `[memory]`, or `--memory`.
#[derive(clap::Args)]
pub struct Place {
    /// The agent definition file (default: `agentry.toml` here, if there is one).
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    memory: MemoryArgs,
}

/// An open store, keeping its concrete type for `--vacuum`.
pub enum Store {
    /// A SQLite file.
    Sqlite(SqliteStore),
    /// PostgreSQL with pgvector.
    Postgres(PgStore),
}

impl Store {
    /// The store at `location` (a SQLite path or a `postgres://` URL). A
    /// SQLite file that does not exist is made when `create`, and an error
    /// otherwise (nothing remembered there yet).
    pub async fn open(location: &str, loaded: &Loaded, create: bool) -> Result<Store, String> {
        if crate::definition::is_postgres(location) {
            let dimensions = MemoryArgs::dimensions(loaded);
            return PgStore::connect(location, dimensions)
                .await
                .map(Store::Postgres)
                .map_err(|e| e.to_string());
        }
        if !create && !std::path::Path::new(location).exists() {
            return Err(format!(
                "{location}: no memory store here (nothing remembered yet?)"
            ));
        }
        SqliteStore::open(location)
            .map(Store::Sqlite)
            .map_err(|e| format!("{location}: {e}"))
    }

    fn dyn_store(&self) -> &dyn MemoryStore {
        match self {
            Store::Sqlite(store) => store,
            Store::Postgres(store) => store,
        }
    }

    /// The store as a journal of durable runs.
    pub fn journal(self) -> Arc<dyn RunJournal> {
        match self {
            Store::Sqlite(store) => Arc::new(store),
            Store::Postgres(store) => Arc::new(store),
        }
    }
}

impl Place {
    /// The definition file these arguments name, or find.
    pub fn loaded(&self) -> Result<Loaded, String> {
        Loaded::find(self.config.as_deref())
    }

    /// The store (see [`Store::open`]).
    pub async fn open(&self, create: bool) -> Result<Store, String> {
        let loaded = self.loaded()?;
        Store::open(&self.memory.location(&loaded), &loaded, create).await
    }
}

/// Run a memory command.
pub async fn run(command: MemoryCommand) -> Result<ExitCode, String> {
    match command {
        MemoryCommand::List {
            session,
            after,
            limit,
            place,
        } => {
            let store = place.open(false).await?;
            match session {
                None => list_sessions(store.dyn_store()).await,
                Some(session) => {
                    let records = store
                        .dyn_store()
                        .list(&session, ListOpts { after, limit })
                        .await
                        .map_err(|e| e.to_string())?;
                    if records.is_empty() {
                        return Err(format!("session {session:?} holds no records"));
                    }
                    for stored in &records {
                        println!(
                            "{}",
                            record_line(&format!("{:>6}", stored.id), &stored.record)
                        );
                    }
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
        MemoryCommand::Search {
            session,
            query,
            limit,
            min_score,
            keywords,
            place,
        } => {
            let store: Arc<dyn MemoryStore> = match place.open(false).await? {
                Store::Sqlite(store) => Arc::new(store),
                Store::Postgres(store) => Arc::new(store),
            };
            let loaded = place.loaded()?;
            let mut ranking = MemoryArgs::ranking(&loaded);
            ranking.keywords |= keywords;
            let memory =
                Memory::new(store, MemoryArgs::embedder(&loaded).await?).with_ranking(ranking);
            let hits = memory
                .recall(&session, &query, RecallOpts { limit, min_score })
                .await
                .map_err(|e| e.to_string())?;
            if hits.is_empty() {
                println!("nothing in {session:?} scores {min_score} or more");
            }
            for hit in hits {
                println!("{}", record_line(&format!("{:.3}", hit.score), &hit.record));
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCommand::Forget {
            session,
            id,
            before,
            vacuum,
            place,
        } => {
            let what = match (session, id, before) {
                (Some(session), Some(id), None) => Forget::Record { session, id },
                (session, None, Some(before)) => Forget::Before {
                    session,
                    timestamp: parse_when(&before)?,
                },
                (Some(session), None, None) => Forget::Session(session),
                _ => {
                    return Err(
                        "say what to forget: SESSION, SESSION --id ID, or --before DATE [SESSION]"
                            .into(),
                    );
                }
            };
            let store = place.open(false).await?;
            let deleted = store
                .dyn_store()
                .forget(&what)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "forgot {deleted} record{}",
                if deleted == 1 { "" } else { "s" }
            );
            match (&store, vacuum) {
                (Store::Sqlite(store), true) => store.vacuum().map_err(|e| e.to_string())?,
                (Store::Postgres(store), true) => {
                    store.vacuum().await.map_err(|e| e.to_string())?
                }
                (Store::Postgres(_), false) if deleted > 0 => eprintln!(
                    "note: PostgreSQL keeps deleted rows' bytes until it reuses the space; --vacuum rewrites the table without them"
                ),
                _ => {}
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCommand::Export {
            session,
            out,
            place,
        } => {
            let store = place.open(false).await?;
            let written = match &out {
                Some(path) => {
                    let file = std::fs::File::create(path)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    let mut writer = std::io::BufWriter::new(file);
                    export_session(store.dyn_store(), &session, &mut writer).await
                }
                None => {
                    let mut stdout = std::io::stdout().lock();
                    export_session(store.dyn_store(), &session, &mut stdout).await
                }
            }
            .map_err(|e| e.to_string())?;
            if written == 0 {
                if let Some(path) = &out {
                    let _ = std::fs::remove_file(path);
                }
                return Err(format!("session {session:?} holds no records"));
            }
            if let Some(path) = out {
                eprintln!("exported {written} records to {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCommand::Import { file, into, place } => {
            let store = place.open(true).await?;
            let imported = if file.as_os_str() == "-" {
                import_records(store.dyn_store(), std::io::stdin().lock(), into.as_deref()).await
            } else {
                let opened =
                    std::fs::File::open(&file).map_err(|e| format!("{}: {e}", file.display()))?;
                import_records(store.dyn_store(), BufReader::new(opened), into.as_deref()).await
            }
            .map_err(|e| format!("{}: {e}; nothing was imported", file.display()))?;
            println!("imported {imported} records");
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn list_sessions(store: &dyn MemoryStore) -> Result<ExitCode, String> {
    let sessions = store.sessions().await.map_err(|e| e.to_string())?;
    if sessions.is_empty() {
        println!("no sessions");
        return Ok(ExitCode::SUCCESS);
    }
    let width = sessions
        .iter()
        .map(|s| s.session.len())
        .max()
        .unwrap_or(7)
        .max(7);
    println!(
        "{:<width$}  {:>8}  {:<20}  last",
        "session", "records", "first"
    );
    for summary in sessions {
        println!(
            "{:<width$}  {:>8}  {:<20}  {}",
            summary.session,
            summary.records,
            when(summary.first),
            when(summary.last)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One record on one line after `lead` (its id, or its score): time, role, text.
fn record_line(lead: &str, record: &MemoryRecord) -> String {
    format!(
        "{lead}  {}  {:<9}  {}",
        when(record.timestamp),
        record.role,
        one_line(&record.text)
    )
}

/// A text for a terminal: control characters other than new lines and
/// tabs (a terminal's escape sequences among them) shown as `?`.
pub(crate) fn terminal_safe(text: &str) -> String {
    text.replace(|c: char| c.is_control() && c != '\n' && c != '\t', "?")
}

/// A text on one line, cut at 100 characters, control characters (a
/// terminal's escape sequences among them) shown as `?`.
pub(crate) fn one_line(text: &str) -> String {
    let flat = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(|c: char| c.is_control(), "?");
    match flat.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// Seconds since the epoch as a UTC time (`2026-11-24T18:03:00Z`).
fn when(timestamp: i64) -> String {
    jiff::Timestamp::from_second(timestamp)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| timestamp.to_string())
}

/// A date (midnight UTC) or an RFC 3339 timestamp, as seconds since the epoch.
fn parse_when(text: &str) -> Result<i64, String> {
    if let Ok(timestamp) = text.parse::<jiff::Timestamp>() {
        return Ok(timestamp.as_second());
    }
    text.parse::<jiff::civil::Date>()
        .and_then(|date| date.to_zoned(jiff::tz::TimeZone::UTC))
        .map(|zoned| zoned.timestamp().as_second())
        .map_err(|_| {
            format!("--before {text:?}: expected a date (2026-01-31) or a timestamp (2026-01-31T12:00:00Z)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_timestamps_are_read_as_utc_and_anything_else_is_refused() {
        assert_eq!(parse_when("2026-01-31").unwrap(), 1_769_817_600);
        assert_eq!(parse_when("2026-01-31T12:00:00Z").unwrap(), 1_769_860_800);
        let error = parse_when("last tuesday").unwrap_err();
        assert!(error.contains("expected a date"), "{error}");
        assert_eq!(when(1_769_860_800), "2026-01-31T12:00:00Z");
    }

    #[test]
    fn long_texts_are_listed_on_one_cut_line() {
        assert_eq!(one_line("a\n  b"), "a b");
        let long = "é".repeat(150);
        assert_eq!(one_line(&long).chars().count(), 101);
    }
}
