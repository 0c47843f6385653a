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
    dimsum::sys::default_sigpipe();
    // Before any thread starts: an interrupt removes unfinished outputs.
    dimsum::io::on_interrupt_remove_temporaries();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            // One line, as every other error: clap's message without its
            // usage and help lines.
            let text = e.render().to_string();
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .filter(|l| !l.is_empty())
                .collect();
            eprintln!("{}", lines.join(" "));
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
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
