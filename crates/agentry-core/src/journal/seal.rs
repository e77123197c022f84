//! Sealed journals: each entry a store keeps carries an HMAC-SHA256 (its
//! seal) over the run, its number, the seal of the entry before it and its
//! text, and the run's head (how many entries it has) is sealed too, with a
//! [`JournalKey`] kept outside the database. Whoever can write the database
//! but not read the key cannot change, insert, remove or reorder a run's
//! entries, nor make one up, without the run failing its check on replay
//! ([`JournalKey::open`]: [`JournalError::Tampered`]). A journal rolled
//! back whole to an earlier sealed state of the run (a backup put back, or
//! old pages SQLite's `-wal` file still holds) is not detected by the seals:
//! a SQLite store refuses it only for runs it saw further on while open;
//! another process, or one started afterwards, replays it. That needs a
//! record kept outside the database.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use hmac::{Hmac, KeyInit, Mac};
use sha2_hmac::Sha256;

use super::{JournalError, RunEntry, entry_from_json};

type HmacSha256 = Hmac<Sha256>;

/// How long a seal is, in bytes.
pub const SEAL_LEN: usize = 32;

/// The environment variable a host may give the key in (64 hex digits);
/// stores use it before any key file.
pub const KEY_ENV: &str = "AGENTRY_JOURNAL_KEY";

/// The secret that seals runs' journals (32 bytes). Kept outside the
/// database: in a file only its owner can read, or given by the host.
#[derive(Clone)]
pub struct JournalKey {
    bytes: [u8; 32],
}

impl std::fmt::Debug for JournalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JournalKey(..)")
    }
}

/// One entry as a store keeps it: its number, its JSON text and its seal
/// (none in a journal written before journals were sealed).
#[derive(Debug, Clone)]
pub struct SealedEntry {
    /// The entry's number.
    pub seq: u64,
    /// Its JSON text, as written.
    pub text: String,
    /// Its seal.
    pub seal: Option<Vec<u8>>,
}

/// A run's head as a store keeps it: how many entries were written, sealed.
#[derive(Debug, Clone)]
pub struct SealedHead {
    /// Entries written.
    pub entries: u64,
    /// The seal over the run, that count and the last entry's seal.
    pub seal: Option<Vec<u8>>,
}

fn key_error(what: impl std::fmt::Display) -> JournalError {
    JournalError::Store(format!("the journal key: {what}"))
}

/// What is wrong with the key file (its path is not said: the message may
/// reach an HTTP client).
fn file_error(what: impl std::fmt::Display) -> JournalError {
    JournalError::Store(format!("the journal key file {what}"))
}

/// The most of a key file read: 64 hex digits and a newline fit.
const MAX_KEY_FILE: usize = 128;

