//! `routines edit NAME`: the routine's file in the user's editor, checked before it replaces the
//! file — this home's, or another's (`--home`: the copy is edited here, checked and saved there).
//! The editor works on a copy, so a half-typed routine is never live; on problems the user
//! is offered to edit again (the copy keeps their work), and a file changed meanwhile by someone
//! else (a sync, another editor) is never overwritten.

use super::files::Files;
use crate::Outcome;
use nightshift_core::routine::Severity;
use nightshift_core::{Error, ErrorCode};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::Command;

pub async fn edit(files: Files<'_>, name: &str) -> Result<Outcome, Error> {
    let source = files.source(name).await?;
    let scratch = tempfile::Builder::new()
        .prefix(&format!("nightshift-{name}-"))
        .suffix(".yaml")
        .tempfile()
        .map_err(|e| Error::new(ErrorCode::Io, format!("cannot create a copy to edit: {e}")))?;
    std::fs::write(scratch.path(), &source.text).map_err(|e| Error::io("write", scratch.path(), &e))?;
    loop {
        open_editor(scratch.path())?;
        let text = std::fs::read_to_string(scratch.path()).map_err(|e| Error::io("read", scratch.path(), &e))?;
        if text == source.text {
            println!("No changes to {}.", source.file);
            return Ok(Outcome::Ok);
        }
        let (problems, warnings): (Vec<_>, Vec<_>) = files.check_text(name, &text).await?.into_iter().partition(|p| p.severity == Severity::Error);
        // Positions refer to the file the user edits; warnings are said and never block.
        for p in &warnings {
            eprintln!("{}:{}:{}: warning: {}", source.file, p.line, p.col, p.message);
        }
        if problems.is_empty() {
            return match files.save_text(name, &text, &source.version).await {
                Ok(saved) => {
                    println!("✓ saved {}", saved.file);
                    Ok(Outcome::Ok)
                }
                Err(e) => Err(kept(scratch, e)),
            };
        }
        for p in &problems {
            eprintln!("error: {}:{}:{}: {}", source.file, p.line, p.col, p.message);
        }
        if !ask("Edit again? [Y/n] ") {
            return Err(kept(scratch, Error::new(ErrorCode::RoutineInvalid, format!("not saved: {} is unchanged", source.file))));
        }
    }
}

/// The user's work is never thrown away: the copy is kept and named in the error.
fn kept(scratch: tempfile::NamedTempFile, err: Error) -> Error {
    match scratch.keep() {
        Ok((_, path)) => Error::new(err.code, format!("{}\nYour edited copy is kept at {}", err.message, path.display())),
        Err(_) => err,
    }
}

/// $VISUAL, else $EDITOR, else vi — run through the shell, as editors with arguments
/// (`code --wait`) expect.
fn open_editor(file: &Path) -> Result<(), Error> {
    let editor = std::env::var("VISUAL").ok().filter(|v| !v.trim().is_empty()).or_else(|| std::env::var("EDITOR").ok().filter(|v| !v.trim().is_empty())).unwrap_or_else(|| "vi".into());
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("nightshift-edit")
        .arg(file)
        .status()
        .map_err(|e| Error::new(ErrorCode::SpawnFailed, format!("cannot start the editor \"{editor}\": {e}; set $EDITOR")))?;
    if !status.success() {
        return Err(Error::new(ErrorCode::SpawnFailed, format!("the editor \"{editor}\" exited with {status}; nothing was saved")));
    }
    Ok(())
}

/// A yes/no question on stderr; the answer from stdin (a pipe works too). No answer is no.
fn ask(question: &str) -> bool {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => {
            if !std::io::stdin().is_terminal() {
                eprintln!();
            }
            false
        }
        Ok(_) => !line.trim().to_ascii_lowercase().starts_with('n'),
    }
}
