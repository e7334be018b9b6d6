//! Re-login: open the user's terminal running the agent's own login (`claude /login`, `codex
//! login`, `gemini`) with the account's config dir, so the login lands where Nightshift's runs look
//! for it. Where no terminal can be found the caller shows the exact command to copy instead.

use nightshift_core::accounts::Account;
use std::process::Command;

/// Terminals to try, first available wins: `$TERMINAL`, then the usual suspects.
pub fn terminal_candidates(env_terminal: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = env_terminal.filter(|t| !t.is_empty()) {
        out.push(t.to_string());
    }
    for t in ["x-terminal-emulator", "gnome-terminal", "konsole", "xfce4-terminal", "alacritty", "kitty", "xterm"] {
        out.push(t.to_string());
    }
    out
}

/// Open a terminal running the login. `Err` carries the command to show when none could start.
pub fn open_terminal(account: &Account) -> Result<String, String> {
    let cmd = account.login_command_line();
    if cfg!(target_os = "macos") {
        let script = format!("tell application \"Terminal\" to do script \"{}\"", cmd.replace('"', "\\\""));
        return Command::new("osascript").args(["-e", &script]).spawn().map(|_| "Terminal".into()).map_err(|_| cmd);
    }
    let shell_line = format!("{cmd}; echo; echo 'You can close this window.'; read _");
    for term in terminal_candidates(std::env::var("TERMINAL").ok().as_deref()) {
        let mut c = Command::new(&term);
        if term.contains("gnome-terminal") {
            c.args(["--", "sh", "-c", &shell_line]);
        } else {
            c.args(["-e", "sh", "-c", &shell_line]);
        }
        if c.spawn().is_ok() {
            return Ok(term);
        }
    }
    Err(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_order_and_command() {
        assert_eq!(terminal_candidates(Some("wezterm"))[0], "wezterm");
        assert_eq!(terminal_candidates(None)[0], "x-terminal-emulator");
        let account = |agent| Account { agent, email: "me@x.dev".into(), config_dir: format!("/h/accounts/{}/me", agent.as_str()).into(), provider: None };
        use nightshift_core::words::Agent::*;
        assert_eq!(account(Claude).login_command_line(), "CLAUDE_CONFIG_DIR='/h/accounts/claude/me' claude /login");
        assert_eq!(account(Codex).login_command_line(), "CODEX_HOME='/h/accounts/codex/me' codex login");
        assert_eq!(account(Gemini).login_command_line(), "GEMINI_CLI_HOME='/h/accounts/gemini/me' gemini");
    }
}
