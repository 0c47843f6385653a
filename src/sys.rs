//! The one module that calls the operating system directly, and so the
//! only one allowed `unsafe` code (`unsafe_code` is denied everywhere
//! else): the signals the binary handles, and memory advice to the kernel.

#![allow(unsafe_code)]

/// Restores the default disposition of SIGPIPE, so that a command whose
/// reader goes away (`dimsum ... | head`) ends quietly instead of failing
/// on the write. Call it first in `main`, before any thread starts.
pub fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread
    // starts; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread (and so in every
/// thread started after it) and starts a thread that waits for the first
/// of them and calls `then` with its name and number. Call it before any
/// other thread starts.
#[cfg(unix)]
pub fn on_signal(then: impl FnOnce(&'static str, i32) + Send + 'static) {
    // SAFETY: sigset_t is plain data initialised by sigemptyset; the mask
    // is set before any other thread exists, and sigwait only reads `set`.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        std::thread::spawn(move || {
            let mut sig = 0;
            while libc::sigwait(&set, &mut sig) != 0 {}
            let name = match sig {
                libc::SIGINT => "SIGINT",
                libc::SIGTERM => "SIGTERM",
                _ => "SIGHUP",
            };
            then(name, sig);
        });
    }
}

/// Asks the kernel to back a large array (8 MiB or more) with huge pages
/// where it can (Linux, `MADV_HUGEPAGE`): the simulator's and the
/// synthesizer's per-NPU state is read at random, and with 4 KiB pages
/// nearly every read of it also misses the TLB. Call it before the array is
/// first written. Harmless where it fails or does not apply. (The
/// simulator's cells took it from 64 MiB up before; 8 MiB covers the
/// synthesizer's state from about 90x90 NPUs.)
pub fn advise_huge_pages<T>(v: &[T]) {
    #[cfg(target_os = "linux")]
    {
        let bytes = std::mem::size_of_val(v);
        if bytes < 8 << 20 {
            return;
        }
        let start = v.as_ptr() as usize;
        let page = 2 << 20;
        let aligned = start.next_multiple_of(page);
        let end = start + bytes;
        if end > aligned + page {
            // SAFETY: the range lies inside the allocation `v` borrows and
            // MADV_HUGEPAGE only changes how the kernel backs it (the
            // contents stay as they are); a failure is harmless.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    (end - aligned) / page * page,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
}
