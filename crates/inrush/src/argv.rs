//! Passwords in the command's own arguments, hidden from other users' `ps`.
//!
//! `/proc/PID/cmdline`, which `ps` shows to every user of the machine, reads the argument
//! strings where the kernel wrote them, so `--to postgresql://app:pw@db/shop` would be everyone's
//! to see for as long as the load runs. As the `mysql` client does, inrush overwrites each
//! password there with `x`s once std has copied the arguments: it is visible only between `exec`
//! and that write, before any connection. The environment (`PGPASSWORD`, `MYSQL_PWD`: readable
//! by the user alone), `~/.pgpass`, `~/.my.cnf` and ODBC DSNs keep it out of the arguments
//! altogether.

/// Overwrites every password in the process's argument strings (a no-op where the arguments
/// cannot be reached).
pub fn hide_passwords() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    linux::hide_passwords();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod linux {
    use std::ffi::{c_char, c_int, CStr};
    use std::sync::atomic::{AtomicIsize, AtomicPtr, Ordering};

    static ARGC: AtomicIsize = AtomicIsize::new(0);
    static ARGV: AtomicPtr<*mut c_char> = AtomicPtr::new(std::ptr::null_mut());

    /// glibc calls each function in `.init_array` with `main`'s own `argc` and `argv` (std
    /// learns its arguments the same way).
    #[used]
    #[link_section = ".init_array.00099"]
    static CAPTURE: extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char) = capture;

    extern "C" fn capture(argc: c_int, argv: *mut *mut c_char, _env: *mut *mut c_char) {
        ARGC.store(argc as isize, Ordering::Relaxed);
        ARGV.store(argv, Ordering::Relaxed);
    }

    pub fn hide_passwords() {
        let argv = ARGV.load(Ordering::Relaxed);
        if argv.is_null() {
            return;
        }
        for i in 0..ARGC.load(Ordering::Relaxed) {
            // SAFETY: argv[0..argc] are the NUL-terminated strings the kernel wrote for this
            // process, alive for its whole life; std has copied them, nothing else holds a
            // reference, and each write stays within one string's bytes before its NUL.
            unsafe {
                let arg = *argv.offset(i);
                if arg.is_null() {
                    continue;
                }
                let spans = match std::str::from_utf8(CStr::from_ptr(arg).to_bytes()) {
                    Ok(text) => inrush_core::secret::password_spans(text),
                    Err(_) => continue,
                };
                for span in spans {
                    std::ptr::write_bytes(arg.add(span.start), b'x', span.len());
                }
            }
        }
    }
}