impl JournalKey {
    /// A key of these bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self { bytes }
    }

    /// A new random key.
    pub fn generate() -> Result<Self, JournalError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(key_error)?;
        Ok(Self { bytes })
    }

    /// The key written as 64 hex digits (spaces around are ignored).
    pub(crate) fn from_hex(text: &str) -> Result<Self, JournalError> {
        let text = text.trim();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(key_error("it must be 64 hex digits (32 bytes)"));
        }
        let digits: Option<Vec<u8>> = text
            .as_bytes()
            .chunks(2)
            .map(|pair| {
                let pair = std::str::from_utf8(pair).ok()?;
                u8::from_str_radix(pair, 16).ok()
            })
            .collect();
        match digits {
            Some(digits) => {
                let mut bytes = [0u8; 32];
                bytes.copy_from_slice(&digits);
                Ok(Self { bytes })
            }
            _ => Err(key_error("it must be 64 hex digits (32 bytes)")),
        }
    }

    /// The key in [`KEY_ENV`], when the host gives one.
    pub fn from_env() -> Result<Option<Self>, JournalError> {
        match std::env::var(KEY_ENV) {
            Ok(text) => Self::from_hex(&text).map(Some).map_err(|_| {
                JournalError::Store(format!("{KEY_ENV} must be 64 hex digits (32 bytes)"))
            }),
            Err(_) => Ok(None),
        }
    }

    /// The key in the file at `path`, made (random, readable by its owner
    /// only) when there is none. Two processes making it at once get the
    /// same key: it is written aside and linked into place. A file that is
    /// there is taken only as it is made: not a symbolic link, a regular
    /// file owned by this process's user, with no group or other bits in its
    /// mode, holding exactly 64 hex digits and an optional newline; else the
    /// error says what is wrong (never the path: clients may see it).
    pub fn load_or_create(path: &Path) -> Result<Self, JournalError> {
        if let Some(key) = Self::load(path)? {
            return Ok(key);
        }
        static MADE: AtomicU64 = AtomicU64::new(0);
        let key = Self::generate()?;
        // Written aside under a name of this attempt alone, then linked.
        let mut aside = path.as_os_str().to_owned();
        aside.push(format!(
            ".new-{}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        ));
        let aside = std::path::PathBuf::from(aside);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&aside).and_then(|mut file| {
            writeln!(file, "{}", key.to_hex())?;
            file.sync_all()
        });
        let linked = written.and_then(|()| std::fs::hard_link(&aside, path));
        let _ = std::fs::remove_file(&aside);
        match linked {
            Ok(()) => Ok(key),
            // Another process made it first: that one is the key.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                Self::load(path)?.ok_or_else(|| file_error("was removed while it was being made"))
            }
            Err(error) => Err(file_error(format_args!("cannot be made: {error}"))),
        }
    }

    /// The key in the file at `path`, judged on the opened handle (so a
    /// file swapped in between cannot pass); `None` when there is none.
    fn load(path: &Path) -> Result<Option<Self>, JournalError> {
        use std::io::Read;
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        // No link followed; a FIFO opens at once (and is refused below).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut options,
            libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        );
        let file = match options.open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            #[cfg(unix)]
            Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
                return Err(file_error(
                    "is a symbolic link: it must be a regular file, not a link",
                ));
            }
            Err(error) => return Err(file_error(format_args!("cannot be opened: {error}"))),
        };
        let meta = file
            .metadata()
            .map_err(|error| file_error(format_args!("cannot be examined: {error}")))?;
        if !meta.file_type().is_file() {
            return Err(file_error("is not a regular file"));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // SAFETY: geteuid has no preconditions and cannot fail.
            let user = unsafe { libc::geteuid() };
            if meta.uid() != user {
                return Err(file_error(format_args!(
                    "is owned by user {}, not by this process's user {user}",
                    meta.uid()
                )));
            }
            if meta.mode() & 0o077 != 0 {
                return Err(file_error(format_args!(
                    "has mode {:04o}: others than its owner may use it; chmod 600 it",
                    meta.mode() & 0o7777
                )));
            }
        }
        let mut text = Vec::with_capacity(MAX_KEY_FILE);
        file.take(MAX_KEY_FILE as u64)
            .read_to_end(&mut text)
            .map_err(|error| file_error(format_args!("cannot be read: {error}")))?;
        let digits = text.strip_suffix(b"\n").unwrap_or(&text);
        match std::str::from_utf8(digits) {
            Ok(digits) if digits.len() == 64 && digits.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Self::from_hex(digits).map(Some)
            }
            _ => Err(file_error(
                "must hold exactly 64 hex digits (32 bytes) and an optional newline",
            )),
        }
    }

    fn to_hex(&self) -> String {
        self.bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn mac(&self, domain: &[u8], run: &str, n: u64, chained: &[u8], text: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.bytes).expect("HMAC takes any key length");
        mac.update(domain);
        mac.update(&(run.len() as u64).to_be_bytes());
        mac.update(run.as_bytes());
        mac.update(&n.to_be_bytes());
        mac.update(chained);
        mac.update(text);
        mac
    }

    /// The seal of entry `seq` of `run` with this JSON `text`, chained to
    /// the seal of the entry before it (`None` for entry 0).
    pub fn seal_entry(&self, run: &str, seq: u64, previous: Option<&[u8]>, text: &str) -> Vec<u8> {
        let previous = previous.unwrap_or(&[0u8; SEAL_LEN]);
        self.mac(b"agentry run entry v1", run, seq, previous, text.as_bytes())
            .finalize()
            .into_bytes()
            .to_vec()
    }

    /// The seal of `run`'s head: `entries` written, the last one sealed
    /// with `last`.
    pub fn seal_head(&self, run: &str, entries: u64, last: &[u8]) -> Vec<u8> {
        self.mac(b"agentry run head v1", run, entries, last, b"")
            .finalize()
            .into_bytes()
            .to_vec()
    }

    /// The entries of `run` (`rows` in order of their numbers, at least
    /// one) once every seal checks: each entry's, chained from the first,
    /// and the head's. [`JournalError::Tampered`] names the first entry
    /// that fails.
    pub fn open(
        &self,
        run: &str,
        rows: Vec<SealedEntry>,
        head: Option<SealedHead>,
    ) -> Result<Vec<RunEntry>, JournalError> {
        let tampered = |seq: u64, why: &str| JournalError::Tampered {
            run: run.to_owned(),
            seq,
            why: why.to_owned(),
        };
        let mut previous: Option<Vec<u8>> = None;
        for (at, row) in rows.iter().enumerate() {
            let at = at as u64;
            if row.seq != at {
                return Err(tampered(at, "it is missing"));
            }
            let Some(seal) = &row.seal else {
                return Err(tampered(
                    at,
                    "it has no seal (it was written before journals were sealed, or its seal was removed)",
                ));
            };
            let expected = self.mac(
                b"agentry run entry v1",
                run,
                at,
                previous.as_deref().unwrap_or(&[0u8; SEAL_LEN]),
                row.text.as_bytes(),
            );
            if expected.verify_slice(seal).is_err() {
                return Err(tampered(
                    at,
                    "its seal does not match (it was changed, moved or made up)",
                ));
            }
            previous = Some(seal.clone());
        }
        let count = rows.len() as u64;
        let last = previous.unwrap_or_default();
        let Some(SealedHead {
            entries,
            seal: Some(seal),
        }) = head
        else {
            return Err(tampered(count, "the run's sealed head is missing"));
        };
        if entries != count {
            return Err(tampered(
                count.min(entries),
                &format!("{entries} entries were written and {count} are there"),
            ));
        }
        if self
            .mac(b"agentry run head v1", run, entries, &last, b"")
            .verify_slice(&seal)
            .is_err()
        {
            return Err(tampered(
                count.saturating_sub(1),
                "the run's sealed head does not match its last entry",
            ));
        }
        rows.iter()
            .map(|row| entry_from_json(run, &row.text))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(key: &JournalKey, run: &str, texts: &[&str]) -> (Vec<SealedEntry>, SealedHead) {
        let mut rows = Vec::new();
        let mut previous: Option<Vec<u8>> = None;
        for (seq, text) in texts.iter().enumerate() {
            let seal = key.seal_entry(run, seq as u64, previous.as_deref(), text);
            rows.push(SealedEntry {
                seq: seq as u64,
                text: (*text).to_owned(),
                seal: Some(seal.clone()),
            });
            previous = Some(seal);
        }
        let head = SealedHead {
            entries: texts.len() as u64,
            seal: Some(key.seal_head(run, texts.len() as u64, &previous.unwrap())),
        };
        (rows, head)
    }

    const A: &str = r#"{"kind":"ended","outcome":"final","detail":"a"}"#;
    const B: &str = r#"{"kind":"ended","outcome":"final","detail":"b"}"#;
    const C: &str = r#"{"kind":"ended","outcome":"final","detail":"c"}"#;

    fn why(result: Result<Vec<RunEntry>, JournalError>) -> (u64, String) {
        match result {
            Err(JournalError::Tampered { seq, why, .. }) => (seq, why),
            other => panic!("expected a tampered journal, got {other:?}"),
        }
    }

    #[test]
    fn a_sealed_journal_opens_and_any_change_is_refused() {
        let key = JournalKey::generate().unwrap();
        let (rows, head) = sealed(&key, "r", &[A, B, C]);
        assert_eq!(
            key.open("r", rows.clone(), Some(head.clone()))
                .unwrap()
                .len(),
            3
        );

        let mut edited = rows.clone();
        edited[1].text = B.replace("\"b\"", "\"x\"");
        let (seq, reason) = why(key.open("r", edited, Some(head.clone())));
        assert_eq!(
            (seq, reason.as_str()),
            (
                1,
                "its seal does not match (it was changed, moved or made up)"
            )
        );

        let mut swapped = rows.clone();
        swapped.swap(1, 2);
        swapped[1].seq = 1;
        swapped[2].seq = 2;
        assert_eq!(why(key.open("r", swapped, Some(head.clone()))).0, 1);

        let mut removed = rows.clone();
        removed.remove(1);
        assert_eq!(
            why(key.open("r", removed, Some(head.clone()))),
            (1, "it is missing".into())
        );

        let mut cut = rows.clone();
        cut.pop();
        assert_eq!(
            why(key.open("r", cut.clone(), Some(head.clone()))),
            (2, "3 entries were written and 2 are there".into())
        );
        let forged_count = SealedHead {
            entries: 2,
            seal: head.seal.clone(),
        };
        assert_eq!(
            why(key.open("r", cut, Some(forged_count))),
            (
                1,
                "the run's sealed head does not match its last entry".into()
            )
        );

        // Sealed for another run, or with another key: refused.
        assert_eq!(
            why(key.open("other", rows.clone(), Some(head.clone()))).0,
            0
        );
        let stranger = JournalKey::generate().unwrap();
        let (forged, forged_head) = sealed(&stranger, "r", &[A, B, C]);
        assert_eq!(why(key.open("r", forged, Some(forged_head))).0, 0);

        let mut unsealed = rows;
        unsealed.iter_mut().for_each(|row| row.seal = None);
        assert_eq!(
            why(key.open("r", unsealed, None)),
            (0, "it has no seal (it was written before journals were sealed, or its seal was removed)".into())
        );
    }

    #[test]
    fn a_key_file_is_made_once_readable_by_its_owner_only() {
        let dir = std::env::temp_dir().join(format!("agentry-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("runs.db.key");
        let made = JournalKey::load_or_create(&path).unwrap();
        let read = JournalKey::load_or_create(&path).unwrap();
        assert_eq!(made.bytes, read.bytes);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(
            JournalKey::from_hex("abc").unwrap_err(),
            JournalError::Store("the journal key: it must be 64 hex digits (32 bytes)".into())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
