//! The `dimsum` binary: parses the command line, runs it, and turns errors
//! into one line on stderr and an exit code (2 for bad input, 1 otherwise).

mod cli;

use clap::Parser;
use cli::{Cli, run};
use dimsum::error::InputError;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Like other command-line tools, end quietly when the reader of stdout
    // goes away (`dimsum ... | head`) instead of panicking on the write.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread
    // starts; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            if e.downcast_ref::<InputError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
