//! The `inrush` command: everything it does is in the library (`inrush::main`), which the
//! Python module runs too.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(inrush::main(std::env::args_os()))
}
