//! A load from a pipe stopped by a signal while its input is still open, for the checks that a
//! stop rolls back, exits 130 and never hangs.

/// `inrush load -` (CSV with a header) into `table` at `to`, its standard input a pipe.
pub fn load_from_pipe(bin: &str, to: &str, table: &str, extra: &[&str]) -> std::process::Child {
    let mut args = vec!["load", "-", "--format", "csv", "--header", "--no-progress"];
    args.extend(["--to", to, "--table", table]);
    args.extend_from_slice(extra);
    std::process::Command::new(bin)
        .args(&args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Feeds `rows` to a load from a pipe, sends it `signal` while the pipe is still open, and
/// returns its exit code and stderr (within a minute, else the load is killed and the check
/// fails: a stop must never hang).
pub fn stopped_while_reading(
    mut child: std::process::Child,
    rows: &str,
    signal: i32,
) -> (i32, String) {
    use std::io::{Read, Write};
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(rows.as_bytes()).unwrap();
    pipe.flush().unwrap();
    // Not a timing the check depends on: before or after the rows reach the engine, a stop
    // before the commit rolls everything back.
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, signal) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the load did not stop within a minute of signal {signal}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(pipe);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code().unwrap_or(-1), stderr)
}
