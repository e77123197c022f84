//! The store's files are private to their owner: the database, which holds
//! conversations and run journals, is created with mode 0600 before SQLite
//! opens it, and its `-wal` and `-shm` files are kept no more open than it.

use std::path::{Path, PathBuf};

/// Create the database file at `path` with mode 0600 when it does not exist
/// yet (an empty file is a new database to SQLite). A URI, an in-memory
/// name, or a file that cannot be created is left to SQLite, which opens it
/// or says why not.
pub(super) fn create(path: &Path) {
    let name = path.to_string_lossy();
    if name.is_empty() || name == ":memory:" || name.starts_with("file:") {
        return;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let _ = options.open(path);
}

/// Refuse a `path` that is a symbolic link, with an error saying so (SQLite
/// alone would only say it cannot open the file).
pub(super) fn refuse_link(path: &Path) -> Result<(), agentry_core::memory::MemoryError> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            Err(agentry_core::memory::MemoryError::refused(format!(
                "sqlite: {} is a symbolic link; the store opens no link (name the file it leads to)",
                path.display()
            )))
        }
        _ => Ok(()),
    }
}

/// Give the `-wal` and `-shm` files of the database SQLite opened at `path`
/// its mode where theirs is more open (SQLite copies the database's mode
/// when it creates them; one left by an older version may not have it).
pub(super) fn companions(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        for suffix in ["-wal", "-shm"] {
            let mut companion = PathBuf::from(path).into_os_string();
            companion.push(suffix);
            let Ok(metadata) = std::fs::metadata(&companion) else {
                continue;
            };
            if metadata.permissions().mode() & 0o777 & !mode != 0 {
                std::fs::set_permissions(&companion, std::fs::Permissions::from_mode(mode))?;
            }
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::super::SqliteStore;

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_store_path_that_is_a_link_is_refused_and_nothing_is_made_where_it_leads() {
        let dir = std::env::temp_dir().join(format!("agentry-store-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("repo")).unwrap();
        let planted = dir.join("planted.db");
        let link = dir.join("repo/agentry.db");
        std::os::unix::fs::symlink("../planted.db", &link).unwrap();
        let error = SqliteStore::open(&link).err().unwrap();
        assert_eq!(
            error.to_string(),
            format!(
                "memory store: sqlite: {} is a symbolic link; the store opens no link (name the file it leads to)",
                link.display()
            )
        );
        assert!(!planted.exists(), "nothing is made where the link leads");
        // The same once the target exists: it is left untouched.
        std::fs::write(&planted, b"").unwrap();
        assert!(SqliteStore::open(&link).is_err());
        assert_eq!(std::fs::read(&planted).unwrap(), b"");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_new_store_and_its_wal_files_are_private() {
        let dir =
            std::env::temp_dir().join(format!("agentry-store-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("agentry.db");
        let store = SqliteStore::open(&db).unwrap();
        let wal = dir.join("agentry.db-wal");
        let shm = dir.join("agentry.db-shm");
        assert!(
            wal.exists() && shm.exists(),
            "WAL mode writes both at opening"
        );
        assert_eq!([mode(&db), mode(&wal), mode(&shm)], [0o600; 3]);

        // Companions left more open than their database are closed up when
        // the store is opened again.
        for companion in [&wal, &shm] {
            std::fs::set_permissions(companion, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let again = SqliteStore::open(&db).unwrap();
        assert_eq!([mode(&db), mode(&wal), mode(&shm)], [0o600; 3]);
        drop((store, again));

        // A database the user made more open stays as the user made it.
        let shared = dir.join("shared.db");
        std::fs::write(&shared, b"").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
        let _shared = SqliteStore::open(&shared).unwrap();
        assert_eq!(mode(&shared), 0o640);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
