//! What the faces show, computed once here so the window, the tray and `nightshiftctl` agree:
//! routines in words, runs explained, logs as readable transcripts, reports as safe HTML.

pub mod explain;
pub mod log;
pub mod markdown;
pub mod routines;
