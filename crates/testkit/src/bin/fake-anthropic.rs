//! Run the fake Anthropic Messages API standalone (for recording fixtures from the real CLI, and
//! for the end-to-end tests of the app). Prints its base URL, then serves until killed.
//!
//!   fake-anthropic --default success --text "All good" --token tok-a=unified --token tok-b=401

use clap::Parser;
use nightshift_testkit::{FakeAnthropic, Reply};

#[derive(Parser)]
struct Args {
    /// Reply for unknown credentials: success | windows | 401 | 429 | unified | 500 | hang
    #[arg(long, default_value = "success")]
    default: String,
    /// The assistant's text for success replies.
    #[arg(long, default_value = "Done. Everything is fine.")]
    text: String,
    /// Per-credential replies, TOKEN=REPLY (repeatable).
    #[arg(long = "token")]
    tokens: Vec<String>,
    /// Reset time (epoch seconds) for `unified`; default: in one hour.
    #[arg(long)]
    reset: Option<i64>,
}

fn reply(name: &str, text: &str, reset: i64) -> Reply {
    match name {
        "success" => Reply::Success { text: text.to_string() },
        // A success that carries the subscription windows: five hours at 85 %, seven days at 40 %.
        "windows" => Reply::Windows { five_hour: 0.85, five_hour_reset: reset, seven_day: 0.4, seven_day_reset: reset + 3 * 86_400, text: text.to_string() },
        "401" => Reply::Unauthorized,
        "429" => Reply::RateLimited,
        "unified" => Reply::UnifiedLimit { reset_epoch: reset },
        "500" => Reply::ServerError,
        "hang" => Reply::Hang,
        other => {
            eprintln!("unknown reply {other:?}: expected success, windows, 401, 429, unified, 500 or hang");
            std::process::exit(2)
        }
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let reset = args.reset.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 + 3600);
    let fake = FakeAnthropic::start(Some(reply(&args.default, &args.text, reset))).await;
    for t in &args.tokens {
        let Some((token, r)) = t.split_once('=') else {
            eprintln!("--token takes TOKEN=REPLY");
            std::process::exit(2)
        };
        fake.set(token, reply(r, &args.text, reset));
    }
    println!("{}", fake.url());
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    }
}
