//! The files a call may write. The kernel caps the size of each
//! (`RLIMIT_FSIZE`); the parent counts them. In a call with an `FsWrite`
//! grant, every system call that opens a file for writing (write access,
//! `O_CREAT` or `O_TRUNC` in its flags) or makes a name (a directory, a
//! link, a symbolic link, a device node) or renames one stops in the
//! child's seccomp
//! filter and waits for the parent, which counts it: while the call has
//! files left it lets the system call go on
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`); after, it answers "Disk quota
//! exceeded". Everything else that could grow a file needs a descriptor
//! open for writing, so a counted open, and is capped by the file-size
//! limit; what does not ([`confine`](crate::confine) refuses it: a path's
//! `truncate`, `fallocate` past the end of a file and the ioctls that
//! reserve space, `openat2`, a rename that leaves a whiteout) is refused. So a call leaves at most
//! [`Limits::total_written_bytes`](crate::Limits::total_written_bytes) in
//! files.
//!
//! Letting a notified system call go on is unsafe where the parent decides
//! by what the child's memory holds (a path, an address), which another
//! of the child's threads can change between the check and the call. Here
//! the decision rests on the system call's number and its flags, which the
//! filter reads from registers, and on the count: nothing in the child's
//! memory is read.

/// The flags of an open that may write: write access (`O_WRONLY`,
/// `O_RDWR`, and the mode 3 that names neither), creation, truncation.
/// `O_TMPFILE` asks for write access.
pub(crate) const WRITE_FLAGS: u32 = (libc::O_ACCMODE | libc::O_CREAT | libc::O_TRUNC) as u32;

/// The system calls that open a path, with the index of their flags
/// argument: counted when the flags include one of [`WRITE_FLAGS`].
pub(crate) const OPENS: &[(libc::c_long, u8)] = &[
    (libc::SYS_openat, 2),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_open, 1),
];

/// The system calls that make a file for writing or a name, or put a name
/// in a directory, whatever their arguments: each counts. A rename counts
/// too: it adds no bytes to a file, but it puts a name in a directory
/// (perhaps another), and a directory's listing keeps the room its names
/// once took, so renames repeated without a count would grow directories
/// without a bound.
pub(crate) const MAKERS: &[libc::c_long] = &[
    libc::SYS_mkdirat,
    libc::SYS_symlinkat,
    libc::SYS_linkat,
    libc::SYS_mknodat,
    libc::SYS_renameat2,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_renameat,
    // renameat: arm64 has it (`__ARCH_WANT_RENAMEAT`), the libc crate does
    // not name it.
    #[cfg(target_arch = "aarch64")]
    38,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_creat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_mkdir,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_symlink,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_link,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_mknod,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_rename,
];

/// What a call has left to write: the parent's count, one per call.
#[derive(Debug)]
pub(crate) struct FileQuota {
    left: u64,
}

impl FileQuota {
    /// A call that may write `files` files.
    pub(crate) fn new(files: u64) -> Self {
        Self { left: files }
    }

    /// Whether the system call numbered `nr` is one this counts.
    pub(crate) fn counts(nr: i32) -> bool {
        let nr = libc::c_long::from(nr);
        MAKERS.contains(&nr) || OPENS.iter().any(|&(open, _)| open == nr)
    }

    /// The answer to the notification `id` of a counted system call: go
    /// on, while a file is left, or "Disk quota exceeded". Each counts,
    /// even an open of a file counted before, or one that then fails.
    pub(crate) fn answer(&mut self, id: u64) -> libc::seccomp_notif_resp {
        let mut reply = libc::seccomp_notif_resp {
            id,
            val: 0,
            error: 0,
            flags: 0,
        };
        match self.left.checked_sub(1) {
            Some(left) => {
                self.left = left;
                reply.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32;
            }
            None => reply.error = -libc::EDQUOT,
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_down_then_refuses() {
        let mut quota = FileQuota::new(2);
        for id in 0..2 {
            let reply = quota.answer(id);
            assert_eq!((reply.id, reply.error), (id, 0));
            assert_eq!(reply.flags, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32);
        }
        let refused = quota.answer(7);
        assert_eq!(
            (refused.id, refused.error, refused.flags),
            (7, -libc::EDQUOT, 0)
        );
    }

    #[test]
    fn counts_opens_and_names_only() {
        assert!(FileQuota::counts(libc::SYS_openat as i32));
        assert!(FileQuota::counts(libc::SYS_mkdirat as i32));
        assert!(FileQuota::counts(libc::SYS_renameat2 as i32));
        assert!(!FileQuota::counts(libc::SYS_connect as i32));
        assert!(!FileQuota::counts(libc::SYS_write as i32));
    }
}
