//! The `inrush` command: everything it does is in the library (`inrush::main`), which the
//! Python module runs too.

mod argv;

fn main() -> std::process::ExitCode {
    let args: Vec<_> = std::env::args_os().collect();
    argv::hide_passwords();
    std::process::ExitCode::from(inrush::main(args))
}
