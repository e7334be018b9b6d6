//! Editing `nightshift.toml` in place for the CLI and the window — adding and removing
//! `[[accounts]]`, `[[homes]]` and `projects` — keeping the user's comments and layout.

use crate::error::{Error, ErrorCode, Result};
use crate::home::Home;
use crate::words::Agent;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

fn load(home: &Home) -> Result<DocumentMut> {
    let path = home.settings_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io("read", &path, &e)),
    };
    text.parse::<DocumentMut>()
        .map_err(|e| Error::new(ErrorCode::SettingsInvalid, format!("{}: {e}", path.display())))
}

fn save(home: &Home, doc: &DocumentMut) -> Result<()> {
    crate::fsutil::write_atomic(&home.settings_path(), doc.to_string().as_bytes())
}

fn emails(doc: &DocumentMut) -> Vec<(String, String)> {
    doc.get("accounts")
        .and_then(Item::as_array_of_tables)
        .map(|a| {
            a.iter()
                .map(|t| {
                    (
                        t.get("agent").and_then(|v| v.as_str()).unwrap_or("claude").to_string(),
                        t.get("email").and_then(|v| v.as_str()).unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Append `table` to the array of tables `array` (`[[accounts]]`, `[[homes]]`), creating it.
fn push_table(doc: &mut DocumentMut, array: &str, table: Table) {
    match doc.get_mut(array).and_then(Item::as_array_of_tables_mut) {
        Some(arr) => arr.push(table),
        None => {
            let mut arr = ArrayOfTables::new();
            arr.push(table);
            doc.insert(array, Item::ArrayOfTables(arr));
        }
    }
}

/// Remove the tables of `array` whose `key` is `value` and save; `Err(missing)` when none was.
fn remove_tables(home: &Home, array: &str, key: &str, value: &str, missing: String) -> Result<()> {
    let mut doc = load(home)?;
    let Some(arr) = doc.get_mut(array).and_then(Item::as_array_of_tables_mut) else {
        return Err(Error::new(ErrorCode::Usage, missing));
    };
    let before = arr.len();
    arr.retain(|t| t.get(key).and_then(|v| v.as_str()) != Some(value));
    if arr.len() == before {
        return Err(Error::new(ErrorCode::Usage, missing));
    }
    save(home, &doc)
}

/// Append an account (an OpenCode one with the `provider` its key is for, if given). Adding one
/// that exists is an error that says so.
pub fn add_account(home: &Home, agent: Agent, email: &str, provider: Option<&str>) -> Result<()> {
    if !email.contains('@') || email.chars().any(char::is_whitespace) {
        return Err(Error::new(ErrorCode::Usage, format!("\"{email}\" does not look like an email address (the account's identity)")));
    }
    if let Some(problem) = provider.and_then(|p| crate::settings::provider_problem(agent, email, p)) {
        return Err(Error::new(ErrorCode::Usage, problem));
    }
    let mut doc = load(home)?;
    if emails(&doc).iter().any(|(a, e)| a == agent.as_str() && e == email) {
        return Err(Error::new(ErrorCode::Usage, format!("account {email} ({}) already exists", agent.as_str())));
    }
    let mut table = Table::new();
    table.insert("agent", toml_edit::value(agent.as_str()));
    table.insert("email", toml_edit::value(email));
    if let Some(p) = provider {
        table.insert("provider", toml_edit::value(p));
    }
    push_table(&mut doc, "accounts", table);
    save(home, &doc)
}

/// Set an account's `reserve` (a percent, `None`: none) and `usage_probe` (only Claude has the
/// endpoint it reads), keeping everything else in its table as the user wrote it.
pub fn set_account_options(home: &Home, email: &str, reserve: Option<u8>, usage_probe: bool) -> Result<()> {
    let mut doc = load(home)?;
    let table = doc
        .get_mut("accounts")
        .and_then(Item::as_array_of_tables_mut)
        .and_then(|arr| arr.iter_mut().find(|t| t.get("email").and_then(|v| v.as_str()) == Some(email)))
        .ok_or_else(|| Error::new(ErrorCode::Usage, format!("no account {email}")))?;
    // An account without `agent` is Claude Code's, as the settings read it (`default_agent`).
    let agent = table.get("agent").and_then(|v| v.as_str()).and_then(Agent::parse).unwrap_or(Agent::Claude);
    if let Some(problem) = crate::settings::options_problem(agent, email, reserve, usage_probe) {
        return Err(Error::new(ErrorCode::Usage, problem));
    }
    match reserve {
        Some(r) => table.insert("reserve", toml_edit::value(i64::from(r))),
        None => table.remove("reserve"),
    };
    match usage_probe {
        true => table.insert("usage_probe", toml_edit::value(true)),
        false => table.remove("usage_probe"),
    };
    save(home, &doc)
}

/// Remove an account by email (any agent). Its keychain item is the caller's to delete.
pub fn remove_account(home: &Home, email: &str) -> Result<()> {
    remove_tables(home, "accounts", "email", email, format!("no account {email}"))
}

/// The folders listed in `projects`, as written.
fn projects(doc: &DocumentMut) -> Vec<String> {
    doc.get("projects").and_then(Item::as_array).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

/// Opt a project folder in: its `.agents/routines/` are read from now on. `dir` must be a folder;
/// it is kept as an absolute path. Adding one that is listed is an error that says so.
pub fn add_project(home: &Home, dir: &std::path::Path) -> Result<std::path::PathBuf> {
    let dir = std::fs::canonicalize(dir).map_err(|e| Error::new(ErrorCode::Usage, format!("{}: {e}", dir.display())))?;
    if !dir.is_dir() {
        return Err(Error::new(ErrorCode::Usage, format!("{} is not a folder", dir.display())));
    }
    let mut doc = load(home)?;
    let shown = dir.display().to_string();
    if projects(&doc).contains(&shown) {
        return Err(Error::new(ErrorCode::Usage, format!("{shown} is already a project (its routines are read)")));
    }
    match doc.get_mut("projects").and_then(Item::as_array_mut) {
        Some(arr) => arr.push(shown.as_str()),
        None => {
            let mut arr = toml_edit::Array::new();
            arr.push(shown.as_str());
            doc.insert("projects", toml_edit::value(arr));
        }
    }
    save(home, &doc)?;
    Ok(dir)
}

/// Stop reading a project folder's routines (its files stay where they are).
pub fn remove_project(home: &Home, dir: &std::path::Path) -> Result<()> {
    let mut doc = load(home)?;
    let wanted: Vec<String> = [Some(dir.display().to_string()), std::fs::canonicalize(dir).ok().map(|d| d.display().to_string())].into_iter().flatten().collect();
    let Some(arr) = doc.get_mut("projects").and_then(Item::as_array_mut) else {
        return Err(Error::new(ErrorCode::Usage, format!("{} is not a project (none are listed)", dir.display())));
    };
    let before = arr.len();
    arr.retain(|v| !v.as_str().is_some_and(|p| wanted.iter().any(|w| w == p)));
    if arr.len() == before {
        return Err(Error::new(ErrorCode::Usage, format!("{} is not a project (they are listed under `projects` in nightshift.toml)", dir.display())));
    }
    save(home, &doc)
}

/// The `[[homes]]` entries' names, as written.
fn home_names(doc: &DocumentMut) -> Vec<String> {
    doc.get("homes").and_then(Item::as_array_of_tables).map(|a| a.iter().filter_map(|t| t.get("name").and_then(|v| v.as_str()).map(str::to_string)).collect()).unwrap_or_default()
}

/// Append a home (`[[homes]] name, url`); the URL is checked first, a name in use is an error.
/// Its token is the caller's to put in the keychain.
pub fn add_home(home: &Home, name: &str, url: &str, pin: Option<&str>) -> Result<crate::settings::HomeUrl> {
    if let Some(problem) = crate::settings::home_name_problem(name) {
        return Err(Error::new(ErrorCode::Usage, problem));
    }
    let parsed = crate::settings::HomeUrl::parse(url).map_err(|p| Error::new(ErrorCode::Usage, p))?;
    let mut doc = load(home)?;
    if home_names(&doc).iter().any(|n| n == name) {
        return Err(Error::new(ErrorCode::Usage, format!("a home named \"{name}\" exists already (`nightshiftctl homes remove {name}` first)")));
    }
    let mut table = Table::new();
    table.insert("name", toml_edit::value(name));
    table.insert("url", toml_edit::value(parsed.to_string()));
    if let Some(pin) = pin {
        table.insert("pin", toml_edit::value(pin));
    }
    push_table(&mut doc, "homes", table);
    save(home, &doc)?;
    Ok(parsed)
}

/// Remove a home by name (its history stays on its machine; its token is the caller's to delete).
pub fn remove_home(home: &Home, name: &str) -> Result<()> {
    remove_tables(home, "homes", "name", name, format!("no home named \"{name}\""))
}
